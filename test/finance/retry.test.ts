import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BATCH_FORMAT, parseBatchFile, type ReadRow } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES, FIELD_PATHS } from '../../src/ingest/rules/index.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { retryRound, sameRetryBase } from '../../src/domain/retry-reference.js';
import { candidateUse } from '../../src/report/retry.js';
import { CONTRADICTED_ROUND } from '../../src/domain/retry-reference.js';
import {
  outboxFileName,
  RETRY_COLUMNS,
  retryBase,
  retryReference,
  writeRetryFile,
  writeRetryFileAt,
  writeRetryXlsx,
  type BatchIdentity,
} from '../../src/report/index.js';
import { batchRetrySource, countCancelledRows } from '../../src/store/reports.js';
import type { Database } from '../../src/store/db.js';
import { addBatch, addRows, listDir, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();
const identity = (batchId: string): BatchIdentity => ({
  batchId,
  fileName: 'payouts.csv',
  outboxName: `${batchId}_payouts.csv`,
  sha256: '00'.repeat(32),
  receivedAt: '2026-01-10T12:00:00Z',
});

async function parseWithDefaults(path: string): Promise<{ rows: ReadRow[]; fileErrors: unknown[] }> {
  const rows: ReadRow[] = [];
  const result = await parseBatchFile(path, 'retry.csv', {
    format: DEFAULT_BATCH_FORMAT,
    rules: DEFAULT_VALIDATION_RULES,
    sidecarPath: null,
    onRows: async (chunk) => {
      rows.push(...chunk);
    },
  });
  return { rows, fileErrors: result.fileErrors };
}

async function cancel(db: Database, batchId: string, line: number, payoutId: string): Promise<void> {
  await setRow(db, batchId, line, {
    state: 'CANCELLED',
    serviceStatus: 'CANCELLED',
    payoutId,
    reasonCode: 'CANCELLED',
    reason: 'beneficiary account closed',
  });
}

/** Batch B1 of payouts.csv with one CANCELLED row (payout P-1, P-2, …) for each reference, from line 2. */
async function cancelledBatch(db: Database, references: readonly string[]): Promise<void> {
  await addBatch(db, 'B1', 'payouts.csv');
  await addRows(
    db,
    references.map((r, i) => validRow('B1', i + 2, request(r))),
  );
  for (const i of references.keys()) await cancel(db, 'B1', i + 2, `P-${i + 1}`);
}

const LONG = `L${'x'.repeat(62)}9`; // 64 characters: the limit

describe('fresh references (pure)', () => {
  it('derives rounds from the base and falls back to a short hash form within the limit', () => {
    expect(retryBase('INV-7')).toEqual({ base: 'INV-7', round: 0 });
    expect(retryBase('INV-7-R1')).toEqual({ base: 'INV-7', round: 1 });
    expect(retryBase('INV-7-R12')).toEqual({ base: 'INV-7', round: 12 });
    expect(retryBase('INV-R0')).toEqual({ base: 'INV-R0', round: 0 });
    expect(retryReference('INV-7', 1)).toBe('INV-7-R1');
    expect(retryReference('INV-7', 1, 8)).toBe('INV-7-R1');
    const hashed = retryReference(LONG, 1);
    expect(hashed).toHaveLength(64);
    expect(hashed).toMatch(/^Lx+-H[0-9a-f]{10}-R1$/);
    expect(retryReference(LONG, 1)).toBe(hashed);
    expect(retryReference(LONG, 2)).not.toBe(hashed);
    expect(() => retryReference('INV-7', 1, 7)).toThrowError(expect.objectContaining({ code: 'RETRY_REFERENCE' }));
    expect(outboxFileName('B1_payouts.csv', 'retry')).toBe('B1_payouts.csv.retry.csv');
  });
});

describe('retry rounds of a hashed base (pure)', () => {
  // 65 characters: no round of it fits plainly in 64.
  const BASE = `INV-${'X'.repeat(56)}-0001`;

  it('gives round n the same reference whether derived from the original or from round n-1', () => {
    let chained = BASE;
    for (let n = 1; n <= 12; n++) {
      chained = retryReference(retryBase(chained).base, n);
      const fromOriginal = retryReference(BASE, n);
      expect(chained, `round ${n}`).toBe(fromOriginal);
      expect(Array.from(chained)).toHaveLength(64);
      expect(retryBase(chained).round).toBe(n);
    }
    // Round 10 keeps the hash of the original and one character less of its start.
    const hash = retryReference(BASE, 1).slice(-15, -3); // `-H` and its 10 hex digits
    expect(retryReference(BASE, 10)).toBe(`${BASE.slice(0, 48)}${hash}-R10`);
    expect(retryReference(BASE, 9)).toBe(`${BASE.slice(0, 49)}${hash}-R9`);
  });

  it('gives every spelling of one base one key, and tells another base with the same hash text apart', () => {
    const r1 = retryRound(retryReference(BASE, 1));
    const r10 = retryRound(retryReference(BASE, 10));
    const middle = `M-${'Y'.repeat(58)}`; // rounds 1-99 plain, 100 on hashed
    const plain = retryRound(`${middle}-R1`);
    const hashed = retryRound(retryReference(middle, 100));
    expect(r1?.base).not.toBe(r10?.base);
    expect(r1?.key).toBe(r10?.key);
    expect(sameRetryBase(r1?.base as string, r10?.base as string)).toBe(true);
    expect(hashed?.base).toMatch(/-H[0-9a-f]{10}$/);
    expect(plain?.key).toBe(hashed?.key);
    expect(sameRetryBase(plain?.base as string, hashed?.base as string)).toBe(true);
    expect(retryRound('AAA-H0123456789-R1')?.key).toBe('0123456789');
    expect(sameRetryBase('AAA-H0123456789', 'BBB-H0123456789')).toBe(false);
    expect(retryRound('INV-7')).toBeNull();
  });
});

describe('decide: which round a cancelled row is retried under', () => {
  it('reads a candidate used only by rows never sent as free, any sent-and-live row as retrying, others as spent', () => {
    expect(candidateUse(undefined)).toEqual({ use: 'free' });
    expect(candidateUse(['INVALID', 'DUPLICATE', 'NOT_SUBMITTED'])).toEqual({ use: 'free' });
    for (const state of ['VALIDATED', 'READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID'])
      expect(candidateUse(['INVALID', state]), state).toEqual({ use: 'retrying', state });
    for (const states of [['CANCELLED'], ['REJECTED'], ['INVALID', 'CANCELLED']])
      expect(candidateUse(states), states.join()).toEqual({ use: 'spent' });
  });

  it('hands out again a round whose every row was refused or never submitted, and leaves out one still being read', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'pay.csv');
    await addRows(
      db,
      ['T-1', 'T-2', 'T-3', 'T-4', 'T-5'].map((ref, i) => validRow('B1', i + 2, request(ref))),
    );
    for (let line = 2; line <= 6; line++) await cancel(db, 'B1', line, `P-${line}`);
    // The first retry file dropped and refused: T-1-R1 lost its zeros (INVALID), T-2-R1 let go with the file
    // (NOT_SUBMITTED), T-3-R1 set aside (DUPLICATE); T-4-R1 in a file being read; T-5-R1 sent and cancelled.
    await addBatch(db, 'B2', 'retry.csv');
    await addRows(
      db,
      ['T-1-R1', 'T-2-R1', 'T-3-R1', 'T-4-R1', 'T-5-R1'].map((ref, i) => validRow('B2', i + 2, request(ref))),
    );
    await setRow(db, 'B2', 2, { state: 'INVALID', reasonCode: 'LEADING_ZEROS_LOST' });
    await setRow(db, 'B2', 3, { state: 'NOT_SUBMITTED', reasonCode: 'FILE_REJECTED' });
    await setRow(db, 'B2', 4, { state: 'DUPLICATE', reasonCode: 'DUPLICATE_REFERENCE' });
    await cancel(db, 'B2', 6, 'P-26');

    const r = await writeRetryFileAt(join(dir, 'fresh.csv'), batchRetrySource(db, 'B1'));
    const refs = (await parseWithDefaults(join(dir, 'fresh.csv'))).rows.map((x) => x.merchantReferenceId);
    expect(refs).toEqual(['T-1-R1', 'T-2-R1', 'T-3-R1', 'T-5-R2']);
    expect(r.skipped).toEqual([{ line: 5, merchantReferenceId: 'T-4', retriedAs: 'T-4-R1', state: 'VALIDATED' }]);
  });

  it('leaves out a row whose retry round the payout service contradicts, never offering the round after it', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'pay.csv');
    await addRows(db, [validRow('B1', 2, request('C-1'))]);
    await cancel(db, 'B1', 2, 'P-1');
    // Its first retry, recorded CANCELLED, which the payout service now reports PAID: it may have been paid.
    await addBatch(db, 'B2', 'retry.csv');
    await addRows(db, [validRow('B2', 2, request('C-1-R1'))]);
    await cancel(db, 'B2', 2, 'P-2');
    await setRow(db, 'B2', 2, { serviceNote: 'the payout service now reports PAID for payout P-2, recorded CANCELLED here' });

    const r = await writeRetryFileAt(join(dir, 'contradicted.csv'), batchRetrySource(db, 'B1'));
    expect(r.skipped).toEqual([{ line: 2, merchantReferenceId: 'C-1', retriedAs: 'C-1-R1', state: CONTRADICTED_ROUND }]);
  });
});

describe('retry file', () => {
  it('holds only the cancelled rows, in the input format, with fresh references that pass the default rules', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B0', 'earlier.csv');
    await addBatch(db, 'B1', 'payouts.csv');
    const eur: Partial<PayoutRequest> = { payoutCurrency: 'EUR', payoutAmount: '89.99' };
    await addRows(db, [
      // INV-2-R1 was used by an earlier batch (rejected there): INV-2 must get R2.
      validRow('B0', 2, request('INV-2-R1')),
    ]);
    await addRows(db, [
      validRow('B1', 2, request('INV-1')),
      validRow('B1', 3, request('INV-2', {}, { accountNumber: '0001234560', accountName: 'Reyes, "Ana"' })),
      validRow('B1', 4, request(LONG)),
      validRow('B1', 5, request('INV-4', eur, { accountNumber: 'FR1420041010050500013M02606', bankCode: 'BNPAFRPP' })),
      validRow('B1', 6, request('INV-5')),
    ]);
    await setRow(db, 'B0', 2, { state: 'REJECTED', reasonCode: '2002', reason: 'INVALID_PARAMETER' });
    await setRow(db, 'B1', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-1' });
    await cancel(db, 'B1', 3, 'P-2');
    await cancel(db, 'B1', 4, 'P-3');
    await cancel(db, 'B1', 5, 'P-4');
    await setRow(db, 'B1', 6, { state: 'PENDING', serviceStatus: 'PENDING', payoutId: 'P-5' });

    expect(await countCancelledRows(db, 'B1')).toBe(3);

    const r = await writeRetryFile(dir, identity('B1'), batchRetrySource(db, 'B1'), { bom: true });
    expect(r.path).toBe(join(dir, 'B1_payouts.csv.retry.csv'));
    expect(r.rowCount).toBe(3);
    expect(r.skippedCount).toBe(0);

    const raw = await readFile(r.path as string, 'utf8');
    expect(raw.startsWith(`\uFEFF${FIELD_PATHS.join(',')}\r\n`)).toBe(true);
    // Written exactly: a name the daemon will read back, quoted as CSV and nothing else.
    expect(raw).toContain(`"Reyes, ""Ana"""`);

    const parsed = await parseWithDefaults(r.path as string);
    expect(parsed.fileErrors).toEqual([]);
    expect(parsed.rows.map((x) => x.errors)).toEqual([[], [], []]);
    const refs = parsed.rows.map((x) => x.merchantReferenceId);
    expect(refs[0]).toBe('INV-2-R2');
    expect(refs[1]).toMatch(/^Lx+-H[0-9a-f]{10}-R1$/);
    expect(refs[1]).toHaveLength(64);
    expect(refs[2]).toBe('INV-4-R1');
    // Fresh: no row in the database uses them.
    expect(await db('payouts').whereIn('merchant_reference_id', refs).count({ n: '*' })).toEqual([{ n: 0 }]);
    // The rest of each request is the stored one.
    expect(parsed.rows[0]?.request).toEqual(request('INV-2-R2', {}, { accountNumber: '0001234560', accountName: 'Reyes, "Ana"' }));
    expect(parsed.rows[2]?.request?.beneficiary.accountNumber).toBe('FR1420041010050500013M02606');
    expect(parsed.rows[2]?.request?.payoutAmount).toBe('89.99');
  });

  it('has an .xlsx twin: one sheet, the input columns, accounts and references as text, amounts as exact numbers', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'payouts.csv');
    await addRows(db, [
      validRow('B1', 2, request('000123', {}, { accountNumber: '0012345670000', accountName: 'José Reyes' })),
      validRow('B1', 3, request('INV-2', { payoutCurrency: 'JPY', payoutAmount: '1500' }, { accountNumber: '012180001234567897' })),
      validRow('B1', 4, request('INV-3', { payoutAmount: '1500.05' })),
    ]);
    await cancel(db, 'B1', 2, 'P-1');
    await cancel(db, 'B1', 3, 'P-2');
    await cancel(db, 'B1', 4, 'P-3');
    const csv = await writeRetryFile(dir, identity('B1'), batchRetrySource(db, 'B1'));
    const path = await writeRetryXlsx(csv.path as string, csv.rowCount);
    expect(path).toBe(join(dir, outboxFileName('B1_payouts.csv', 'retry', 'xlsx')));

    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(path);
    // One sheet only: dropped back, the intake reads it without asking which sheet.
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Retry']);
    const ws = wb.worksheets[0] as ExcelJS.Worksheet;
    expect((ws.getRow(1).values as unknown[]).slice(1)).toEqual([...RETRY_COLUMNS]);
    expect(ws.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(ws.rowCount).toBe(4);
    const at = (row: number, field: string): ExcelJS.Cell => ws.getRow(row).getCell(RETRY_COLUMNS.indexOf(field as never) + 1);
    // Every cell but the amount is text, exactly the CSV's; the amount's number reads as the CSV's decimal.
    const records = parse(await readFile(csv.path as string), { bom: true, from_line: 2 }) as string[][];
    expect(records).toHaveLength(3);
    records.forEach((record, i) =>
      RETRY_COLUMNS.forEach((f, j) => {
        const cell = at(i + 2, f);
        if (f === 'payoutAmount') expect(String(cell.value)).toBe(record[j]);
        else expect([cell.type, cell.value], f).toEqual([ExcelJS.ValueType.String, record[j]]);
      }),
    );
    expect(at(2, 'merchantReferenceId').value).toBe('000123-R1');
    expect(at(2, 'beneficiary.accountNumber').value).toBe('0012345670000');
    expect(at(2, 'beneficiary.accountName').value).toBe('José Reyes');
    expect(at(3, 'beneficiary.accountNumber').value).toBe('012180001234567897');
    expect(at(2, 'beneficiary.accountNumber').numFmt).toBe('@');
    // Amounts: numbers whose text is the decimal, shown with the currency's decimals and no separators.
    expect([at(2, 'payoutAmount').type, at(2, 'payoutAmount').value, at(2, 'payoutAmount').numFmt]).toEqual([
      ExcelJS.ValueType.Number,
      1500.5,
      '0.00',
    ]);
    expect([at(3, 'payoutAmount').value, at(3, 'payoutAmount').numFmt]).toEqual([1500, '0']);
    expect(String(at(4, 'payoutAmount').value)).toBe('1500.05');
    // Widths fit the headers (never cut) and the values.
    RETRY_COLUMNS.forEach((h, i) => expect(ws.getColumn(i + 1).width, h).toBeGreaterThan(h.length));
  });

  it('gives the same references when made again, and leaves out rows already being retried', async () => {
    const { db, dir } = await store();
    await cancelledBatch(db, ['INV-1', 'INV-2', 'INV-3-R1']);

    const first = await writeRetryFileAt(join(dir, 'a.csv'), batchRetrySource(db, 'B1'));
    const again = await writeRetryFileAt(join(dir, 'b.csv'), batchRetrySource(db, 'B1'));
    expect(await readFile(join(dir, 'b.csv'), 'utf8')).toBe(await readFile(join(dir, 'a.csv'), 'utf8'));
    expect([first.rowCount, again.rowCount]).toEqual([3, 3]);

    // Finance drops the retry file: INV-1-R1 is now paying, INV-2-R1 was cancelled again, INV-3-R2 paid.
    await addBatch(db, 'B2', 'a.csv');
    await addRows(db, [
      validRow('B2', 2, request('INV-1-R1')),
      validRow('B2', 3, request('INV-2-R1')),
      validRow('B2', 4, request('INV-3-R2')),
    ]);
    await setRow(db, 'B2', 2, { state: 'PENDING', payoutId: 'P-11' });
    await cancel(db, 'B2', 3, 'P-12');
    await setRow(db, 'B2', 4, { state: 'PAID', payoutId: 'P-13' });

    // Made again for B1: INV-1 and INV-3-R1 are left out; INV-2 gets the same R2 that B2's own retry file offers.
    const later = await writeRetryFileAt(join(dir, 'c.csv'), batchRetrySource(db, 'B1'));
    expect(later.skipped).toEqual([
      { line: 2, merchantReferenceId: 'INV-1', retriedAs: 'INV-1-R1', state: 'PENDING' },
      { line: 4, merchantReferenceId: 'INV-3-R1', retriedAs: 'INV-3-R2', state: 'PAID' },
    ]);
    const fromB1 = (await parseWithDefaults(join(dir, 'c.csv'))).rows.map((x) => x.merchantReferenceId);
    const b2 = await writeRetryFileAt(join(dir, 'd.csv'), batchRetrySource(db, 'B2'));
    const fromB2 = (await parseWithDefaults(join(dir, 'd.csv'))).rows.map((x) => x.merchantReferenceId);
    expect(fromB1).toEqual(['INV-2-R2']);
    expect(fromB2).toEqual(['INV-2-R2']);
    expect(b2.rowCount).toBe(1);
  });

  it('escapes formula-like text an older batch stored, so the file is safe to open and the intake refuses the row', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'payouts.csv');
    // What an older build accepted: formula-like text in every text field, and a lone "-" (a placeholder, not a formula).
    const older = request(
      '-INV-1',
      { sender: { firstName: '+Ana', lastName: '-', country: 'PH', idType: 'PASSPORT', idValue: '@P1234567A' } },
      { accountName: '=HYPERLINK("http://e","c")', accountNumber: '\t0001234560', bankCode: '-BOPIPHMM' },
    );
    await addRows(db, [validRow('B1', 2, older), validRow('B1', 3, request('INV-2', {}, { accountNumber: '0001230000' }))]);
    await cancel(db, 'B1', 2, 'P-1');
    await cancel(db, 'B1', 3, 'P-2');

    const r = await writeRetryFileAt(join(dir, 'r.csv'), batchRetrySource(db, 'B1'));
    expect(r.rowCount).toBe(2);
    const raw = await readFile(join(dir, 'r.csv'), 'utf8');
    expect(raw.split('\r\n')[1]).toBe(
      `'-INV-1-R1,USDT,PHP,1500.5,'+Ana,-,PH,PASSPORT,'@P1234567A,"'=HYPERLINK(""http://e"",""c"")",'\t0001234560,'-BOPIPHMM`,
    );

    const parsed = await parseWithDefaults(join(dir, 'r.csv'));
    expect(parsed.fileErrors).toEqual([]);
    const [refused, retried] = parsed.rows;
    expect(refused?.request).toBeNull();
    expect(refused?.errors.map((e) => [e.field, e.code])).toEqual([
      ['merchantReferenceId', 'FORMULA_LIKE_TEXT'],
      ['sender.firstName', 'FORMULA_LIKE_TEXT'],
      ['sender.idValue', 'FORMULA_LIKE_TEXT'],
      ['beneficiary.accountName', 'FORMULA_LIKE_TEXT'],
      ['beneficiary.accountNumber', 'FORMULA_LIKE_TEXT'],
      ['beneficiary.bankCode', 'FORMULA_LIKE_TEXT'],
    ]);
    expect(refused?.errors[3]?.message).toBe(
      `beneficiary.accountName starts with "'" and "=": text a spreadsheet would run as a formula, escaped as a retry file writes it; write the real value, not starting with "="`,
    );
    expect(retried?.errors).toEqual([]);
    expect(retried?.request).toEqual(request('INV-2-R1', {}, { accountNumber: '0001230000' }));
  });

  it('writes no file when no cancelled row needs a retry', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'payouts.csv');
    await addRows(db, [validRow('B1', 2, request('INV-1'))]);
    await setRow(db, 'B1', 2, { state: 'PAID', payoutId: 'P-1' });
    const r = await writeRetryFile(dir, identity('B1'), batchRetrySource(db, 'B1'));
    expect(r).toEqual({ path: null, rowCount: 0, skippedCount: 0, skipped: [], withheldCount: 0, withheld: [] });
    expect((await listDir(dir)).filter((n) => !n.startsWith('state.sqlite'))).toEqual([]);
  });

  it('gives two cancelled rows of one file that map to the same base different references', async () => {
    const { db, dir } = await store();
    await cancelledBatch(db, ['INV-9', 'INV-9-R1']);
    await writeRetryFileAt(join(dir, 'r.csv'), batchRetrySource(db, 'B1'));
    const refs = (await parseWithDefaults(join(dir, 'r.csv'))).rows.map((x) => x.merchantReferenceId);
    expect(refs).toEqual(['INV-9-R2', 'INV-9-R3']);
  });

  it('leaves out a row whose later round, near or far, was sent directly and paid, not offering the round below it', async () => {
    const { db, dir } = await store();
    await cancelledBatch(db, ['X-1', 'X-2', 'X-3', 'X-4']);
    // Sent by finance in a file of their own: X-1-R2 and X-3-R9 paid, X-4-R7 cancelled (no stand); X-2-R2 is in a
    // file still being read (it may be refused).
    await addBatch(db, 'B2', 'by-hand.csv');
    await addRows(db, [validRow('B2', 2, request('X-1-R2')), validRow('B2', 3, request('X-3-R9')), validRow('B2', 4, request('X-4-R7'))]);
    await setRow(db, 'B2', 2, { state: 'PAID', payoutId: 'P-12' });
    await setRow(db, 'B2', 3, { state: 'PAID', payoutId: 'P-39' });
    await setRow(db, 'B2', 4, { state: 'CANCELLED', payoutId: 'P-47' });
    await addBatch(db, 'B3', 'reading.csv');
    await addRows(db, [validRow('B3', 2, request('X-2-R2'))]);
    await db('batches').where({ id: 'B3' }).update({ state: 'VALIDATING' });
    const r = await writeRetryFileAt(join(dir, 'r.csv'), batchRetrySource(db, 'B1'));
    expect(r.skipped).toEqual([
      { line: 2, merchantReferenceId: 'X-1', retriedAs: 'X-1-R2', state: 'PAID', later: true },
      { line: 4, merchantReferenceId: 'X-3', retriedAs: 'X-3-R9', state: 'PAID', later: true },
    ]);
    expect((await parseWithDefaults(join(dir, 'r.csv'))).rows.map((x) => x.merchantReferenceId)).toEqual(['X-2-R1', 'X-4-R1']);
  });

  it('leaves out a round of a reference no payout has while a later round stands: it may be its retry sent directly', async () => {
    const { db, dir } = await store();
    // REV-R1 of finance's own (no REV anywhere): acceptance would take REV-R2, but REV-R3, paid, may be its retry.
    await cancelledBatch(db, ['REV-R1']);
    await addBatch(db, 'B2', 'by-hand.csv');
    await addRows(db, [validRow('B2', 2, request('REV-R3'))]);
    await setRow(db, 'B2', 2, { state: 'PAID', payoutId: 'P-23' });
    const r = await writeRetryFileAt(join(dir, 'r.csv'), batchRetrySource(db, 'B1'));
    expect(r).toMatchObject({
      path: null,
      skipped: [{ line: 2, merchantReferenceId: 'REV-R1', retriedAs: 'REV-R3', state: 'PAID', later: true }],
    });
  });

  it('pages through many cancelled rows in line order', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'payouts.csv');
    const n = 1234;
    await addRows(
      db,
      Array.from({ length: n }, (_, i) => validRow('B1', i + 2, request(`BULK-${String(i).padStart(6, '0')}`))),
    );
    await db('payouts').update({ state: 'CANCELLED', payout_id: db.raw(`'P-' || line`) });
    // A reference used by a row that was never sent (INVALID) is given out again; one sent and cancelled is not.
    await addBatch(db, 'B0', 'earlier.csv');
    await addRows(db, [validRow('B0', 2, request('BULK-000007-R1')), validRow('B0', 3, request('BULK-000008-R1'))]);
    await setRow(db, 'B0', 2, { state: 'INVALID' });
    await setRow(db, 'B0', 3, { state: 'CANCELLED' });
    const r = await writeRetryFileAt(join(dir, 'bulk.csv'), batchRetrySource(db, 'B1'));
    expect(r.rowCount).toBe(n);
    const parsed = await parseWithDefaults(join(dir, 'bulk.csv'));
    expect(parsed.rows.filter((x) => x.errors.length > 0)).toEqual([]);
    expect(parsed.rows[0]?.merchantReferenceId).toBe('BULK-000000-R1');
    expect(parsed.rows[7]?.merchantReferenceId).toBe('BULK-000007-R1');
    expect(parsed.rows[8]?.merchantReferenceId).toBe('BULK-000008-R2');
    expect(parsed.rows[n - 1]?.merchantReferenceId).toBe(`BULK-${String(n - 1).padStart(6, '0')}-R1`);
  });
});

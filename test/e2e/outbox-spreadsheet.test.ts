/**
 * Every outbox file is safe to open: the real `payoutd run` gets a batch
 * with formula-like text in every text column (refused, row by row) and two
 * valid rows, one of which the sandbox cancels, plus a batch an older build
 * accepted (seeded through the store) whose cancelled row holds
 * formula-like text; then the upload of the dropped file goes on after its
 * batch is complete, with more formula-like rows (a notice and a remainder
 * of the sender's own lines). Every CSV the outbox then holds (acks,
 * results, summaries, retry files, the notice and the remainder, a
 * reconciliation report) is opened with
 * LibreOffice headless, with the import options a user gets by default
 * (formulas evaluated), and no cell of any of them is a formula; neither is
 * any cell of the .xlsx files payoutd wrote (the notice's and the
 * remainder's twins included). Those .xlsx files (acks,
 * results, summaries, retry files) opened and saved again by LibreOffice keep
 * account numbers with their leading zeros as text, amounts as numbers and
 * times as date cells; the ack starts with its totals. Skipped where `soffice` is
 * absent (Debian: `apt-get install libreoffice-calc-nogui`).
 */
import { createHash } from 'node:crypto';
import { appendFile, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { encodeRequest, valuesOfRequest } from '../../src/domain/request-values.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { spreadsheetSafeCell } from '../../src/report/index.js';
import { insertBatch, receivedBatch } from '../../src/store/batches.js';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/store/db.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { makeRows, toCsv, type BatchRow } from './batch-files.js';
import { readOutboxCsv, startE2e, waitFor, type E2e } from './harness.js';
import { CSV_IMPORT, SOFFICE, SOFFICE_SKIP_REASON as SKIP_REASON, convertWithLibreOffice } from './libreoffice.js';

if (!SOFFICE) console.warn(`outbox-spreadsheet.test.ts skipped: ${SKIP_REASON}`);

const HYPERLINK = '=HYPERLINK("http://e","c")';
const OLDER_BATCH = 'B-OLDER-1';

/** A dropped row per text column, each starting with a formula trigger; the references say which. */
function formulaRows(): BatchRow[] {
  const [base] = makeRows('FX', 1) as [BatchRow];
  const bad: [string, Partial<BatchRow>][] = [
    ['FX-REF', { merchantReferenceId: '=FX-REF' }],
    ['FX-DED', { deductionCurrency: '+USDT' as BatchRow['deductionCurrency'] }],
    ['FX-CUR', { payoutCurrency: '@PHP' }],
    ['FX-FIRST', { firstName: '-Ana' }],
    ['FX-LAST-TAB', { lastName: '\tSantos' }],
    ['FX-LAST-CR', { lastName: '\r=1+1' }],
    ['FX-COUNTRY', { country: '=PH' }],
    ['FX-IDTYPE', { idType: '+PASSPORT' }],
    ['FX-IDVALUE', { idValue: '@P1234567A' }],
    ['FX-NAME', { accountName: HYPERLINK }],
    ['FX-NAME-SPACE', { accountName: ' =1+1' }],
    ['FX-ACCOUNT', { accountNumber: '-1234567890' }],
    ['FX-BANK', { bankCode: '=BOPIPHMM' }],
  ];
  return bad.map(([ref, over]) => ({ ...base, merchantReferenceId: ref, ...over }));
}

/** Two valid rows: one paid (its lastName the accepted "-" placeholder), one the sandbox cancels (account ends in 0000). */
function validRows(): BatchRow[] {
  const [paid, cancelled] = makeRows('FX-OK', 2, { cancelEvery: 2 }) as [BatchRow, BatchRow];
  return [{ ...paid, lastName: '-' }, cancelled];
}

/** What an older build accepted: formula-like text in every text field of a row to a closed account. */
const OLDER_REQUEST: PayoutRequest = {
  merchantReferenceId: '-OLD-1',
  deductionCurrency: 'USDT',
  payoutCurrency: 'PHP',
  payoutAmount: '250.5',
  sender: { firstName: '+Ana', lastName: '@Cruz', country: 'PH', idType: 'PASSPORT', idValue: '-P1234567A' },
  beneficiary: { accountName: HYPERLINK, accountNumber: '0012340000', bankCode: 'BOPIPHMM' },
};

/** Seeds the daemon's database with a batch accepted earlier, its one row READY to be sent. */
async function seedOlderBatch(e2e: E2e): Promise<void> {
  const db = openDatabase({
    client: 'sqlite',
    filename: join(e2e.stateDir, 'payoutd.sqlite'),
    poolMax: 1,
    busyTimeoutMs: 5000,
    synchronous: 'FULL',
  });
  try {
    await migrateToLatest(db);
    const now = Date.now();
    // The file as it was claimed then (the daemon holds a batch whose claimed file changed or is gone).
    const storedPath = join(e2e.stateDir, 'older.csv');
    const content = `${FIELD_PATHS.join(',')}\n${valuesOfRequest(OLDER_REQUEST)
      .map((v) => `"${v.replaceAll('"', '""')}"`)
      .join(',')}\n`;
    await writeFile(storedPath, content);
    const st = await stat(storedPath);
    const file = { id: OLDER_BATCH, fileName: 'older.csv', storedPath, controlPath: null, doneMarker: false };
    const sha256 = createHash('sha256').update(content).digest('hex');
    await insertBatch(db, {
      ...receivedBatch({ ...file, sha256, size: st.size, mtimeMs: Math.trunc(st.mtimeMs) }, now),
      state: 'ACTIVE',
      delimiter: ',',
      acceptedAt: now,
    });
    const row = {
      batchId: OLDER_BATCH,
      line: 2,
      merchantReferenceId: OLDER_REQUEST.merchantReferenceId,
      state: 'READY' as const,
      requestValues: encodeRequest(OLDER_REQUEST),
      payoutCurrency: null,
      payoutAmount: null,
      deductionCurrency: null,
      reasonCode: null,
      reason: null,
    };
    await db.transaction((trx) => insertRows(trx, [row], now));
  } finally {
    await closeDatabase(db);
  }
}

type Cell = ExcelJS.Cell;

function isFormula(cell: Cell): boolean {
  const v = cell.value as unknown;
  const formulaValue = typeof v === 'object' && v !== null && ('formula' in v || 'sharedFormula' in v);
  return cell.type === ExcelJS.ValueType.Formula || formulaValue;
}

/** Every cell of every sheet of a workbook: `sheet!A1` and the cell. */
async function cellsOf(path: string): Promise<{ at: string; cell: Cell }[]> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const out: { at: string; cell: Cell }[] = [];
  wb.eachSheet((ws) =>
    ws.eachRow({ includeEmpty: false }, (row) => row.eachCell((cell) => out.push({ at: `${ws.name}!${cell.address}`, cell }))),
  );
  return out;
}

/** The rows of a sheet under its header: each cell's value and type by header. */
async function sheetRows(
  path: string,
  name: string,
): Promise<{ values: Record<string, unknown>; types: Record<string, ExcelJS.ValueType> }[]> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const ws = wb.getWorksheet(name);
  if (!ws) throw new Error(`${basename(path)} has no sheet ${name}`);
  const headers = (ws.getRow(1).values as unknown[]).map(String);
  const out: { values: Record<string, unknown>; types: Record<string, ExcelJS.ValueType> }[] = [];
  ws.eachRow((row, n) => {
    if (n === 1) return;
    const values: Record<string, unknown> = {};
    const types: Record<string, ExcelJS.ValueType> = {};
    row.eachCell((cell, col) => {
      values[headers[col] as string] = cell.value;
      types[headers[col] as string] = cell.type;
    });
    out.push({ values, types });
  });
  return out;
}

describe('e2e: every outbox file is safe to open in a spreadsheet', () => {
  it.skipIf(!SOFFICE)(
    `holds no cell LibreOffice runs as a formula${SOFFICE ? '' : ` (skipped: ${SKIP_REASON})`}`,
    async () => {
      const e2e = await startE2e({ config: { batch: { onInvalidRows: 'skip-rows' }, outbox: { xlsx: true, retryFiles: true } } });
      await seedOlderBatch(e2e);
      await e2e.startDaemon();
      const bad = formulaRows();
      const good = validRows();
      await e2e.drop('formula.csv', toCsv([...bad, ...good]));

      // The dropped batch: every formula-like row refused, naming its column; the valid rows paid or cancelled.
      const dropped = await e2e.waitForBatch('formula.csv', ['COMPLETE'], 30_000);
      const ack = await e2e.waitForOutbox(dropped, 'ack');
      for (const row of bad) {
        // The ack shows a reference as a spreadsheet-safe cell.
        const verdict = ack.rows.find((r) => r['merchant_reference_id'] === spreadsheetSafeCell(row.merchantReferenceId));
        expect(verdict?.['verdict'], row.merchantReferenceId).toBe('REJECTED');
        expect(verdict?.['reason'], row.merchantReferenceId).toMatch(/^'?FORMULA_LIKE_TEXT \[column [A-Z]+ "[a-zA-Z.]+"\]: /);
      }
      expect(ack.rows.find((r) => r['merchant_reference_id'] === "'=FX-REF")?.['reason']).toContain(
        'FORMULA_LIKE_TEXT [column A "merchantReferenceId"]: merchantReferenceId starts with "=", which a spreadsheet would run as a formula; remove the leading "="',
      );
      expect(ack.rows.find((r) => r['merchant_reference_id'] === 'FX-NAME')?.['reason']).toContain(
        'FORMULA_LIKE_TEXT [column J "beneficiary.accountName"]: beneficiary.accountName starts with "="',
      );
      for (const row of good)
        expect(ack.rows.find((r) => r['merchant_reference_id'] === row.merchantReferenceId)?.['verdict']).toBe('ACCEPTED');

      // The older batch: its row was sent, cancelled, and offered again in a retry file, escaped.
      const older = await e2e.waitForBatch('older.csv', ['COMPLETE'], 30_000);
      const olderRetry = join(e2e.outbox, `${older.id}_older.csv.retry.csv`);
      await waitFor(async () => (await e2e.outboxNames()).includes(basename(olderRetry)), 'the older batch retry file', 15_000);
      await waitFor(async () => (await e2e.outboxNames()).includes(`${dropped.id}_formula.csv.retry.csv`), 'the retry file', 15_000);
      const retryText = await readFile(olderRetry, 'utf8');
      expect(retryText).toContain(`"'=HYPERLINK(""http://e"",""c"")"`);
      expect(
        e2e
          .ledger()
          .map((p) => [p.merchantReferenceId, p.status])
          .sort(),
      ).toEqual(
        [
          ['-OLD-1', 'CANCELLED'],
          [good[0]?.merchantReferenceId, 'PAID'],
          [good[1]?.merchantReferenceId, 'CANCELLED'],
        ].sort(),
      );

      // Dropped back, the escaped row is refused with the formula reason: clearly not paid.
      await e2e.drop('older-retry.csv', await readFile(olderRetry));
      const again = await e2e.waitForBatch('older-retry.csv', ['COMPLETE', 'REJECTED'], 30_000);
      const againAck = await e2e.waitForOutbox(again, 'ack');
      const refused = againAck.rows.find((r) => r['line'] === '2');
      expect(refused?.['verdict']).toBe('REJECTED');
      expect(refused?.['reason']).toContain('FORMULA_LIKE_TEXT [column J "beneficiary.accountName"]: ');
      await e2e.waitForOutbox(again, 'result');
      expect(e2e.ledger()).toHaveLength(3);

      // The upload of the dropped file goes on after its batch is complete: the later rows, formula-like text and all,
      // come back in a remainder of the sender's own lines, beside a notice.
      const claimed = join(e2e.stateDir, 'claimed');
      const stored = join(claimed, (await readdir(claimed)).find((n) => n.endsWith('__formula.csv')) as string);
      const later = formulaRows().map((r) => ({ ...r, merchantReferenceId: r.merchantReferenceId.replace('FX-', 'FY-') }));
      await appendFile(stored, toCsv(later).slice(toCsv([]).length));
      const remainder = join(e2e.outbox, `${dropped.id}_formula.csv.remainder.csv`);
      // The remainder is written first, then the notice.
      await waitFor(async () => (await e2e.outboxNames()).includes(`${dropped.id}_formula.csv.upload-continued.csv`), 'the notice', 20_000);
      expect(await e2e.outboxNames()).toContain(basename(remainder));
      expect(await readFile(remainder, 'utf8')).toContain(`"'=HYPERLINK(""http://e"",""c"")"`);

      // A reconciliation report of the day into the outbox too.
      const report = await e2e.cli([
        'report',
        '--since',
        new Date().toISOString().slice(0, 10),
        '--out',
        join(e2e.outbox, 'reconciliation.csv'),
      ]);
      expect(report.code, report.stderr).toBe(0);

      const names = await e2e.outboxNames();
      const csvs = names.filter((n) => n.endsWith('.csv')).map((n) => join(e2e.outbox, n));
      const xlsxs = names.filter((n) => n.endsWith('.xlsx')).map((n) => join(e2e.outbox, n));
      for (const kind of ['.ack.csv', '.result.csv', '.summary.csv', '.retry.csv'])
        expect(csvs.filter((p) => p.endsWith(kind)).length, kind).toBeGreaterThanOrEqual(2);
      for (const kind of ['.upload-continued.csv', '.remainder.csv']) expect(csvs.filter((p) => p.endsWith(kind)).length, kind).toBe(1);
      expect(csvs.some((p) => basename(p).startsWith('reconciliation'))).toBe(true);
      for (const kind of ['.ack.xlsx', '.result.xlsx', '.summary.xlsx', '.retry.xlsx'])
        expect(xlsxs.filter((p) => p.endsWith(kind)).length, kind).toBeGreaterThanOrEqual(2);
      for (const kind of ['.upload-continued.xlsx', '.remainder.xlsx']) expect(xlsxs.filter((p) => p.endsWith(kind)).length, kind).toBe(1);
      // The ack starts with its totals per currency and the verdict.
      expect(ack.totals.map((t) => t['reason']).join('\n')).toMatch(/^PHP: \d+ rows, [\d.]+ \(accepted 2 rows, .*Batch PARTLY_ACCEPTED: /m);
      for (const path of csvs) expect((await readOutboxCsv(path)).bom, path).toBe(true);

      const work = await mkdtemp(join(tmpdir(), 'payoutd-soffice-'));
      try {
        // A canary: the same text unescaped must come out as a formula, or the check below proves nothing.
        const canary = join(work, 'canary.csv');
        await writeFile(canary, `\uFEFFname\r\n"${HYPERLINK.replaceAll('"', '""')}"\r\n`);
        const converted = join(work, 'out');
        await convertWithLibreOffice([canary, ...csvs], 'xlsx', converted, join(work, 'profile'), CSV_IMPORT);
        const canaryCells = await cellsOf(join(converted, 'canary.xlsx'));
        expect(canaryCells.filter((c) => isFormula(c.cell)).map((c) => c.at)).toEqual(['canary!A2']);

        const formulas: string[] = [];
        let cells = 0;
        for (const csv of csvs) {
          const book = join(converted, basename(csv).replace(/\.csv$/, '.xlsx'));
          const found = await cellsOf(book);
          expect(found.length, `${basename(csv)} converted`).toBeGreaterThan(0);
          cells += found.length;
          for (const c of found) if (isFormula(c.cell)) formulas.push(`${basename(csv)} ${c.at}: ${JSON.stringify(c.cell.value)}`);
        }
        for (const xlsx of xlsxs) {
          for (const c of await cellsOf(xlsx))
            if (isFormula(c.cell)) formulas.push(`${basename(xlsx)} ${c.at}: ${JSON.stringify(c.cell.value)}`);
        }
        expect(formulas).toEqual([]);
        expect(cells).toBeGreaterThan(100);
        // The .xlsx files opened and saved by LibreOffice: accounts keep their leading zeros (text cells), amounts
        // stay numbers, times are date cells, and the retry .xlsx keeps the input columns.
        const resaved = join(work, 'resaved');
        await convertWithLibreOffice(xlsxs, 'xlsx', resaved, join(work, 'profile'));
        const prefix = `${dropped.id}_formula.csv`;
        const [paidRow, cancelledRow] = good as [BatchRow, BatchRow];
        const result = await sheetRows(join(resaved, `${prefix}.result.xlsx`), 'Result');
        const paid = result.find((r) => r.values['merchant_reference_id'] === paidRow.merchantReferenceId);
        expect(paidRow.accountNumber).toMatch(/^00/);
        expect(paid?.values['beneficiary_account_number']).toBe(paidRow.accountNumber);
        expect(paid?.types['beneficiary_account_number']).toBe(ExcelJS.ValueType.String);
        expect(paid?.types['payout_amount']).toBe(ExcelJS.ValueType.Number);
        expect(paid?.types['complete_time (UTC)']).toBe(ExcelJS.ValueType.Date);
        const retryRows = await sheetRows(join(resaved, `${prefix}.retry.xlsx`), 'Retry');
        expect(retryRows.map((r) => r.values['beneficiary.accountNumber'])).toEqual([cancelledRow.accountNumber]);
        expect(retryRows.map((r) => r.values['merchantReferenceId'])).toEqual([`${cancelledRow.merchantReferenceId}-R1`]);
        const ackRows = await sheetRows(join(resaved, `${prefix}.ack.xlsx`), 'Ack');
        expect(ackRows[0]?.values['verdict']).toBe('TOTAL');
        expect(ackRows.filter((r) => r.values['verdict'] === 'ACCEPTED')).toHaveLength(2);
        expect(await sheetRows(join(resaved, `${prefix}.summary.xlsx`), 'Summary')).not.toHaveLength(0);

        // The escaped text is there, as text.
        const retryBook = await cellsOf(join(converted, basename(olderRetry).replace(/\.csv$/, '.xlsx')));
        expect(retryBook.map((c) => c.cell.value)).toContain(`'${HYPERLINK}`);
        const remainderBook = await cellsOf(join(converted, basename(remainder).replace(/\.csv$/, '.xlsx')));
        expect(remainderBook.map((c) => c.cell.value)).toContain(`'${HYPERLINK}`);
        // The remainder's own .xlsx twin holds the escaped text as text too.
        const remainderTwin = await cellsOf(remainder.replace(/\.csv$/, '.xlsx'));
        expect(remainderTwin.map((c) => c.cell.value)).toContain(`'${HYPERLINK}`);
      } finally {
        await rm(work, { recursive: true, force: true });
      }
    },
    420_000,
  );
});

/**
 * 100,000 created payouts through the reconciliation report (CSV, totals,
 * .xlsx): the rows are read page by page, bytes reach the disk before the
 * last row is read, and the totals are exact. No time assertions.
 */
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse';
import ExcelJS from 'exceljs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  RECONCILIATION_COLUMNS,
  writeReconciliationReport,
  writeReconciliationXlsx,
  type ReconciliationRow,
} from '../../src/report/index.js';
import { payoutsCreatedBetween } from '../../src/store/reports.js';
import { closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { T0, addBatch, addRows, request, validRow } from './helpers.js';
const ROWS = 100_000;
const PAGE = 5000;

/** ROWS created payouts: amounts 0.01 .. 1000.00 cycling, every 10th CANCELLED, creation times spread over ROWS ms. */
async function fill(db: Database): Promise<void> {
  await addBatch(db, 'BIG', 'big.csv');
  const rows = Array.from({ length: ROWS }, (_, i) => validRow('BIG', i + 2, request(`BIG-${String(i).padStart(9, '0')}`)));
  await addRows(db, rows);
  await db.raw(
    `UPDATE payouts SET
       payout_amount = ((line % 100000) / 100) || '.' || substr('0' || (line % 100), -2),
       payout_id = 'P-' || line,
       state = CASE WHEN line % 10 = 0 THEN 'CANCELLED' ELSE 'PAID' END,
       service_status = CASE WHEN line % 10 = 0 THEN 'CANCELLED' ELSE 'PAID' END,
       deduction_amount = '0.000001', total_fee = '0.5', fee_currency = 'USDT', rate = '56.12',
       created_at_ms = ? + (? - line)`,
    [T0, ROWS + 2],
  );
}

/** The exact expected PAID payout total, summed as integers of cents. */
async function expectedTotals(db: Database): Promise<{ paidCents: bigint; paidRows: number }> {
  let paidCents = 0n;
  let paidRows = 0;
  for (let line = 2; line < ROWS + 2; line++) {
    if (line % 10 === 0) continue;
    paidRows += 1;
    paidCents += BigInt(Math.floor((line % 100000) / 100)) * 100n + BigInt(line % 100);
  }
  expect(await db('payouts').count({ n: '*' })).toEqual([{ n: ROWS }]);
  return { paidCents, paidRows };
}

const centsText = (cents: bigint): string => {
  const whole = cents / 100n;
  const frac = cents % 100n;
  return frac === 0n ? String(whole) : `${whole}.${String(frac).padStart(2, '0').replace(/0$/, '')}`;
};

/** Wraps the store cursor: counts rows and, halfway, records the bytes already committed to the temp file. */
async function* watched(rows: AsyncIterable<ReconciliationRow>, dir: string, seen: { rows: number; tempBytesHalfway: number }) {
  for await (const r of rows) {
    seen.rows += 1;
    if (seen.rows === ROWS / 2) {
      const temp = (await readdir(dir)).find((n) => n.startsWith('.') && n.endsWith('.tmp'));
      seen.tempBytesHalfway = temp ? (await stat(join(dir, temp))).size : 0;
    }
    yield r;
  }
}

describe('reconciliation of 100,000 payouts', () => {
  // One database for both tests: filling it is the slow part.
  let dir = '';
  let db: Database;
  let failed = false;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-finance-stream-'));
    db = openDatabase({ client: 'sqlite', filename: join(dir, 'state.sqlite'), poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
    await migrateToLatest(db);
    await fill(db);
  });
  afterEach((ctx) => {
    failed ||= ctx.task.result?.state === 'fail';
  });
  afterAll(async () => {
    await closeDatabase(db);
    if (failed) console.error(`kept temp dir of failed test: ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  });

  it('streams the CSV page by page with exact totals', async () => {
    const { paidCents, paidRows } = await expectedTotals(db);

    let selects = 0;
    const onQuery = (q: { sql: string }): void => {
      if (/^select/i.test(q.sql)) selects += 1;
    };
    db.on('query', onQuery);
    const seen = { rows: 0, tempBytesHalfway: 0 };
    const path = join(dir, 'rec.csv');
    const files = await writeReconciliationReport(path, watched(payoutsCreatedBetween(db, T0, T0 + ROWS + 2, PAGE), dir, seen));
    db.off('query', onQuery);

    expect(seen.rows).toBe(ROWS);
    expect(selects).toBe(ROWS / PAGE + 1); // full pages, then the short one that ends the read
    expect(seen.tempBytesHalfway).toBeGreaterThan(0); // written while rows were still being read

    // Read back streaming: count rows, check creation order (descending line numbers here).
    let count = 0;
    let outOfOrder = 0;
    let lastLine = Number.POSITIVE_INFINITY;
    const lineCol = RECONCILIATION_COLUMNS.indexOf('line');
    const parser = createReadStream(path).pipe(parse({ bom: true, from_line: 2 }));
    for await (const record of parser as AsyncIterable<string[]>) {
      const line = Number.parseInt(record[lineCol] ?? '', 10);
      if (!(line < lastLine)) outOfOrder += 1;
      lastLine = line;
      count += 1;
    }
    expect({ count, outOfOrder }).toEqual({ count: ROWS, outOfOrder: 0 });

    const paid = files.summary.rows.find((r) => r.status === 'PAID' && r.measure === 'payout_amount');
    expect(paid).toMatchObject({ currency: 'PHP', rowCount: paidRows, amount: centsText(paidCents), rowsNotSummed: 0 });
    const cancelledDeduction = files.summary.rows.find((r) => r.status === 'CANCELLED' && r.measure === 'deduction_amount');
    expect(cancelledDeduction).toMatchObject({ rowCount: ROWS / 10, amount: '0.01' });
    expect(files.summary.statusCounts).toEqual({ PAID: ROWS - ROWS / 10, CANCELLED: ROWS / 10 });
  });

  it('streams the .xlsx the same way', async () => {
    // Rows made on the fly (the database cursor is the CSV test's subject): the writer must pull them lazily.
    async function* made(): AsyncGenerator<ReconciliationRow> {
      for (let i = 0; i < ROWS; i++) {
        const line = ROWS + 1 - i;
        yield {
          batchId: 'BIG',
          fileName: 'big.csv',
          line,
          merchantReferenceId: `BIG-${String(line - 2).padStart(9, '0')}`,
          state: line % 10 === 0 ? 'CANCELLED' : 'PAID',
          serviceStatus: null,
          payoutId: `P-${line}`,
          payoutCurrency: 'PHP',
          payoutAmount: `${Math.floor((line % 100000) / 100)}.${String(line % 100).padStart(2, '0')}`,
          deductionCurrency: 'USDT',
          deductionAmount: '0.000001',
          rate: '56.12',
          totalFee: '0.5',
          feeCurrency: 'USDT',
          createdAtMs: T0 + i,
          createTime: null,
          completeTime: null,
          reasonCode: null,
          reason: null,
        };
      }
    }
    const { paidCents } = await expectedTotals(db);
    const seen = { rows: 0, tempBytesHalfway: 0 };
    const path = join(dir, 'rec.xlsx');
    const r = await writeReconciliationXlsx(path, watched(made(), dir, seen));
    expect(seen.rows).toBe(ROWS);
    expect(seen.tempBytesHalfway).toBeGreaterThan(0);
    expect(r.summary.rows.find((x) => x.status === 'PAID' && x.measure === 'payout_amount')?.amount).toBe(centsText(paidCents));

    // Read back with the streaming reader: row count of the first sheet, typed cells on a sample row.
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(path, { worksheets: 'emit', sharedStrings: 'cache', styles: 'cache' });
    let sheets = 0;
    let rows = 0;
    for await (const ws of reader) {
      sheets += 1;
      if (sheets > 1) continue;
      for await (const row of ws as AsyncIterable<ExcelJS.Row>) {
        rows += 1;
        if (row.number === 2) {
          expect(row.getCell(RECONCILIATION_COLUMNS.indexOf('merchant_reference_id') + 1).value).toBe(
            `BIG-${String(ROWS - 1).padStart(9, '0')}`,
          );
          expect(typeof row.getCell(RECONCILIATION_COLUMNS.indexOf('payout_amount') + 1).value).toBe('number');
        }
      }
    }
    expect(sheets).toBe(2);
    expect(rows).toBe(ROWS + 1);
  });
});

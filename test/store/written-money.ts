/**
 * The money cells a row keeps only where they were written otherwise than
 * its request has them (src/store/request-fields.ts), checked on a real
 * database of either engine (SQLite in test/store, PostgreSQL in
 * test/postgres): the result files' reader and the reconciliation report's
 * show the written text where the row keeps one, the request's value where
 * it keeps none (the amounts by state of status files and events add them up), and a row an earlier build stored with every cell kept as
 * it was.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { decimalText } from '../../src/domain/money.js';
import type { ReadyMoney } from '../../src/domain/ready-money.js';
import { getBatch, type BatchRecord } from '../../src/store/batches.js';
import { amountsByState } from '../../src/store/counts.js';
import { readyMoneyOf } from '../../src/store/request-fields.js';
import type { Database } from '../../src/store/db.js';
import type { PayoutRow } from '../../src/store/payouts.js';
import { payoutsCreatedBetween } from '../../src/store/reports.js';
import type { WrittenMoneyField } from '../../src/store/request-fields.js';
import { resultRowPages } from '../../src/store/results.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';

const BATCH = 'WM';
const CREATED_AT = 1_000;

/** Each row: its request, the cells it keeps, and what every reader must show. */
const CASES = [
  {
    why: 'written as the request has them: nothing kept',
    request: request('WM-1', { payoutAmount: '152000' }),
    kept: { payoutCurrency: null, payoutAmount: null, deductionCurrency: null },
    shown: { payoutCurrency: 'PHP', payoutAmount: '152000', deductionCurrency: 'USDT' },
  },
  {
    why: 'an amount written with a trailing zero the request drops: kept',
    request: request('WM-2', { payoutAmount: '1001.5' }),
    kept: { payoutCurrency: null, payoutAmount: '1001.50', deductionCurrency: null },
    shown: { payoutCurrency: 'PHP', payoutAmount: '1001.50', deductionCurrency: 'USDT' },
  },
  {
    why: 'stored by an earlier build, every cell kept',
    request: request('WM-3', { payoutAmount: '13', payoutCurrency: 'EUR' }),
    kept: { payoutCurrency: 'EUR', payoutAmount: '13.00', deductionCurrency: 'USDT' },
    shown: { payoutCurrency: 'EUR', payoutAmount: '13.00', deductionCurrency: 'USDT' },
  },
] as const;

/** The money cells a reader shows for a row (both readers' rows have them under the same names). */
function moneyOf(r: Pick<PayoutRow, WrittenMoneyField>): Pick<PayoutRow, WrittenMoneyField> {
  return { payoutCurrency: r.payoutCurrency, payoutAmount: r.payoutAmount, deductionCurrency: r.deductionCurrency };
}

/**
 * The ack's one read of the rows: its totals add up the cells as written, and the READY rows' money the gates
 * decide on is the requests' own, as the gates' own reading of the store has it.
 */
async function checkAckMoney(db: Database): Promise<void> {
  // The last row refused (a duplicate reference): in the ack's totals, not in what is to be sent.
  await db('payouts')
    .where({ batch_id: BATCH })
    .update({ state: db.raw("CASE WHEN line = 4 THEN 'DUPLICATE' ELSE 'READY' END") });
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-ack-money-'));
  try {
    const batch = (await getBatch(db, BATCH)) as BatchRecord;
    const draft = await new BatchOutbox(db, dir, false).draftAck(batch);
    const pairs = (m: ReadyMoney | null): unknown[] =>
      (m?.entries() ?? []).map((p) => [p.deductionCurrency, p.payoutCurrency, decimalText(p.total), p.rows, p.largest]);
    expect(pairs(draft.ready)).toEqual([['USDT', 'PHP', '153001.5', 2, '152000']]);
    expect(pairs(draft.ready)).toEqual(pairs(await readyMoneyOf(db, BATCH)));
    const ack = await readFile(await draft.write(batch), 'utf8');
    await draft.discard();
    // Per currency as written: 152000 + 1001.50 PHP, 13.00 EUR.
    expect(ack).toMatch(/EUR: 1 row, 13\.00\b/);
    expect(ack).toMatch(/PHP: 2 rows, 153001\.50\b/);
    expect((await readdir(dir)).filter((name) => name.startsWith('.'))).toEqual([]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** On a database at the latest migration, with no batches yet. */
export async function checkMoneyAsWritten(db: Database): Promise<void> {
  await addBatch(db, BATCH, 'wm.csv');
  await addRows(
    db,
    CASES.map((c, i) => validRow(BATCH, i + 2, c.request, c.kept)),
  );
  await checkAckMoney(db);

  // Created, so the reconciliation report lists them.
  await db('payouts')
    .where({ batch_id: BATCH })
    .update({ state: 'PAID', payout_id: db.raw("'P-' || line"), created_at_ms: CREATED_AT });

  // The status files' and events' amounts by state: every row's money, its request's where no cell was kept.
  expect(await amountsByState(db, BATCH)).toEqual({ PAID: { EUR: '13', PHP: '153001.5' } });

  const shown = CASES.map((c) => c.shown);
  const inResultFiles = [];
  for await (const page of resultRowPages(db, BATCH)) inResultFiles.push(...page);
  expect(inResultFiles.map(moneyOf)).toEqual(shown);

  const inReport = [];
  for await (const r of payoutsCreatedBetween(db, CREATED_AT, CREATED_AT + 1)) inReport.push(r);
  expect(inReport.map((r) => r.merchantReferenceId)).toEqual(CASES.map((c) => c.request.merchantReferenceId));
  expect(inReport.map(moneyOf)).toEqual(shown);
  // The rest of each reported row is still the row's own.
  expect(inReport.map((r) => [r.fileName, r.payoutId, r.state])).toEqual(CASES.map((_, i) => ['wm.csv', `P-${i + 2}`, 'PAID']));

  // The service's record names the currency of its deduction amount: shown where it is another than the row's.
  await db('payouts').where({ batch_id: BATCH, line: 2 }).update({ service_deduction_currency: 'USDC' });
  await db('payouts').where({ batch_id: BATCH, line: 3 }).update({ service_deduction_currency: 'usdt' });
  const deducted = ['USDC', 'USDT', 'USDT'];
  const inFilesNow = [];
  for await (const page of resultRowPages(db, BATCH)) inFilesNow.push(...page);
  expect(inFilesNow.map((r) => r.deductionCurrency)).toEqual(deducted);
  const inReportNow = [];
  for await (const r of payoutsCreatedBetween(db, CREATED_AT, CREATED_AT + 1)) inReportNow.push(r);
  expect(inReportNow.map((r) => r.deductionCurrency)).toEqual(deducted);
}

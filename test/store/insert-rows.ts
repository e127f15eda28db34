/**
 * insertRows storing every column exactly at a given row count, checked on a real database of either engine
 * (SQLite in test/store, PostgreSQL in test/postgres): on SQLite a call is one statement whatever the count,
 * on PostgreSQL the rows are split across statements at the bound-value limit.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { insertRows, type NewPayoutRow } from '../../src/store/insert-rows.js';
import { MAX_BOUND_VALUES } from '../../src/store/multi-row-insert.js';
import { payoutRowsOf } from './held-references.js';

/** The rows one PostgreSQL statement holds (12 columns a row): below, at and across that boundary. */
const PER_STATEMENT = Math.floor(MAX_BOUND_VALUES / 12);
export const ROW_COUNTS = [1, PER_STATEMENT - 1, PER_STATEMENT, PER_STATEMENT + 1, 2 * PER_STATEMENT + 541];

/** Rows for storing alone: VALIDATED, as the acceptance has not decided yet. */
export const rowsFor = (batchId: string, count: number): NewPayoutRow[] => payoutRowsOf(batchId, count, 'VALIDATED');

/** The stored rows of a batch, read back with plain SQL (not through another store reader). */
export async function storedRows(db: Database, batchId: string): Promise<NewPayoutRow[]> {
  const rows = (await db('payouts').where({ batch_id: batchId }).orderBy('line')) as Record<string, unknown>[];
  return rows.map((r) => {
    expect(r.updated_at).toBe(42);
    return {
      batchId: r.batch_id as string,
      line: r.line as number,
      merchantReferenceId: r.merchant_reference_id as string,
      state: r.state as NewPayoutRow['state'],
      requestValues: r.request_values as string | null,
      payoutCurrency: r.payout_currency as string | null,
      payoutAmount: r.payout_amount as string | null,
      deductionCurrency: r.deduction_currency as string | null,
      reasonCode: r.reason_code as string | null,
      reason: r.reason as string | null,
    };
  });
}

/** `count` rows stored in a transaction into batch B1 and without one into B2 (both added already), exactly. */
export async function checkStoresExactly(db: Database, count: number): Promise<void> {
  const inTrx = rowsFor('B1', count);
  await db.transaction((trx) => insertRows(trx, inTrx, 42));
  expect(await storedRows(db, 'B1')).toEqual(inTrx);
  const plain = rowsFor('B2', count);
  await insertRows(db, plain, 42);
  expect(await storedRows(db, 'B2')).toEqual(plain);
}

/**
 * A valid row goes in READY and holds its reference from its insert
 * (src/store/payouts.ts insertRows); a row whose reference is already held
 * goes in VALIDATED for the acceptance to decide, never lost. Run on SQLite
 * (test/store/insert-rows.test.ts) and on PostgreSQL (test/postgres), since
 * the skip is each engine's ON CONFLICT on the partial unique index.
 */
import { expect } from 'vitest';
import type { Knex } from 'knex';
import type { Database } from '../../src/store/db.js';
import { encodeRequestValues } from '../../src/domain/request-values.js';
import { insertRows, type NewPayoutRow } from '../../src/store/insert-rows.js';

/**
 * Rows as the reader hands them over: every seventh INVALID, the rest in `validState` (READY as read, VALIDATED
 * for a test of storing alone); text with quotes, backslashes, line breaks and characters outside ASCII, and no
 * currency or amount on every fifth, so that every column is seen to round-trip.
 */
export function payoutRowsOf(batchId: string, count: number, validState: 'READY' | 'VALIDATED' = 'READY'): NewPayoutRow[] {
  return Array.from({ length: count }, (_, i): NewPayoutRow => {
    const valid = i % 7 !== 3;
    return {
      batchId,
      line: i + 2,
      merchantReferenceId: `${batchId}-${i}`,
      state: valid ? validState : 'INVALID',
      requestValues: valid
        ? encodeRequestValues([
            `${batchId}-${i}`,
            'USDT',
            'PHP',
            `${i}.50`,
            'José',
            '😀 "q" \\ \r\n\t',
            'PH',
            'PASSPORT',
            'P1',
            'José',
            '0001234567',
            'X',
          ])
        : null,
      payoutCurrency: i % 5 === 0 ? null : 'PHP',
      payoutAmount: i % 5 === 0 ? null : `${i}.50`,
      deductionCurrency: 'USDT',
      reasonCode: valid ? null : 'AMOUNT_INVALID',
      reason: valid ? null : `AMOUNT_INVALID [payoutAmount]: line ${i + 2}`,
    };
  });
}

/** A batch being read (VALIDATING), for rows to be stored into. */
export async function addBatch(db: Database, id: string): Promise<void> {
  await db('batches').insert({
    id,
    file_name: 'f.csv',
    stored_path: 'f.csv',
    sha256: id,
    size: 1,
    mtime_ms: 1,
    state: 'VALIDATING',
    received_at: 1,
    updated_at: 1,
  });
}

/** In a transaction and without one, across statements and batches. */
export async function checkHeldReferencesSetAside(db: Database): Promise<void> {
  await addBatch(db, 'HELD');
  await insertRows(db, payoutRowsOf('HELD', 10), 42);
  for (const [batchId, write] of [
    ['HT', (rows: NewPayoutRow[]) => db.transaction((trx: Knex.Transaction) => insertRows(trx, rows, 42))],
    ['HN', (rows: NewPayoutRow[]) => insertRows(db, rows, 42)],
  ] as const) {
    await addBatch(db, batchId);
    const rows = payoutRowsOf(batchId, 6001);
    const withReference = (i: number, ref: string): void => {
      rows[i] = { ...(rows[i] as NewPayoutRow), merchantReferenceId: ref };
    };
    withReference(5, 'HELD-0'); // held by another batch
    withReference(4001, `${batchId}-0`); // held by this call's first row, a statement earlier (2730 rows a statement)
    withReference(2729, `${batchId}-2728`); // held by the row just before, in the same statement
    withReference(11, `${batchId}-3`); // that row is INVALID and holds nothing: this one is READY
    const setAside = [5, 4001, 2729];
    await write(rows);
    const stored = (await db('payouts')
      .where({ batch_id: batchId })
      .orderBy('line')
      .select('line', 'merchant_reference_id', 'state', 'request_values', 'next_attempt_at')) as Record<string, unknown>[];
    expect(stored).toEqual(
      rows.map((r, i) => {
        const state = setAside.includes(i) ? 'VALIDATED' : r.state;
        return {
          line: r.line,
          merchant_reference_id: r.merchantReferenceId,
          state,
          request_values: r.requestValues,
          // Due from its insert when READY; a set-aside row is given its due time when the acceptance makes it READY.
          next_attempt_at: state === 'READY' ? 42 : null,
        };
      }),
    );
  }
}

/**
 * Two transactions storing the same references at once, in opposite orders (two instances reading two files
 * that share them): each waits at the first reference the other holds. Neither may fail (on PostgreSQL a
 * deadlock aborts one), and each reference ends with exactly one holder.
 */
export async function checkConcurrentHolders(db: Database, count = 12_000): Promise<void> {
  await addBatch(db, 'UP');
  await addBatch(db, 'DOWN');
  const ascending = payoutRowsOf('UP', count).map((r, i): NewPayoutRow => ({ ...r, state: 'READY', merchantReferenceId: `SHARED-${i}` }));
  const descending = payoutRowsOf('DOWN', count).map((r, i): NewPayoutRow => ({
    ...r,
    state: 'READY',
    merchantReferenceId: `SHARED-${count - 1 - i}`,
  }));
  await Promise.all([
    db.transaction((trx: Knex.Transaction) => insertRows(trx, ascending, 42)),
    db.transaction((trx: Knex.Transaction) => insertRows(trx, descending, 42)),
  ]);
  const holders = (await db('payouts').whereIn('batch_id', ['UP', 'DOWN']).where('state', 'READY').count({ n: '*' }).first()) as {
    n: number | string;
  };
  const setAside = (await db('payouts').whereIn('batch_id', ['UP', 'DOWN']).where('state', 'VALIDATED').count({ n: '*' }).first()) as {
    n: number | string;
  };
  expect([Number(holders.n), Number(setAside.n)]).toEqual([count, count]);
}

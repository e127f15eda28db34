/**
 * The acceptance's guard on retry rounds on a real SQLite file (test/store/retry-rounds.ts), the plan of its
 * reads (a file without retry rows costs an empty probe of a partial index, not a walk of its rows), and the
 * rounds stored before migration 0027 found as those stored after.
 */
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, setRow, T0, validRow } from '../finance/helpers.js';
import { checkHashedSpellings, checkHoldingStates, checkRetryOfPaidRound, checkRoundsReadTogether } from './retry-rounds.js';

describe('store: a retry of a payout another row pays or may pay (SQLite)', () => {
  const store = useTestDatabase('payoutd-retry-rounds-');

  it('is refused when another batch paid another round of it, with where and what to do', () => checkRetryOfPaidRound(store.db));
  it('is refused while another round or the base itself may be paid, not once it is cancelled or never sent', () =>
    checkHoldingStates(store.db));
  it('is refused in the first of two files read together, and both rounds in one file', () => checkRoundsReadTogether(store.db));
  it('treats the plain and hashed spellings of a long base as one base', () => checkHashedSpellings(store.db));

  it('reads the rounds of a large file without retry rows through the partial index alone', async () => {
    const { db } = store;
    await addBatch(db, 'BIG', 'big.csv');
    await db('batches').where({ id: 'BIG' }).update({ state: 'VALIDATING' });
    await addRows(
      db,
      Array.from({ length: 2000 }, (_, i) => ({ ...validRow('BIG', i + 2, request(`PLAIN-${i + 1}`)), state: 'READY' as const })),
    );
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
    db.on('query', record);
    expect(await acceptBatchRows(db, 'BIG', 'reject-file', 5)).toMatchObject({ accepted: true, readyCount: 2000 });
    db.off('query', record);
    const guard = seen.filter((q) => q.sql.includes('retry_key'));
    expect(guard).toHaveLength(2);
    for (const q of guard) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      // The batch's rows are searched through the index holding only round rows.
      expect(plan[0]?.detail, q.sql).toMatch(/^SEARCH p USING INDEX payouts_batch_retry_rounds \(batch_id=\? AND state=\?\)$/);
    }
  });

  it('finds the rounds stored before migration 0027', async () => {
    const { db } = store;
    while ((await db('payoutd_migrations').max({ name: 'name' }).first())?.name !== '0026_accepted_totals') await db.migrate.down();
    await addBatch(db, 'OLD', 'old.csv');
    // As a build before 0027 stored them: no retry columns.
    for (const [line, ref, state] of [
      [2, 'T-1', 'CANCELLED'],
      [3, 'T-1-R1', 'PAID'],
      [4, 'PLAIN-R', 'PAID'],
    ] as const)
      await db('payouts').insert({ batch_id: 'OLD', line, merchant_reference_id: ref, state, updated_at: T0 });
    await db.migrate.latest();
    expect(await db('payouts').where({ batch_id: 'OLD' }).orderBy('line').select('retry_base', 'retry_key')).toEqual([
      { retry_base: null, retry_key: null },
      { retry_base: 'T-1', retry_key: expect.stringMatching(/^[0-9a-f]{10}$/) },
      { retry_base: null, retry_key: null },
    ]);
    await addBatch(db, 'NEW', 'new.csv');
    await db('batches').where({ id: 'NEW' }).update({ state: 'VALIDATING' });
    await addRows(db, [{ ...validRow('NEW', 2, request('T-1-R2')), state: 'READY' }]);
    await setRow(db, 'NEW', 2, { state: 'READY' });
    expect(await acceptBatchRows(db, 'NEW', 'skip-rows', 5)).toMatchObject({ accepted: false, duplicateCount: 1 });
  });
});

/**
 * The acceptance's guard on retry rounds on a real SQLite file (test/store/retry-rounds.ts), the plan of its
 * reads (a file without retry rows costs an empty probe of a partial index, not a walk of its rows; its
 * originals are looked up from the database's rounds, not row by row), and the rounds stored before migration
 * 0027 found as those stored after.
 */
import type { Knex } from 'knex';
import { describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, setRow, T0, validRow } from '../finance/helpers.js';
import { retryRoundChecks } from './retry-rounds.js';

describe('store: a retry of a payout another row pays or may pay (SQLite)', () => {
  const store = useTestDatabase('payoutd-retry-rounds-');

  retryRoundChecks(store);

  it('reads a large file without retry rows through the indexes of round rows alone, never row by row', async () => {
    const { db } = store;
    // Rounds elsewhere, paid and cancelled: the plans are those of a database that holds some.
    await addBatch(db, 'EARLIER', 'earlier.csv');
    await addRows(
      db,
      ['T-1', 'T-1-R1', 'T-2', 'T-2-R1'].map((ref, i) => ({ ...validRow('EARLIER', i + 2, request(ref)), state: 'READY' as const })),
    );
    for (const [line, state] of [
      [2, 'CANCELLED'],
      [3, 'PAID'],
      [4, 'CANCELLED'],
      [5, 'CANCELLED'],
    ] as const)
      await setRow(db, 'EARLIER', line, { state });
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
    // The bases of the file's rounds (none), and the originals in the file of the rounds holding a base.
    const guard = seen.filter((q) => q.sql.includes('retry_'));
    expect(guard).toHaveLength(2);
    const plans: string[][] = [];
    for (const q of guard) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      const details = plan.map((p) => p.detail);
      plans.push(details);
      // Every read of payouts is an index search, and the file's rows are searched only among its rounds.
      expect(
        details.filter((d) => /^SCAN (payouts|[hpr])\b/.test(d)),
        q.sql,
      ).toEqual([]);
      expect(
        details.filter((d) => d.includes('batch_id=?') && !d.includes('payouts_batch_retry_rounds')),
        q.sql,
      ).toEqual([]);
    }
    expect(plans[0]).toContain('SEARCH payouts USING INDEX payouts_batch_retry_rounds (batch_id=? AND state=?)');
    // Each probe of a base stops in the rows of one base in one state, not all its rounds.
    expect(plans[0]).toContain('SEARCH h USING INDEX payouts_retry_key_state (retry_key=? AND state=?)');
    // The originals: the database's round rows are the outer loop, read through an index holding only them, each
    // looking up its base among the file's rows by reference.
    expect(plans[1]?.[0]).toBe('SEARCH r USING INDEX payouts_retry_key_state (retry_key>?)');
    expect(plans[1]).toContain('SEARCH p USING INDEX payouts_merchant_reference_id_index (merchant_reference_id=?)');
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

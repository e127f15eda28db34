/**
 * The partial unique index behind "paid at most once" (`payouts_reference_holder`), on a real SQLite
 * file: a reference is held by at most one row in any holding state, never by a row in a free state,
 * and the index states its predicate without an IN list (migration 0006: SQLite built a table for the
 * list each time a row's state changed).
 */
import { describe, expect, it } from 'vitest';
import { REFERENCE_FREE_STATES, REFERENCE_HOLDING_STATES, ROW_STATES } from '../../src/domain/lifecycle.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

describe('store: the reference holder index (SQLite)', () => {
  const store = useTestDatabase('payoutd-holder-');

  it('holding and free states split the row states between them', () => {
    expect([...REFERENCE_HOLDING_STATES, ...REFERENCE_FREE_STATES].sort()).toEqual([...ROW_STATES].sort());
    expect(REFERENCE_HOLDING_STATES.filter((s) => REFERENCE_FREE_STATES.includes(s))).toEqual([]);
  });

  it('is stated as the free states, without an IN list', async () => {
    const { db } = store;
    const [sql] = (await db('sqlite_master').where({ type: 'index', name: 'payouts_reference_holder' }).pluck('sql')) as string[];
    expect(sql).not.toMatch(/\bIN\s*\(/i);
    for (const s of REFERENCE_FREE_STATES) expect(sql).toContain(`state <> '${s}'`);
  });

  it('refuses a second holder in every holding state, and lets any number of rows in free states share it', async () => {
    const { db } = store;
    const [a, b, c] = await seedBatch(db, 'HR', 3, 'VALIDATED');
    await db('payouts').whereIn('id', [b!.id, c!.id]).update({ merchant_reference_id: a!.merchantReferenceId });
    for (const free of REFERENCE_FREE_STATES) {
      await db('payouts').whereIn('id', [a!.id, b!.id, c!.id]).update({ state: free });
    }
    for (const holding of REFERENCE_HOLDING_STATES) {
      await db('payouts').where({ id: a!.id }).update({ state: holding });
      for (const other of REFERENCE_HOLDING_STATES) {
        await expect(db('payouts').where({ id: b!.id }).update({ state: other }), `${holding} then ${other}`).rejects.toThrow(
          /UNIQUE constraint failed: payouts\.merchant_reference_id/,
        );
      }
      // Its holder moving within the holding states keeps the reference; a free row beside it never takes it.
      for (const free of REFERENCE_FREE_STATES) await db('payouts').where({ id: b!.id }).update({ state: free });
    }
  });
});

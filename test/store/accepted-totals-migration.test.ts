/**
 * Migration 0026 gives batches accepted before it the accepted rows' totals where they are known for sure: the
 * approval gate's figures, or the file's totals when no row was refused. Others show none rather than the file's.
 */
import { describe, expect, it } from 'vitest';
import { getBatch, updateBatch } from '../../src/store/batches.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch } from '../finance/helpers.js';

describe('store: accepted totals of batches accepted before migration 0026', () => {
  const store = useTestDatabase('payoutd-accepted-totals-');

  it('backfills from the approval figures, or from the file when no row was refused', async () => {
    const { db } = store;
    // The schema before 0026, which has no accepted_totals_json column; BREAD stands for a batch never accepted.
    while ((await db('payoutd_migrations').max({ name: 'name' }).first())?.name !== '0025_read_failures') await db.migrate.down();
    const figures = JSON.stringify({ totals: { PHP: '1500.5' }, rows: 1, largest: { PHP: '1500.5' } });
    const batches = {
      BAPPROVED: { invalidCount: 1, approvalFiguresJson: figures },
      BCLEAN: { invalidCount: 0 },
      BPART: { invalidCount: 3 },
      BREAD: { acceptedAt: null },
    };
    for (const [id, patch] of Object.entries(batches)) {
      await addBatch(db, id, `${id}.csv`);
      await updateBatch(db, id, { totalsJson: '{"PHP":"1000001500.501"}', ...patch }, 1);
    }
    await db.migrate.latest();
    const accepted = async (id: string) => (await getBatch(db, id))?.acceptedTotalsJson ?? null;
    expect(await accepted('BAPPROVED')).toBe('{"PHP":"1500.5"}');
    expect(await accepted('BCLEAN')).toBe('{"PHP":"1000001500.501"}');
    expect(await accepted('BPART')).toBeNull();
    expect(await accepted('BREAD')).toBeNull();
  });
});

/**
 * Migration 0031 records, for rows noted before it, the note their batch's last result file shows: a note older
 * than that file is in it (no correction is owed for it), a newer one is not (a corrected result file tells it).
 */
import { describe, expect, it } from 'vitest';
import { batchesToCorrect } from '../../src/store/index.js';
import { getRow } from '../../src/store/payouts.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

describe('store: service notes of rows noted before migration 0031', () => {
  const store = useTestDatabase('payoutd-note-shown-');

  it('a note older than its batch result file counts as shown; a newer one is owed a corrected result file', async () => {
    const { db } = store;
    while ((await db('payoutd_migrations').max({ name: 'name' }).first())?.name !== '0030_retry_key_state') await db.migrate.down();
    const [shown] = await seedBatch(db, 'BSHOWN', 1, 'CANCELLED');
    const [unshown] = await seedBatch(db, 'BLATER', 1, 'CANCELLED');
    for (const id of ['BSHOWN', 'BLATER']) await db('batches').where({ id }).update({ state: 'COMPLETE', result_written_at: 1000 });
    const note = 'the payout service now reports PAID for payout P-1, recorded CANCELLED here';
    await db('payouts').where({ id: shown?.id }).update({ service_note: note, service_noted_at: 900 });
    await db('payouts').where({ id: unshown?.id }).update({ service_note: note, service_noted_at: 1100 });
    await db.migrate.latest();
    expect(await getRow(db, shown?.id as number)).toMatchObject({ serviceNoteShown: note, serviceCheckRound: 0 });
    expect(await getRow(db, unshown?.id as number)).toMatchObject({ serviceNoteShown: null, serviceCheckRound: 0 });
    expect(await batchesToCorrect(db)).toEqual(['BLATER']);
  });
});

/**
 * Deduplication on PostgreSQL: the same insert-or-ignore as on SQLite, now
 * with concurrent copies racing on a real server. Uses the server the
 * PostgreSQL tests use (test/postgres/pg.ts: PAYOUTD_TEST_PG_URL, default
 * the local one), in a throwaway schema; skipped, with the reason printed,
 * when none answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/store/db.js';
import { batchesToCorrect, serviceNoteCounts, serviceNotesOfBatch, updateBatch } from '../../src/store/index.js';
import { closePipelines } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema } from '../postgres/pg.js';
import { batchFiles, checkOwed, deliver, finalRows } from './final-rows-world.js';
import { closeAll, eventBody, eventRows, onClose, send, signedHeaders, startReceiver } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

describe.skipIf(!pgReachable)('webhook deduplication on PostgreSQL', () => {
  const schema = useTestSchema();

  it('records an event once, however many copies race in', async () => {
    const db = openDatabase({ client: 'pg', url: schema.url, filename: '', poolMax: 8, busyTimeoutMs: 5000, synchronous: 'FULL' });
    onClose(() => closeDatabase(db));
    await migrateToLatest(db);
    const h = await startReceiver({ db });
    const body = eventBody({ eventId: 'EV-PG', payoutId: 'PO-PG' });
    // Each copy signed with its own nonce, as a sender's retries are.
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(h.url, { headers: signedHeaders(body, h.clock), body })));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(h.verdicts.filter((v) => v === 'accepted')).toHaveLength(1);
    expect(h.verdicts.filter((v) => v === 'duplicate')).toHaveLength(7);
    expect(await eventRows(db)).toMatchObject([{ event_id: 'EV-PG', payout_id: 'PO-PG', status: 'PAID' }]);
    await expect.poll(() => h.followUps, { timeout: 2000, interval: 5 }).toEqual([['PO-PG']]);
  });

  it('a CANCELLED row the service now reports PAID: its note and owed check kept in the new columns, left out of the retry file', async () => {
    const { p, h, batchId, payoutIds } = await finalRows(
      { 'PG-FR-1': 'CANCELLED', 'PG-FR-2': 'CANCELLED' },
      {
        database: async () => {
          const db = await openEmptySchema(schema);
          await migrateToLatest(db);
          return db;
        },
      },
    );
    const payoutId = payoutIds.get('PG-FR-1') as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'PG-FR-1', status: 'PAID' });
    await checkOwed(p, 'PG-FR-1');
    expect((await p.row('PG-FR-1')).serviceCheck).toBe('PAYOUT');
    await p.poll();
    const row = await p.row('PG-FR-1');
    expect(row).toMatchObject({ state: 'CANCELLED', serviceCheck: null, serviceCheckAt: null });
    expect(row.serviceNote).toContain('the payout service now reports PAID');
    expect(row.serviceNotedAt).toBe(p.clock.now());
    // Finished before the note: no result file shows it yet, so a corrected one is due.
    await updateBatch(
      p.db,
      batchId,
      { state: 'COMPLETE', resultWrittenAt: p.clock.now() - 1, completedAt: p.clock.now() - 1 },
      p.clock.now(),
    );
    expect(await batchesToCorrect(p.db)).toEqual([batchId]);
    const files = await batchFiles(p, batchId, 'outbox');
    expect(files.retry).toContain('PG-FR-2-R1');
    expect(files.retry).not.toContain('PG-FR-1');
    expect(files.withheld.map((w) => w.merchantReferenceId)).toEqual(['PG-FR-1']);
    expect(await serviceNoteCounts(p.db, [batchId, 'B-NONE'])).toEqual(new Map([[batchId, 1]]));
    expect((await serviceNotesOfBatch(p.db, batchId)).map((n) => n.line)).toEqual([2]);
    // The result file written shows the note: nothing is left to correct.
    expect((await p.row('PG-FR-1')).serviceNoteShown).toBe(row.serviceNote);
    expect(await batchesToCorrect(p.db)).toEqual([]);
  });
});

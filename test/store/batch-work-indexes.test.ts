/**
 * The reads of batches made at every finish pass (and by payoutd status), and the forgetting of old webhook event
 * ids, are planned through an index of the few batches or events each can find (migration 0034), never a walk of
 * every batch ever taken. SQLite plans without statistics, so a small file shows the plan a large one gets.
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import type { Database } from '../../src/store/db.js';
import { listBatchesMissingFiles, listStatusBatches, listWatchedBatches } from '../../src/store/batches.js';
import { batchesToCorrect } from '../../src/store/service-checks.js';
import { listBatchesToArchive, listBatchesToPrune } from '../../src/store/retention.js';
import { forgetWebhookEventsBefore } from '../../src/store/webhook-events.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

/** The plan of each statement `read` runs that names `table`, one line per statement. */
async function plansOf(db: Database, table: string, read: () => Promise<unknown>): Promise<string[]> {
  const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
  const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
  db.on('query', record);
  try {
    await read();
  } finally {
    db.off('query', record);
  }
  const plans: string[] = [];
  for (const q of seen.filter((s) => s.sql.includes(`from \`${table}\``))) {
    const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
    plans.push(plan.map((p) => p.detail).join(' | '));
  }
  return plans;
}

describe('store: the finish pass reads batches through indexes of the few it can find (SQLite)', () => {
  const store = useTestDatabase('payoutd-batch-work-idx-');

  it('the watch of taken files, the outbox repair, the archive and retention', async () => {
    const { db } = store;
    await seedBatch(db, 'BW1', 2, 'PAID');
    const cases: [() => Promise<unknown>, RegExp[]][] = [
      [
        () => listWatchedBatches(db, 10),
        [
          /INDEX 1 \| SEARCH batches USING INDEX batches_state_received \(state=\?\) \| INDEX 2 \| SEARCH batches USING INDEX batches_state_received \(state=\? AND received_at>\?\)/,
        ],
      ],
      [() => listBatchesMissingFiles(db, { now: 100, minAgeMs: 5 }), [/USING INDEX batches_ack_owed .*USING INDEX batches_result_owed/]],
      [() => listBatchesToArchive(db, '/claimed', 100), [/^SEARCH batches USING INDEX batches_unarchived \(state=\? AND received_at<\?\)/]],
      [
        () => listBatchesToPrune(db, 100),
        // First the batches owed a corrected result file (never pruned before it is written), by their partial index.
        [/USING (COVERING )?INDEX batches_correction_owed\b/, /^SEARCH batches USING INDEX batches_unpruned \(state=\?\)/],
      ],
    ];
    for (const [read, expected] of cases) {
      const plans = await plansOf(db, 'batches', read);
      expect(plans.length, String(read)).toBeGreaterThanOrEqual(expected.length);
      expected.forEach((re, i) => expect(plans[i], String(read)).toMatch(re));
      // A walk of a partial index holds only the batches owed a correction.
      for (const plan of plans)
        expect(plan.replace(/SCAN batches USING (COVERING )?INDEX batches_correction_owed\b/, '')).not.toMatch(/\bSCAN\b/);
    }
  });

  it('the corrections owed: by their partial index, then the batches of noted rows by their key', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'BW2', 2, 'PAID');
    await db('payouts').where({ id: rows[0]?.id }).update({ service_noted_at: 5, service_note: 'the payout service says REJECTED' });
    const plans = await plansOf(db, 'batches', async () => expect(await batchesToCorrect(db)).toEqual([]));
    expect(plans).toHaveLength(2);
    expect(plans[0]).toMatch(/USING (COVERING )?INDEX batches_correction_owed\b/);
    expect(plans[1]).toMatch(/^SEARCH batches USING (COVERING )?INDEX sqlite_autoindex_batches_1 \(id=\?\)$/);
  });

  it('payoutd status reads the finished batches it shows from the newest, one state at a time', async () => {
    const { db } = store;
    await seedBatch(db, 'BW3', 1, 'PAID');
    const plans = await plansOf(db, 'batches', () => listStatusBatches(db, 20));
    expect(plans.length).toBeGreaterThan(0);
    for (const plan of plans) {
      expect(plan).toMatch(/^SEARCH batches USING (COVERING )?INDEX batches_state_received \(state=\?\)/);
      // At most the tie on id is sorted, within one received time: never every batch of the state.
      expect(plan).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
    }
  });

  it('old webhook event ids are forgotten by their time received', async () => {
    const { db } = store;
    const plans = await plansOf(db, 'webhook_events', () => forgetWebhookEventsBefore(db, 100));
    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatch(/^SEARCH webhook_events USING (COVERING )?INDEX webhook_events_received_at \(received_at<\?\)$/);
  });
  it('retention looks for open rows one batch at a time, and still chooses only batches without one, oldest first', async () => {
    const { db } = store;
    for (const [i, id] of ['BP1', 'BP2', 'BP3', 'BP4'].entries()) {
      await seedBatch(db, id, 2, 'PAID', 10 + i);
      await db('batches').where({ id }).update({ state: 'COMPLETE', completed_at: 20, ack_written_at: 20, result_written_at: 20 });
    }
    // A finished batch with a row that can still move is never pruned.
    await db('payouts').where({ batch_id: 'BP2', line: 3 }).update({ state: 'PENDING' });
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
    db.on('query', record);
    const chosen = async (limit: number): Promise<string[]> => (await listBatchesToPrune(db, 100, limit)).map((b) => b.id);
    try {
      expect(await chosen(1)).toEqual(['BP1']);
      expect(await chosen(2)).toEqual(['BP1', 'BP3']);
      expect(await chosen(1000)).toEqual(['BP1', 'BP3', 'BP4']);
    } finally {
      db.off('query', record);
    }
    // Never a NOT EXISTS beside the batches, which PostgreSQL answers by reading every payout row: the open rows of
    // the batches chosen from, by (batch, state).
    // Apart from the rows with a service note (the corrections owed), through their own partial index.
    const isNoted = (q: { sql: string }): boolean => q.sql.includes('`service_noted_at` is not null');
    for (const q of seen.filter(isNoted)) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' | ')).toMatch(/^SEARCH payouts USING INDEX payouts_service_noted \(service_noted_at>\?\)$/);
    }
    const payoutReads = seen.filter((q) => q.sql.includes('`payouts`') && !isNoted(q));
    expect(payoutReads.length).toBeGreaterThan(0);
    for (const q of payoutReads) {
      expect(q.sql).toMatch(/^select `batch_id` from `payouts` where `batch_id` in \(.*\) and `state` in \(.*\)$/);
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' | ')).toMatch(
        /^SEARCH payouts USING COVERING INDEX payouts_batch_state_line \(batch_id=\? AND state=\?\)$/,
      );
    }
  });
});

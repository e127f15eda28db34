/**
 * GroupCommit on a real SQLite file (its window's timer held by the test):
 * the answers handed over within the window are recorded by one commit that
 * every caller waits for, a full batch is committed without waiting, and a
 * commit that fails rejects each of its callers (none is left believing its
 * answer recorded) without stopping the commits after it.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createdWhenWritten } from '../../src/store/created-at.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import { historyOf, type RowMove } from '../../src/store/moves.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from './moves.js';

function created(row: RowMove['row'], payoutId: string): RowMove {
  return {
    row,
    from: 'CREATING',
    to: 'PENDING',
    patch: { payoutId, serviceStatus: 'PENDING', createdAtMs: createdWhenWritten({ now: () => 5 }), nextPollAt: 7 },
    history: { event: 'created', outcome: 'OK', detail: `payoutId ${payoutId}` },
  };
}

describe('store: group commit of answers', () => {
  const store = useTestDatabase('payoutd-group-commit-');
  // The window is a timer: held still here, so a commit happens only when a test lets the window close.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('records the answers handed over within its window in one commit, each caller waiting for it', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'GC', 3, 'CREATING');
    let clock = 0;
    // Each commit reads the clock once: answers of one commit share the time in their history.
    const commits = new GroupCommit(db, () => ++clock, 20);
    const waits = rows.map((row, i) => commits.add(created(row, `P-${i}`)));
    await vi.advanceTimersByTimeAsync(19);
    expect(await db('payouts').where({ state: 'PENDING' }).count({ n: '*' })).toEqual([{ n: 0 }]);
    await vi.advanceTimersByTimeAsync(1);
    await Promise.all(waits);
    const after = (await db('payouts').orderBy('line').select('state', 'payout_id')) as Record<string, unknown>[];
    expect(after).toEqual([
      { state: 'PENDING', payout_id: 'P-0' },
      { state: 'PENDING', payout_id: 'P-1' },
      { state: 'PENDING', payout_id: 'P-2' },
    ]);
    const history = await Promise.all(rows.map((r) => historyOf(db, r.id)));
    expect(history.map((h) => h.map((e) => [e.event, e.at]))).toEqual([[['created', 1]], [['created', 1]], [['created', 1]]]);
  });

  it('commits at once when the batch is full, without waiting for the window', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'GF', 2, 'CREATING');
    const commits = new GroupCommit(db, () => 9, 60_000, 2);
    // No timer runs in this test: the answers resolve only because the second one filled the batch.
    await Promise.all(rows.map((row, i) => commits.add(created(row, `P-${i}`))));
    expect(await db('payouts').where({ state: 'PENDING' }).count({ n: '*' })).toEqual([{ n: 2 }]);
  });

  it('a failed commit rejects every one of its callers, and the next commit goes on', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'GX', 3, 'CREATING');
    const [a, b, c] = rows.map((r): RowMove['row'] => r);
    if (!a || !b || !c) throw new Error('three rows were seeded');
    const commits = new GroupCommit(db, () => 9, 20);
    // A move no row may make fails the whole transaction: neither answer of that commit is recorded.
    const bad: RowMove = { ...created(a, 'P-a'), from: 'PAID', to: 'READY' };
    const failing = Promise.allSettled([commits.add(bad), commits.add(created(b, 'P-b'))]);
    await vi.advanceTimersByTimeAsync(20);
    const outcomes = await failing;
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(await db('payouts').where({ state: 'PENDING' }).count({ n: '*' })).toEqual([{ n: 0 }]);
    const last = commits.add(created(c, 'P-c'));
    await vi.advanceTimersByTimeAsync(20);
    await last;
    expect(await db('payouts').where({ state: 'PENDING' }).pluck('payout_id')).toEqual(['P-c']);
  });
});

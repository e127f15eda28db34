/**
 * Progress events: at most every notify.progressEvery (a further 10% of the rows final, or 10 minutes with
 * some movement), decided from the last one stored, so a restart neither repeats nor skips one.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { createLogger } from '../../src/log/index.js';
import { ProgressEvents, progressDue } from '../../src/notify/index.js';
import { cancelReadyRows, listBatchEvents, type Database } from '../../src/store/index.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from '../store/moves.js';

const EVERY = { ms: 600_000, percent: 10 };

async function payFirst(db: Database, batchId: string, n: number): Promise<void> {
  // A test shortcut: the rows' moves are the submitter's and the poller's business.
  const ids = (await db('payouts').where({ batch_id: batchId }).orderBy('line').limit(n).pluck('id')) as number[];
  await db('payouts').whereIn('id', ids).update({ state: 'PAID' });
}

describe('progress events', () => {
  it('progressDue: enough more rows final, or enough time with movement; never at the end', () => {
    const at = { final: 10, percent: 10, at: 0 };
    expect(progressDue({ rows: 100, final: 15, percent: 15 }, at, 60_000, EVERY)).toBe(false);
    expect(progressDue({ rows: 100, final: 20, percent: 20 }, at, 60_000, EVERY)).toBe(true);
    expect(progressDue({ rows: 100, final: 11, percent: 11 }, at, 600_000, EVERY)).toBe(true);
    expect(progressDue({ rows: 100, final: 10, percent: 10 }, at, 6_000_000, EVERY)).toBe(false);
    expect(progressDue({ rows: 100, final: 100, percent: 100 }, at, 6_000_000, EVERY)).toBe(false);
  });

  const t = useTestDatabase('payoutd-progress-');

  it('records them from the rows, and a restarted process goes on from the last one stored', async () => {
    const clock = new ManualClock(1_000_000);
    const config = loadConfig({ env: {}, cwd: '/tmp' }, { notify: { progressEvery: EVERY } });
    const logger = createLogger('silent');
    await seedBatch(t.db, 'P1', 100, 'PENDING', clock.now());
    await t.db('batches').where({ id: 'P1' }).update({ accepted_at: clock.now() });
    let progress = new ProgressEvents({ db: t.db, config, clock, logger });
    const step = async (paid: number, ms: number): Promise<number> => {
      await payFirst(t.db, 'P1', paid);
      clock.advance(ms);
      return progress.pass();
    };
    expect(await step(5, 60_000)).toBe(0);
    expect(await step(12, 60_000)).toBe(1);
    expect(await step(15, 60_000)).toBe(0);
    progress = new ProgressEvents({ db: t.db, config, clock, logger });
    expect(await step(15, 5_000), 'after a restart: nothing new since the last event').toBe(0);
    expect(await step(16, 600_000), 'ten minutes with movement').toBe(1);
    expect(await step(16, 600_000), 'ten minutes without').toBe(0);
    const events = (await listBatchEvents(t.db, 'P1')).filter((e) => e.type === 'progress');
    expect(events.map((e) => [e.data['final'], e.data['percent']])).toEqual([
      [12, 12],
      [16, 16],
    ]);
    expect(events[0]?.data['rowsPerMinute']).toBe(6);
    // 12 rows in the first 2 minutes: the 88 left take 14 min 40 s more.
    expect(events[0]?.data['eta']).toBe(new Date(1_000_000 + 120_000 + 880_000).toISOString());
  });

  it('say the batch state as payoutd status shows it: CANCELLED for one cancelled with payouts still in flight', async () => {
    const clock = new ManualClock(1_000_000);
    const config = loadConfig({ env: {}, cwd: '/tmp' }, { notify: { progressEvery: EVERY } });
    const progress = new ProgressEvents({ db: t.db, config, clock, logger: createLogger('silent') });
    for (const id of ['PLAIN', 'STOPPED']) await seedBatch(t.db, id, 10, 'PENDING', clock.now());
    // Its last row not yet sent: the cancel has one to stop (a cancel of rows all sent is refused).
    const last = (await t.db('payouts').where({ batch_id: 'STOPPED' }).orderBy('line', 'desc').first('id')) as { id: number };
    await t.db('payouts').where({ id: last.id }).update({ state: 'READY' });
    await cancelReadyRows(t.db, 'STOPPED', 'cancelled by an operator: wrong month', clock.now());
    for (const id of ['PLAIN', 'STOPPED']) await payFirst(t.db, id, 5);
    clock.advance(60_000);
    expect(await progress.pass()).toBe(2);
    const shown = async (id: string): Promise<unknown> =>
      (await listBatchEvents(t.db, id)).find((e) => e.type === 'progress')?.data['shownState'];
    expect([await shown('PLAIN'), await shown('STOPPED')]).toEqual(['ACTIVE', 'CANCELLED']);
  });
});

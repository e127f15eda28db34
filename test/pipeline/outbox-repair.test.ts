/**
 * The finisher's outbox repair (src/daemon/finisher.ts) on a real SQLite database and outbox folder: an ack that
 * should exist is written late once the intake has had its moment to write it, whichever side of the clock the
 * batch's last change is dated. A clock that was ahead, then set right, leaves `updated_at` in the future: such
 * a batch must not go without its ack until the clock catches up.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { BatchFinisher } from '../../src/daemon/finisher.js';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { getBatch } from '../../src/store/index.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from '../store/moves.js';

const DAY = 86_400_000;

describe('the outbox repair', () => {
  const t = useTestDatabase('payoutd-repair-');

  /** A finisher alone on its database, writing to an outbox folder of the test's own. */
  const finisher = (clock: ManualClock, dir: string): BatchFinisher =>
    new BatchFinisher(
      {
        db: t.db,
        clock,
        logger: pino({ level: 'silent' }),
        outbox: new BatchOutbox(t.db, dir, false),
        continued: { dir, bom: false, maxRecordBytes: 65536, encoding: 'utf-8' },
      },
      { instanceId: 'a', leaseMs: 30_000, shared: false },
    );

  /** The batches whose ack is in the outbox `dir`. */
  const acked = async (dir: string): Promise<string[]> =>
    (await readdir(dir))
      .filter((n) => n.endsWith('.ack.csv'))
      .map((n) => n.slice(0, n.indexOf('_')))
      .sort();

  it('writes the ack of a batch last changed by a clock that was ahead, and still leaves the intake its moment', async () => {
    const clock = new ManualClock(Date.UTC(2026, 2, 1));
    const now = clock.now();
    const changedAt: Record<string, number> = {
      'B-AHEAD': now + 2 * DAY,
      'B-PAST': now - 60_000,
      // Changed a second ago, or a second ahead (a small step back of the clock): the intake may be writing it.
      'B-JUST': now - 1000,
      'B-JUST-AHEAD': now + 1000,
    };
    for (const [id, at] of Object.entries(changedAt)) {
      await seedBatch(t.db, id, 1, 'VALIDATED');
      await t.db('batches').where({ id }).update({ updated_at: at });
    }
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-repair-out-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const repair = finisher(clock, dir);

    await repair.pass();
    expect(await acked(dir)).toEqual(['B-AHEAD', 'B-PAST']);
    expect((await getBatch(t.db, 'B-AHEAD'))?.ackWrittenAt).toBe(now);
    clock.advance(6000);
    await repair.pass();
    expect(await acked(dir)).toEqual(['B-AHEAD', 'B-JUST', 'B-JUST-AHEAD', 'B-PAST']);
  });
});

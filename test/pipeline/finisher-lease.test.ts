/**
 * The finisher with several instances on one database (src/daemon/finisher.ts): a result file that takes
 * longer to write than a lease lasts keeps its batch, its lease renewed while it is written; and of two
 * instances that both wrote a batch's result files, one completes it and announces it once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { BatchFinisher } from '../../src/daemon/finisher.js';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import type { ResultFiles } from '../../src/report/index.js';
import { getBatch, type BatchRecord } from '../../src/store/index.js';
import type { Database } from '../../src/store/db.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from '../store/moves.js';

const LEASE_MS = 3000;

/** An outbox whose result files wait at a gate the test opens: a write that outlasts the lease. */
class GatedOutbox extends BatchOutbox {
  entered!: Promise<void>;
  private enter!: () => void;
  private gate: Promise<void>;
  open!: () => void;
  constructor(db: Database, dir: string) {
    super(db, dir, false);
    this.entered = new Promise((r) => (this.enter = r));
    this.gate = new Promise((r) => (this.open = r));
  }
  override async writeResult(batch: BatchRecord): Promise<ResultFiles> {
    this.enter();
    await this.gate;
    return super.writeResult(batch);
  }
}

describe('finishing a batch with several instances', () => {
  const t = useTestDatabase('payoutd-finisher-');
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-finisher-out-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const finisher = (instanceId: string, clock: ManualClock, outbox: BatchOutbox): BatchFinisher =>
    new BatchFinisher(
      {
        db: t.db,
        clock,
        logger: pino({ level: 'silent' }),
        outbox,
        continued: { dir, bom: false, maxRecordBytes: 65536, encoding: 'utf-8' },
      },
      { instanceId, leaseMs: LEASE_MS, shared: true },
    );

  /** Batch B1 of final rows; instance a holds it, held at its result file's gate; instance b beside it. */
  const aHeldWritingB1 = async (): Promise<{ clock: ManualClock; slow: GatedOutbox; aPass: Promise<number>; b: BatchFinisher }> => {
    await seedBatch(t.db, 'B1', 3, 'PAID');
    const clock = new ManualClock();
    const slow = new GatedOutbox(t.db, dir);
    const b = finisher('b', clock, new BatchOutbox(t.db, dir, false));
    const aPass = finisher('a', clock, slow).pass();
    await slow.entered;
    return { clock, slow, aPass, b };
  };

  const completedEvents = async (): Promise<number> =>
    Number(((await t.db('batch_events').where({ batch_id: 'B1', type: 'completed' }).count({ n: '*' })) as { n: number }[])[0]?.n);

  it('keeps the batch while its result file takes longer than a lease to write', async () => {
    const { clock, slow, aPass, b } = await aHeldWritingB1();
    clock.advance(LEASE_MS + 1);
    // The renewal (every third of the lease, at least a second) puts the lease ahead of the moved clock.
    const deadline = Date.now() + 10_000;
    while (Number((await getBatch(t.db, 'B1'))?.leaseExpiresAt) <= clock.now()) {
      if (Date.now() > deadline) throw new Error('the lease of a batch being finished was not renewed');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(await b.pass()).toBe(0);

    slow.open();
    expect(await aPass).toBe(1);
    const done = (await getBatch(t.db, 'B1')) as BatchRecord;
    expect(done.state).toBe('COMPLETE');
    expect(done.leaseOwner).toBeNull();
    expect(await completedEvents()).toBe(1);
  });

  it('completes and announces a batch once when two instances wrote its result files', async () => {
    const { clock, slow, aPass, b } = await aHeldWritingB1();
    // a stalled past its lease, and b took the batch over (as after a renewal that could not be written).
    await t
      .db('batches')
      .where({ id: 'B1' })
      .update({ lease_owner: 'b', lease_expires_at: clock.now() + LEASE_MS });
    expect(await b.pass()).toBe(1);
    expect(await completedEvents()).toBe(1);

    slow.open();
    expect(await aPass).toBe(0);
    expect((await getBatch(t.db, 'B1'))?.state).toBe('COMPLETE');
    expect(await completedEvents()).toBe(1);
  });
});

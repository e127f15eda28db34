/**
 * PostgreSQL, two instances over one database: a create that waits in its client (here behind a rate-limit
 * pause) past its row's lease. Meanwhile the other instance takes the row over, finds the reference absent
 * and creates it. The waiting create must then not be sent: each try first renews the lease in the database
 * and goes out only while the row is still its claim's. Before that fence the service held two payouts for
 * the reference (duplicatePolicy allow). And a renewal past the lease that meets a takeover holding the row:
 * it waits for it, then finds the row lost.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { migrateToLatest } from '../../src/store/db.js';
import { historyOf } from '../../src/store/moves.js';
import { claimReadyRows, fenceCreate } from '../../src/store/claims.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { closePipelines, payoutRequest, startPipeline } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a create held in its client past its lease', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);
  const database = async () => {
    const db = await openEmptySchema(schema);
    await migrateToLatest(db);
    return db;
  };

  it('is not sent after another instance took its row over and created it', async () => {
    let paused!: () => void;
    const pausing = new Promise<void>((resolve) => (paused = resolve));
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      client: { onRateLimited: () => paused() },
      database,
    });
    const leaseMs = 120_000;
    const deps = { db: p.db, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 };
    // Each instance has its own client, as separate processes do (a rate-limit pause is per client).
    const a = new PayoutSubmitter({ ...deps, service: p.client }, { ...p.submitterOptions, claimant: { instanceId: 'A', leaseMs } });
    const b = new PayoutSubmitter(
      { ...deps, service: new PayoutApiClient(p.clientOptions) },
      { ...p.submitterOptions, claimant: { instanceId: 'B', leaseMs } },
    );
    await p.insertReadyBatch([payoutRequest('REF-FENCE-1')]);

    // One request in the bucket, spent here: A's first try is answered 429 and A's client pauses.
    p.sandbox.setFaults({ rateLimit: { requestsPerSecond: 0.001, burst: 1, retryAfterSeconds: 1 } });
    await p.client.balances();
    const aPass = a.runOnce(p.signal);
    await pausing;
    expect((await p.row('REF-FENCE-1')).state).toBe('CREATING');
    p.sandbox.setFaults({ rateLimit: null });

    // A's lease runs out while its create waits; B takes the row over, finds it absent and creates it.
    p.clock.advance(leaseMs + 1);
    await b.runOnce(p.signal);
    const afterB = await p.row('REF-FENCE-1');
    expect(afterB.state).toBe('PENDING');
    expect(p.ledgerCount('REF-FENCE-1')).toBe(1);

    // A's pause ends: its next try finds the row no longer its own and is not sent.
    await aPass;
    const row = await p.row('REF-FENCE-1');
    expect(p.ledgerCount('REF-FENCE-1')).toBe(1);
    expect(row).toMatchObject({ state: 'PENDING', payoutId: afterB.payoutId });
    expect(p.logLines.filter((l) => l.includes('create not sent: the claim on its row ended'))).toHaveLength(1);
    const events = (await historyOf(p.db, row.id)).map((h) => h.event);
    expect(events).toEqual(['intent', 'interrupted', 'reconciled-absent', 'intent', 'created']);
  });

  it('a renewal past the lease waits for a takeover holding the row, then finds the row lost', async () => {
    const p = await startPipeline({ database });
    await p.insertReadyBatch([payoutRequest('REF-FENCE-2')]);
    const claimant = p.submitterOptions.claimant;
    const [row] = await claimReadyRows(p.db, 1, p.clock.now(), claimant);
    if (row === undefined) throw new Error('not claimed');
    const late = p.clock.now() + claimant.leaseMs + 1;

    // Another instance's takeover, as markInterruptedCreatesUnknown makes it, not yet committed.
    const takeover = await p.db.transaction();
    const ids = (await takeover('payouts')
      .where('state', 'CREATING')
      .andWhere('lease_expires_at', '<', late)
      .forUpdate()
      .skipLocked()
      .pluck('id')) as number[];
    expect(ids).toEqual([row.id]);
    await takeover('payouts').whereIn('id', ids).update({ state: 'UNKNOWN', lease_owner: null, lease_expires_at: null });
    let settled = false;
    const fencing = fenceCreate(p.db, row, late, claimant, true).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(settled).toBe(false);
    await takeover.commit();
    expect(await fencing).toBe('lost');
    expect((await p.row('REF-FENCE-2')).state).toBe('UNKNOWN');
  });
});

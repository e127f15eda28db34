/**
 * E2E 6: one daemon per state directory. A second `payoutd run` on the same
 * state directory refuses to start, says why, exits non-zero, and leaves the
 * first one running and working.
 */
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

describe('e2e: a second daemon on the same state directory', () => {
  it('refuses to start with a clear message and a non-zero exit; the first keeps working', async () => {
    const e2e = await startE2e();
    const first = await e2e.startDaemon();

    const second = e2e.spawnDaemon();
    const exit = await second.exit;
    expect(exit.code).not.toBe(0);
    expect(exit.code).not.toBeNull();
    const said = second.stderr.join('\n');
    expect(said).toContain('STATE_DIR_LOCKED');
    expect(said).toContain('another payoutd is already running');
    expect(said).toContain(e2e.stateDir);
    expect(said).toContain(`pid ${first.pid}`);
    // It did nothing: no "running" line, nothing in the ledger.
    expect(second.logs.some((l) => l.msg === 'payoutd running')).toBe(false);

    // The first one is unaffected.
    expect(first.exited).toBeNull();
    await e2e.drop('after.csv', toCsv(makeRows('E2E-LOCK', 3)));
    const batch = await e2e.waitForBatch('after.csv', ['COMPLETE'], 30_000);
    expect(batch.counts).toEqual({ PAID: 3 });
    expect(e2e.ledger()).toHaveLength(3);

    // Once the first has stopped, the lock is free again.
    expect(await first.stop()).toBe(0);
    const third = await e2e.startDaemon();
    expect(third.exited).toBeNull();
  });
});

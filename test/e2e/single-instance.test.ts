/**
 * E2E 6: one daemon per state directory and per SQLite database file. A
 * second `payoutd run` on the same state directory, or on the same database
 * file from another state directory, refuses to start, says why, exits
 * non-zero, and leaves the first one running and working.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e, type DaemonProcess } from './harness.js';

/** What a daemon that refused to start said: it exited non-zero and did nothing (no "running" line). */
async function refusal(d: DaemonProcess): Promise<string> {
  const exit = await d.exit;
  expect(exit.code).not.toBe(0);
  expect(exit.code).not.toBeNull();
  expect(d.logs.some((l) => l.msg === 'payoutd running')).toBe(false);
  return d.stderr.join('\n');
}

describe('e2e: a second daemon on the same state directory', () => {
  it('refuses to start with a clear message and a non-zero exit; the first keeps working', async () => {
    const e2e = await startE2e();
    const first = await e2e.startDaemon();

    const said = await refusal(e2e.spawnDaemon());
    expect(said).toContain('STATE_DIR_LOCKED');
    expect(said).toContain('another payoutd is already running');
    expect(said).toContain(e2e.stateDir);
    expect(said).toContain(`pid ${first.pid}`);

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

  it('refuses a second daemon on the same database file from another state directory', async () => {
    const e2e = await startE2e();
    const databaseFile = join(e2e.dir, 'db', 'payoutd.sqlite');
    await e2e.writeConfig({ database: { filename: databaseFile } });
    const first = await e2e.startDaemon();

    const otherState = join(e2e.dir, 'state-b');
    await mkdir(otherState, { recursive: true });
    const otherConfig = join(e2e.dir, 'payoutd-b.yaml');
    await e2e.writeConfig({ paths: { stateDir: otherState }, database: { filename: databaseFile } }, otherConfig);
    const said = await refusal(e2e.spawnDaemon(otherConfig));
    expect(said).toContain('DATABASE_FILE_LOCKED');
    expect(said).toContain(`database file ${databaseFile}`);
    expect(said).toContain(`pid ${first.pid}`);

    expect(first.exited).toBeNull();
    await e2e.drop('after.csv', toCsv(makeRows('E2E-DBLOCK', 2)));
    const batch = await e2e.waitForBatch('after.csv', ['COMPLETE'], 30_000);
    expect(batch.counts).toEqual({ PAID: 2 });
  });
});

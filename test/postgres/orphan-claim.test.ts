/**
 * PostgreSQL: an instance killed between renaming a file into its claimed/ and recording its batch, and
 * restarted (by systemd) within a lease. At start the file is younger than the lease, so it might be another
 * process's claim on its way to its record, and it is left; it used to be left for good, until a restart
 * after the lease. Now the finish pass looks for orphans once per rescan interval and receives it once it
 * is older than the lease.
 */
import { mkdir, rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { startShortLease } from './instances.js';
import { pgReachable, useTestSchema } from './pg.js';

// Longer than a loaded machine takes to start an instance: the file must still be younger than this at start.
const LEASE_MS = 10_000;
const FOUND = 'found a claimed file with no batch record';

describe.skipIf(!pgReachable)('postgres: a file claimed just before a crash, the instance restarted within a lease', () => {
  const schema = useTestSchema();

  it('is received by the restarted instance once the claim is older than the lease', { timeout: 120_000 }, async () => {
    const { e2e, instances } = await startShortLease(schema, 'a', LEASE_MS);

    // What a kill between the rename and the record leaves: the file in a's claimed/, no batch (whole-second
    // mtime: fractional-mtime.test.ts). Its ctime, the rename, is now: the restart comes within the lease.
    const claimed = join(instances.stateDir('a'), 'claimed');
    await mkdir(claimed, { recursive: true });
    const staged = join(e2e.dir, 'orphan.csv');
    await writeFile(staged, toCsv(makeRows('PG-ORPHAN', 2)));
    const second = Math.floor(Date.now() / 1000) - 5;
    await utimes(staged, second, second);
    await rename(staged, join(claimed, '20260101T000000Z-0123456789ab__orphan.csv'));
    const daemon = await instances.start('a');
    const runningAt = daemon.logs.findIndex((l) => l.msg === 'payoutd running');

    const batch = await e2e.waitForBatch('orphan.csv', ['COMPLETE'], 6 * LEASE_MS);
    expect(batch.counts).toEqual({ PAID: 2 });
    // Left at start (too young), found by a later finish pass, once.
    const found = daemon.logs.flatMap((l, i) => (typeof l.msg === 'string' && l.msg.startsWith(FOUND) ? [i] : []));
    expect(found).toHaveLength(1);
    expect(found[0]).toBeGreaterThan(runningAt);
    expect((await e2e.batches()).filter((b) => b.fileName === 'orphan.csv')).toHaveLength(1);
  });
});

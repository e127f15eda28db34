/**
 * PostgreSQL: a dropped file whose mtime has a fraction of a millisecond
 * (what most filesystems give: stat's mtimeMs is 1732286931998.123) is
 * received and paid like any other. batches.mtime_ms is a bigint, and
 * PostgreSQL refused "…998.123" (22P02; SQLite stores the REAL and never
 * noticed): the file stayed in the instance's claimed/ folder. Whole
 * milliseconds are now stored and compared (src/store/batches.ts,
 * src/ingest/inbox/claim.ts). The other tests in this folder drop files
 * with whole-second mtimes.
 */
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { startE2e, waitFor } from '../e2e/harness.js';
import { dropFile, startInstances } from './instances.js';
import { pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a file with a fractional mtime', () => {
  const schema = useTestSchema();

  it('is received and paid like any other', async () => {
    const e2e = await startE2e();
    const instances = await startInstances(e2e, schema, { inbox: { stableForMs: 200, rescanIntervalMs: 300 } });
    await instances.configure('solo');
    const solo = await instances.start('solo');

    await dropFile(e2e, 'fraction.csv', toCsv(makeRows('PG-FRAC', 2)), Math.floor(Date.now() / 1000) + 0.123456);
    // Fails fast: either the batch completes or the watcher reports the failed intake.
    const outcome = await waitFor(
      async () =>
        solo.logs.find((l) => l.msg === 'inbox watcher error') ??
        (await e2e.batches()).find((b) => b.fileName === 'fraction.csv' && b.state === 'COMPLETE'),
      'the batch to complete or the intake to fail',
      20_000,
      200,
    );
    expect(solo.logs.filter((l) => l.msg === 'inbox watcher error')).toEqual([]);
    expect(outcome).toMatchObject({ state: 'COMPLETE', counts: { PAID: 2 } });
  });
});

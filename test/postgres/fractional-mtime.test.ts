/**
 * PostgreSQL, known bug: a dropped file whose mtime has a fraction of a
 * millisecond (what most filesystems give: stat's mtimeMs is
 * 1732286931998.123) is claimed, then its batch record cannot be written —
 * batches.mtime_ms is a bigint and PostgreSQL refuses "…998.123" (22P02;
 * SQLite stores the REAL and never notices). The file stays in the
 * instance's claimed/ folder and its file_claims row keeps the others away.
 * The other tests in this folder drop files with whole-second mtimes.
 *
 * Fix (src, for the lead): store whole milliseconds and compare them so —
 * src/ingest/intake.ts receive(): `mtimeMs: Math.trunc(claimed.mtimeMs)`;
 * src/ingest/inbox/claim.ts verifyUnchanged(): compare
 * `Math.trunc(st.mtimeMs) !== Math.trunc(claimed.mtimeMs)` (else every
 * accepted batch would be held as FILE_CHANGED).
 */
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { startE2e, waitFor } from '../e2e/harness.js';
import { discardWhenFailingAsExpected, dropFile, startInstances } from './instances.js';
import { pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a file with a fractional mtime', () => {
  const schema = useTestSchema();

  // Fails until the fix above is made: remove `.fails` then.
  it('is received and paid like any other', async () => {
    const discard = discardWhenFailingAsExpected();
    const e2e = discard(await startE2e());
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

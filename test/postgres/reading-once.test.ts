/**
 * PostgreSQL: a batch is read once, by one reader. With a shared database
 * the finish loop resumes the readings of batches whose lease it is granted
 * (src/daemon/file-reception.ts resumeReading), and that used to include a batch
 * this very process was reading, since an instance renews its own leases:
 * the second reader cleared the rows the first had written and read again
 * (duplicate-key inserts, a batch COMPLETE with an empty result while its
 * rows sat READY). Now only a start resumes this instance's own readings,
 * and the lease is renewed for the whole reading. Any read longer than a
 * finish pass (1 s) showed it, so this test reads 10,000 rows on a single
 * instance.
 */
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { startE2e, waitFor } from '../e2e/harness.js';
import { dropFile, startInstances } from './instances.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

const ROWS = 10_000;

describe.skipIf(!pgReachable)('postgres: reading a batch', () => {
  const schema = useTestSchema();

  it('reads a large file once, in one reader, into exactly its rows', { timeout: 90_000 }, async () => {
    const e2e = await startE2e({ balances: { USDT: '100000000', USDC: '100000000' } });
    const instances = await startInstances(e2e, schema, { inbox: { stableForMs: 200, rescanIntervalMs: 300 } });
    await instances.configure('solo');
    const solo = await instances.start('solo');

    await dropFile(e2e, 'large.csv', toCsv(makeRows('PG-READ', ROWS)));
    // Fails fast on the first sign of a second reader.
    await waitFor(
      () => {
        const second = solo.logs.find((l) => l.msg?.startsWith('resuming the reading'));
        if (second) throw new Error(`a second reading of batch ${String(second.batchId)} started while the first was going on`);
        const failed = solo.logs.find((l) => l.msg?.startsWith('work loop pass failed'));
        if (failed) throw new Error(`work loop pass failed: ${JSON.stringify(failed.err).slice(0, 300)}`);
        return solo.logs.find((l) => l.msg === 'batch accepted');
      },
      'the batch to be accepted',
      60_000,
    );
    // A graceful stop lets passes already started finish: a second reader would have shown.
    expect(await solo.stop()).toBe(0);

    expect(solo.logs.filter((l) => l.msg === 'batch accepted')).toHaveLength(1);
    expect(solo.logs.filter((l) => l.msg?.startsWith('resuming the reading'))).toEqual([]);
    expect(solo.logs.filter((l) => l.level === 'error' || l.level === 'fatal')).toEqual([]);
    const [batch] = await e2e.batches();
    expect([batch?.state, batch?.rowCount, batch?.validCount]).toEqual(['ACTIVE', ROWS, ROWS]);
    const [rows] = await pgQuery<{ n: number; lines: number }>(
      schema.url,
      'select count(*)::int as n, count(distinct line)::int as lines from payouts',
    );
    expect(rows).toEqual({ n: ROWS, lines: ROWS });
  });
});

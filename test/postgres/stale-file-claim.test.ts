/**
 * PostgreSQL: a file claimed in the database by an instance that never
 * renamed it (it died between the two steps, or the rename threw) must not
 * stay in the inbox for good. Here the claim of a dead instance "ghost" is
 * written before the file arrives; a live instance takes the file once the
 * claim is older than the lease (the finish pass of src/daemon/daemon.ts
 * releases file claims older than instance.leaseMs).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { dropFile, startShortLease } from './instances.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

const LEASE_MS = 4000;

describe.skipIf(!pgReachable)('postgres: a file claimed by an instance that never took it', () => {
  const schema = useTestSchema();

  it('is taken by a live instance once the claim is older than the lease', { timeout: 60_000 }, async () => {
    const { e2e, instances } = await startShortLease(schema, 'live', LEASE_MS);

    // The file in the inbox before any instance runs, and the ghost's claim on it (the key onCandidate builds).
    await dropFile(e2e, 'ghost.csv', toCsv(makeRows('PG-GHOST', 2)), Math.floor(Date.now() / 1000) - 60);
    const st = await stat(join(e2e.inbox, 'ghost.csv'));
    const key = `ghost.csv|${st.size}|${Math.trunc(st.mtimeMs)}|${st.ino}`;
    await pgQuery(schema.url, 'insert into file_claims (file_key, instance_id, claimed_at) values ($1, $2, $3)', [
      key,
      'ghost',
      Date.now() - 10 * LEASE_MS,
    ]);

    await instances.start('live');
    const batch = await e2e.waitForBatch('ghost.csv', ['COMPLETE'], 8 * LEASE_MS);
    expect(batch.counts).toEqual({ PAID: 2 });
  });
});

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
import { startE2e } from '../e2e/harness.js';
import { dropFile, startInstances } from './instances.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

const LEASE_MS = 4000;

describe.skipIf(!pgReachable)('postgres: a file claimed by an instance that never took it', () => {
  const schema = useTestSchema();

  it('is taken by a live instance once the claim is older than the lease', { timeout: 60_000 }, async () => {
    const e2e = await startE2e();
    const instances = await startInstances(e2e, schema, {
      inbox: { stableForMs: 200, rescanIntervalMs: 300 },
      instance: { leaseMs: LEASE_MS },
      api: { timeoutMs: LEASE_MS / 2 - 100 }, // under half the lease (config refuses more)
    });
    await instances.configure('live');
    expect((await instances.cli('live', ['migrate'])).code).toBe(0);

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

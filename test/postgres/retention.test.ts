/** PostgreSQL: archive and retention, the checks of test/finance/retention.test.ts on this engine. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { RETENTION_CHECKS, type RetentionWorld } from '../finance/retention-checks.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: archive and retention', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-pg-retention-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const world = (): RetentionWorld => ({ db: store.db, dir });

  for (const [name, check] of RETENTION_CHECKS) it(name, () => check(world()));
});

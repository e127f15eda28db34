/** PostgreSQL: archive and retention, the checks of test/finance/retention.test.ts on this engine. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import {
  checkArchive,
  checkOwnStateDir,
  checkPrune,
  checkResumedMove,
  checkSchedule,
  type RetentionWorld,
} from '../finance/retention-checks.js';
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

  it('archives the taken files of finished batches by day and batch id, once, and leaves unfinished ones', () => checkArchive(world()));
  it('archives only the batches of its own state folder; a lost race changes nothing', () => checkOwnStateDir(world()));
  it('finishes a move that stopped before the record was updated', () => checkResumedMove(world()));
  it('prunes what is older than retention.days: files and row details, keeping references and payout ids', () => checkPrune(world()));
  it('the daemon archives at each pass and prunes on its schedule only with retention.days set', () => checkSchedule(world()));
});

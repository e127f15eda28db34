/**
 * PostgreSQL: the counts a batch keeps once it ended (src/store/counts.ts) and migration 0009, with this
 * engine's counts (bigint, as text) and its ALTER TABLE; the checks are those of test/store on SQLite.
 */
import { afterEach, beforeEach, describe, it } from 'vitest';
import { migrateToLatest, type Database } from '../../src/store/db.js';
import { checkCountsOfEveryBatch, checkFinalCountsMigration } from '../store/final-counts.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: row counts kept by a batch that ended', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeEach(async () => {
    // Each check starts from an empty schema at the latest migration.
    db = await openEmptySchema(schema);
    await migrateToLatest(db);
  });
  afterEach(async () => {
    await db.destroy();
  });

  it('the counts over every batch are a count of every row: kept counts and counted rows, each once', () => checkCountsOfEveryBatch(db));

  it('migration 0009 counts the batches that ended before it, none with a row that may still move', () => checkFinalCountsMigration(db));
});

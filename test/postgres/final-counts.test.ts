/**
 * PostgreSQL: the counts a batch keeps once it ended (src/store/counts.ts) and migration 0009, with this
 * engine's counts (bigint, as text) and its ALTER TABLE; the checks are those of test/store on SQLite.
 */
import { describe, it } from 'vitest';
import { checkCountsOfEveryBatch, checkFinalCountsMigration } from '../store/final-counts.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: row counts kept by a batch that ended', () => {
  const schema = useTestSchema();
  // Each check starts from an empty schema at the latest migration.
  const store = useEmptySchema(schema, { latest: true });

  it('the counts over every batch are a count of every row: kept counts and counted rows, each once', () =>
    checkCountsOfEveryBatch(store.db));

  it('migration 0009 counts the batches that ended before it, none with a row that may still move', () =>
    checkFinalCountsMigration(store.db));
});

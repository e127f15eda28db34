/**
 * PostgreSQL: insertRows splits a call's rows across statements at the bound-value limit and stores every
 * column exactly at any count; the checks are those of test/store on SQLite.
 */
import { beforeEach, describe, it } from 'vitest';
import { addBatch } from '../store/held-references.js';
import { checkStoresExactly, ROW_COUNTS } from '../store/insert-rows.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: insertRows', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });
  beforeEach(async () => {
    for (const id of ['B1', 'B2']) await addBatch(store.db, id);
  });

  for (const count of ROW_COUNTS) {
    it(`stores ${count} rows exactly, in a transaction and without one`, () => checkStoresExactly(store.db, count));
  }
});

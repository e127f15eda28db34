/** PostgreSQL: clearing and pruning a large batch a range of rows at a time; the checks are test/store's on SQLite. */
import { describe, it } from 'vitest';
import { checkClearInRanges, checkPruneInRanges } from '../store/line-ranges.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: changes to every row of a large batch', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('clears a batch for a new reading a range at a time, its history and errors too', () => checkClearInRanges(store.db));
  it('prunes a finished batch a range at a time, keeping references and payout ids', () => checkPruneInRanges(store.db));
});

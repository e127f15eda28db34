/** PostgreSQL: the acceptance of a file sent again and of a large refused file; the checks are test/store's on SQLite. */
import { describe, it } from 'vitest';
import { checkFileSentAgain, checkLargeFileRefused, checkLargeFileSentAgain } from '../store/acceptance-marks.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: the acceptance of a file sent again', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('marks every row in a number of statements that does not grow with the rows', () => checkFileSentAgain(store.db));
  it('marks a large file sent again a range at a time, a reference twice in it a duplicate in the file', () =>
    checkLargeFileSentAgain(store.db));
  it('lets every valid row of a large refused file go, a range at a time', () => checkLargeFileRefused(store.db));
});

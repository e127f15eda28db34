/** PostgreSQL: the acceptance of a file sent again; the check is test/store's on SQLite. */
import { describe, it } from 'vitest';
import { checkFileSentAgain } from '../store/acceptance-marks.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: the acceptance of a file sent again', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('marks every row in a number of statements that does not grow with the rows', () => checkFileSentAgain(store.db));
});

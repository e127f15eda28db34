/** PostgreSQL: the acceptance's check of references that lost their leading zeros; the checks are test/store's on SQLite. */
import { describe } from 'vitest';
import { referenceZerosChecks } from '../store/reference-zeros.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: references that lost their leading zeros', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  referenceZerosChecks(store);
});

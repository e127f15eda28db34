/**
 * PostgreSQL: the money cells a row keeps only where they were written otherwise than its request has
 * them, read with this engine's JSON operator; the checks are those of test/store on SQLite.
 */
import { describe, it } from 'vitest';
import { checkMoneyAsWritten } from '../store/written-money.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: money cells as written', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('result rows and the reconciliation report show the written text where kept, the request where not', () =>
    checkMoneyAsWritten(store.db));
});

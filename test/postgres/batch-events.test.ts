/** Batch events on PostgreSQL: the checks of test/store/batch-events.ts on this engine (several instances claim). */
import { describe, it } from 'vitest';
import { BATCH_EVENT_CHECKS } from '../store/batch-events.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('batch events (PostgreSQL)', () => {
  const schema = useTestSchema();
  const t = useEmptySchema(schema, { latest: true });
  for (const [name, check] of BATCH_EVENT_CHECKS) it(name, () => check(t.db));
});

/** PostgreSQL: the 24-hour total of a batch an operator cancelled counts what was or may have been sent (../store/rolling-states.ts). */
import { describe, it } from 'vitest';
import { checkCancelledBatchCountsWhatMayHaveBeenSent, checkDecisionReadsNoRowsUnderLock } from '../store/rolling-states.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: the 24-hour total of a cancelled batch', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('counts the rows that were or may have been sent, by state', () => checkCancelledBatchCountsWhatMayHaveBeenSent(store.db));

  it('reads the rows of a cancelled batch before the decision takes its lock', () => checkDecisionReadsNoRowsUnderLock(store.db));
});

/**
 * PostgreSQL, two instances on one schema: the outcome of a create whose row the other instance took over and
 * claimed again is refused (test/pipeline/taken-over-claim.ts), in the multi-row guarded update as well.
 */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from '../pipeline/harness.js';
import { lateOutcomeAfterTakeover, type LateOutcome } from '../pipeline/taken-over-claim.js';
import { latestSchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a create outcome after another instance claimed its row again', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);

  it.each<LateOutcome>(['stopped', 'abandoned', 'created'])('%s: left to the claim that holds the row', async (how) => {
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      database: latestSchema(schema),
    });
    await lateOutcomeAfterTakeover(p, how);
  });
});

/** PostgreSQL: a webhook while the query of its payout is on the wire keeps the row due (test/pipeline/webhook-during-poll.ts). */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from '../pipeline/harness.js';
import { webhookDuringPoll } from '../pipeline/webhook-during-poll.js';
import { latestSchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a webhook while the query of its payout is on the wire', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);

  it('keeps the row due: the PENDING answer on the wire does not push its next poll back', async () => {
    const p = await startPipeline({ poller: { minIntervalMs: 60_000, maxIntervalMs: 300_000 }, database: latestSchema(schema) });
    await webhookDuringPoll(p);
  });
});

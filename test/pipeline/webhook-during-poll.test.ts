/** SQLite: a webhook while the query of its payout is on the wire keeps the row due (./webhook-during-poll.ts). */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from './harness.js';
import { webhookDuringPoll } from './webhook-during-poll.js';

afterEach(closePipelines);

describe('a webhook while the query of its payout is on the wire', () => {
  it.each([true, false])(
    'keeps the row due: the PENDING answer on the wire does not push its next poll back (exclusive: %s)',
    async (exclusive) => {
      await webhookDuringPoll(await startPipeline({ poller: { exclusive, minIntervalMs: 60_000, maxIntervalMs: 300_000 } }));
    },
  );
});

/** PostgreSQL: an answer read before a webhook followed up while it was on its way settles nothing (test/pipeline/final-answer-before-webhook.ts). */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from '../pipeline/harness.js';
import { droppedAnswerDueAtOnce, finalAnswerBeforeWebhook, unknownAnswerBeforeWebhook } from '../pipeline/final-answer-before-webhook.js';
import { closeAll } from '../webhook/helpers.js';
import { latestSchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: an answer on its way back while a webhook about its payout is followed up', () => {
  const schema = useTestSchema();
  afterEach(async () => {
    await closeAll();
    await closePipelines();
  });

  it('does not settle the row: the next query does (instances share claims)', async () => {
    await finalAnswerBeforeWebhook(await startPipeline({ database: latestSchema(schema) }), { exclusive: false });
  });

  it('does not settle a row waiting on an unknown create outcome: the next query of its reference does', async () => {
    await unknownAnswerBeforeWebhook(await startPipeline({ database: latestSchema(schema) }));
  });

  it('nor when another instance claims the row in the same millisecond as the claim and the event', async () => {
    await unknownAnswerBeforeWebhook(await startPipeline({ database: latestSchema(schema) }), true);
  });

  it('leased claims: a row whose final answer was not recorded is due at once, not after a lease', async () => {
    await droppedAnswerDueAtOnce(await startPipeline({ database: latestSchema(schema) }));
  });
});

/** SQLite: an answer read before a webhook that was followed up while it was on its way settles nothing (./final-answer-before-webhook.ts). */
import { afterEach, describe, it } from 'vitest';
import { closeAll } from '../webhook/helpers.js';
import { droppedAnswerDueAtOnce, finalAnswerBeforeWebhook, unknownAnswerBeforeWebhook } from './final-answer-before-webhook.js';
import { closePipelines, startPipeline } from './harness.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

describe('an answer on its way back while a webhook about its payout is followed up', () => {
  it.each([true, false])('does not settle the row: the next query does (exclusive: %s)', async (exclusive) => {
    await finalAnswerBeforeWebhook(await startPipeline(), { exclusive });
  });

  it('does not settle a row waiting on an unknown create outcome: the next query of its reference does', async () => {
    await unknownAnswerBeforeWebhook(await startPipeline());
  });

  it('nor when another instance claims the row in the same millisecond as the claim and the event', async () => {
    await unknownAnswerBeforeWebhook(await startPipeline(), true);
  });

  it('leased claims: a row whose final answer was not recorded is due at once, not after a lease', async () => {
    await droppedAnswerDueAtOnce(await startPipeline());
  });
});

/** SQLite: a final answer read before a webhook that was followed up while it was on its way settles nothing (./final-answer-before-webhook.ts). */
import { afterEach, describe, it } from 'vitest';
import { closeAll } from '../webhook/helpers.js';
import { finalAnswerBeforeWebhook } from './final-answer-before-webhook.js';
import { closePipelines, startPipeline } from './harness.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

describe('a final answer on its way back while a webhook about its payout is followed up', () => {
  it.each([true, false])('does not settle the row: the next query does (exclusive: %s)', async (exclusive) => {
    await finalAnswerBeforeWebhook(await startPipeline(), { exclusive });
  });
});

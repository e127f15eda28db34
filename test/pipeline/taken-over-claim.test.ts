/**
 * SQLite: the outcome of a create whose row another instance took over and claimed again is refused
 * (./taken-over-claim.ts). One daemon alone on SQLite never meets it; two submitters on one file do.
 */
import { afterEach, describe, it } from 'vitest';
import { closePipelines, startPipeline } from './harness.js';
import { lateOutcomeAfterTakeover, type LateOutcome } from './taken-over-claim.js';

describe('a create outcome after another instance claimed its row again', () => {
  afterEach(closePipelines);

  it.each<LateOutcome>(['stopped', 'abandoned', 'created'])('%s: left to the claim that holds the row', async (how) => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await lateOutcomeAfterTakeover(p, how);
  });
});

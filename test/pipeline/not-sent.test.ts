/**
 * Creates the daemon stops before they leave: a stop (the grace period aborting calls) that finds a create
 * waiting out a rate-limit pause, or its credentials' token call waiting to be tried again, puts the row back
 * READY, not sent, promptly; it is never an unknown outcome.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, PayoutApiClient } from '../../src/api/index.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { CREATE_PATH, closePipelines, payoutRequest, startPipeline } from './harness.js';

afterEach(closePipelines);

/** A pass of `submitter` whose pass and call signals abort after `afterMs`; resolves with how long the pass took. */
async function passStoppedAfter(submitter: PayoutSubmitter, afterMs: number): Promise<number> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(new Error('grace period over')), afterMs);
  const started = performance.now();
  try {
    await submitter.runOnce(stop.signal, stop.signal);
  } finally {
    clearTimeout(timer);
  }
  return performance.now() - started;
}

describe('a create stopped before it left', () => {
  it('while it waits out a Retry-After: READY, not sent, nothing created', async () => {
    const p = await startPipeline({ submitter: { concurrency: 1 } });
    const batchId = await p.insertReadyBatch([payoutRequest('RL-1'), payoutRequest('RL-2')]);
    // One create passes; the next is refused with a Retry-After far longer than the test.
    p.sandbox.setFaults({ rateLimit: { requestsPerSecond: 0.001, burst: 1, retryAfterSeconds: 30 }, endpoints: [CREATE_PATH] });
    const took = await passStoppedAfter(p.submitter, 500);
    expect(took).toBeLessThan(5000);
    expect(await p.states(batchId)).toEqual(['PENDING', 'READY']);
    expect(await p.events('RL-2')).toEqual(['intent', 'not-sent']);
    expect((await p.row('RL-2')).createAttempts).toBe(0);
    expect(p.ledgerCount('RL-2')).toBe(0);
    expect(p.sandbox.stats().faults.rateLimited).toBe(1);
  });

  it('while its token call waits to be tried again: the wait ends with the stop; READY, not sent', async () => {
    const p = await startPipeline();
    p.sandbox.setFaults({ rateLimit: { requestsPerSecond: 0.001, burst: 1, retryAfterSeconds: 60 }, endpoints: [ENDPOINTS.accessToken] });
    await p.client.balances(); // takes the one token call the limit lets through
    // A client of its own, without credentials yet: its token call is refused with a Retry-After of a minute.
    const submitter = new PayoutSubmitter(
      {
        db: p.db,
        service: new PayoutApiClient(p.clientOptions),
        clock: p.clock,
        monotonic: p.monotonic,
        logger: p.logger,
        holds: p.holds,
        random: () => 0.5,
      },
      p.submitterOptions,
    );
    const batchId = await p.insertReadyBatch([payoutRequest('TW-1')]);
    const took = await passStoppedAfter(submitter, 500);
    expect(took).toBeLessThan(5000);
    expect(await p.states(batchId)).toEqual(['READY']);
    expect(await p.events('TW-1')).toEqual(['intent', 'not-sent']);
    expect(p.createRequests()).toBe(0);
    expect(p.sandbox.stats().faults.rateLimited).toBe(1);
  });
});

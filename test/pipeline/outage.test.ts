/**
 * Calm in outages: the payout service unreachable for 30 s (a TCP proxy
 * switched off in front of the sandbox, the daemon's passes driven on a
 * ManualClock) costs one probe per backoff step and nothing else: no row is
 * touched, failed or charged an attempt, and every row is paid exactly once
 * when the service is back. And a rate-limited service (429 / 1429 with
 * Retry-After) pauses the whole sender, not one row.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import { backoffDelay } from '../../src/domain/backoff.js';
import type { ServiceState } from '../../src/domain/service-health.js';
import { CREATE_PATH, closePipelines, payoutRequest, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

/** Every history entry of every row, in the order written. */
async function historyCount(p: Pipeline): Promise<number> {
  const r = (await p.db('payout_history').count({ n: '*' }).first()) as { n: number | string };
  return Number(r.n);
}

describe('pipeline: the payout service unreachable', () => {
  it('for 30 s: one probe per backoff step, no row touched or charged, every row PAID exactly once once it is back', async () => {
    const probe = { baseMs: 1000, maxMs: 8000 };
    const exchanges: { at: number; endpoint: string; outcome: string }[] = [];
    // The proxy goes off once this many creates were answered: the outage starts in the middle of the pass.
    let answeredBeforeOutage = 8;
    const p: Pipeline = await startPipeline({
      proxy: true,
      breaker: { failureThreshold: 5, probe },
      sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 0 } },
      submitter: { concurrency: 4 },
      client: { retry: { maxAttempts: 4 } },
      onApiCall: (c) => {
        exchanges.push({ at: p.clock.now(), endpoint: c.endpoint, outcome: c.outcome });
        if (c.endpoint === CREATE_PATH && c.outcome === 'ok' && --answeredBeforeOutage === 0) void p.proxy?.off();
      },
    });
    const breaker = p.breaker as NonNullable<Pipeline['breaker']>;
    const transitions: { at: number; to: ServiceState }[] = [];
    breaker.onChange((t) => transitions.push({ at: p.clock.now(), to: t.to }));
    const refs = Array.from({ length: 40 }, (_, i) => `OUT-${i + 1}`);
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));

    // The pass the service goes away in: creates cut on the wire become UNKNOWN, the others are put back unsent.
    await p.submit();
    expect(breaker.health().state).toBe('open');
    const openedAt = breaker.health().since;
    const rowsAtOutage = await p.rows(batchId);
    expect(rowsAtOutage.filter((r) => r.state === 'READY').length).toBeGreaterThan(20);
    const written = await historyCount(p);

    // 30 s of passes, every 100 ms, with nothing listening.
    const outageFrom = exchanges.length;
    const start = p.clock.now();
    for (let t = 0; t < 300; t++) {
      p.clock.advance(100);
      await p.submit();
      await p.poll();
    }
    const attempts = exchanges.slice(outageFrom);

    // Each probe at the first pass after its backoff step (jitter fixed at 0.5), and nothing else.
    const expected: number[] = [];
    for (let step = 1, due = openedAt + backoffDelay(1, probe, () => 0.5); ;) {
      const at = start + Math.ceil((due - start) / 100) * 100;
      if (at > start + 30_000) break;
      expected.push(at);
      step++;
      due = at + backoffDelay(step, probe, () => 0.5);
    }
    expect(expected.length).toBeGreaterThan(4);
    expect(attempts.map((a) => a.at)).toEqual(expected);
    expect(new Set(attempts.map((a) => `${a.endpoint} ${a.outcome}`))).toEqual(new Set([`${ENDPOINTS.balances} TRANSPORT_CONNECT`]));
    // Rows untouched: not one history entry, state or attempt changed.
    expect(await historyCount(p)).toBe(written);
    expect(await p.rows(batchId)).toEqual(rowsAtOutage);

    // Back: the next probe closes the breaker; unknown outcomes are resolved by query, the rest is sent.
    await p.proxy?.on();
    for (let i = 0; i < 400; i++) {
      const states = await p.states(batchId);
      if (states.every((s) => s === 'PAID')) break;
      p.clock.advance(250);
      await p.submit();
      await p.poll();
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(new Set(await p.states(batchId))).toEqual(new Set(['PAID']));
    for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);
    expect(transitions.map((t) => t.to).filter((s) => s !== 'half-open')).toEqual([
      'open',
      ...expected.map(() => 'open' as const),
      'closed',
    ]);
    for (const row of await p.rows(batchId)) {
      const events = await p.events(row.merchantReferenceId);
      // Only creates that may have reached the service count as attempts; none was deferred or failed.
      const sent = events.filter((e) => e === 'intent').length - events.filter((e) => e === 'not-sent').length;
      expect(row.createAttempts, `${row.merchantReferenceId}: ${events.join(' ')}`).toBe(sent);
      expect(events).not.toContain('create-deferred');
    }
    expect(p.logLines.filter((l) => l.includes('create deferred'))).toEqual([]);
  });
});

describe('pipeline: a rate-limited service', () => {
  it('429 / 1429 with Retry-After: the whole sender waits it out, not one row; no row fails', async () => {
    const creates: { start: number; end: number; outcome: string }[] = [];
    const pauses: { from: number; ms: number }[] = [];
    const p = await startPipeline({
      submitter: { concurrency: 4 },
      client: {
        retry: { maxAttempts: 4 },
        onRateLimited: (ms) => pauses.push({ from: performance.now(), ms }),
      },
      onApiCall: (c) => {
        if (c.endpoint !== CREATE_PATH) return;
        const end = performance.now();
        creates.push({ start: end - c.durationMs, end, outcome: c.outcome });
      },
    });
    // Answers take 20-60 ms, so the creates in flight do not all meet the limit at the same moment.
    p.sandbox.setFaults({
      rateLimit: { requestsPerSecond: 4, burst: 2, retryAfterSeconds: 1 },
      latencyMs: [20, 60],
      endpoints: [CREATE_PATH],
    });
    const refs = Array.from({ length: 12 }, (_, i) => `RL-${i + 1}`);
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));
    for (let i = 0; i < 30; i++) {
      await p.submit();
      if ((await p.states(batchId)).every((s) => s === 'PENDING')) break;
      p.clock.advance(1000);
    }
    expect(new Set(await p.states(batchId))).toEqual(new Set(['PENDING']));
    for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);

    const limited = creates.filter((c) => c.outcome === '1429' || c.outcome === 'HTTP_429');
    expect(limited.length, 'the limit was met').toBeGreaterThan(0);
    expect(pauses.length, 'the sender paused').toBeGreaterThan(0);
    for (const pause of pauses) expect(pause.ms, 'the Retry-After waited out').toBe(1000);
    // No create leaves while a pause runs: none starts from the moment the sender took in a 429 until its
    // Retry-After is over (a few ms of slack at the end for the timers). A pause starts when the 429 is taken
    // in, not when it arrived: creates already on the wire, or leaving in between, may still come back 429.
    const duringPause = creates.filter((c) => pauses.some((q) => c.start > q.from && c.start < q.from + q.ms - 20));
    expect(duringPause).toEqual([]);
  });
});

/**
 * The poll schedule as numbers: the backoff, the round it stretches to when
 * the poller cannot ask about every pending payout within it, and the call
 * rate it measures (no timers: times are plain milliseconds).
 */
import { describe, expect, it } from 'vitest';
import {
  CallRate,
  MIN_RATE_SAMPLE,
  ROUND_HEADROOM,
  nextPollDelay,
  roundMs,
  pollIntervalBound,
  pollIsRecorded,
} from '../../src/poll/index.js';

const o = { minIntervalMs: 2000, maxIntervalMs: 300_000, queryMaxIds: 100 };

describe('poll schedule', () => {
  it('backs off from minIntervalMs, doubling per poll, capped at maxIntervalMs', () => {
    expect([1, 2, 3, 4].map((k) => nextPollDelay(k, o))).toEqual([2000, 4000, 8000, 16_000]);
    expect(nextPollDelay(0, o)).toBe(2000);
    expect(nextPollDelay(50, o)).toBe(300_000);
  });

  it('keeps the backoff while the rate is unmeasured or a round fits in it', () => {
    expect(pollIntervalBound(1, o, { pending: 100_000, callsPerSecond: null })).toBe(2000);
    expect(pollIntervalBound(1, o, { pending: 0, callsPerSecond: 100 })).toBe(2000);
    // 250 payouts: 3 calls at 100/s, well inside 2 s.
    expect(pollIntervalBound(1, o, { pending: 250, callsPerSecond: 100 })).toBe(2000);
    expect(pollIntervalBound(3, o, { pending: 250, callsPerSecond: 100 })).toBe(8000);
  });

  it('stretches to one round at the sustained rate (with headroom) when the backlog cannot be served within the interval', () => {
    // 100,000 payouts = 1,000 calls; at 125 calls/s a round is 8 s, planned with headroom.
    const round = roundMs({ pending: 100_000, callsPerSecond: 125 }, 100);
    expect(round).toBe(8000 * ROUND_HEADROOM);
    expect(pollIntervalBound(1, o, { pending: 100_000, callsPerSecond: 125 })).toBe(round);
    expect(pollIntervalBound(2, o, { pending: 100_000, callsPerSecond: 125 })).toBe(round);
    // A payout whose backoff is already longer keeps it: never below the backoff.
    expect(pollIntervalBound(5, o, { pending: 100_000, callsPerSecond: 125 })).toBe(32_000);
    // Partial calls count as calls.
    expect(roundMs({ pending: 100_001, callsPerSecond: 125 }, 100)).toBe(Math.ceil((1001 / 125) * 1000 * ROUND_HEADROOM));
  });

  it('never stretches beyond maxIntervalMs, nor below minIntervalMs', () => {
    expect(pollIntervalBound(1, o, { pending: 10_000_000, callsPerSecond: 1 })).toBe(300_000);
    expect(pollIntervalBound(1, { ...o, maxIntervalMs: 5000 }, { pending: 100_000, callsPerSecond: 10 })).toBe(5000);
    expect(pollIntervalBound(1, o, { pending: 1, callsPerSecond: 1e9 })).toBe(2000);
  });
});

describe('poll history', () => {
  const idle = { pending: 10, callsPerSecond: 100 };

  it('records a poll while the interval it states still changes, and none after the backoff reached its cap', () => {
    const recorded = Array.from({ length: 400 }, (_, i) => i + 1).filter((k) => pollIsRecorded(k, o, idle));
    // 2 s doubling to the 300 s cap: 2, 4, … 256 s, then 300 s, then the same 300 s for ever.
    expect(recorded).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(nextPollDelay(8, o)).toBe(256_000);
    expect(nextPollDelay(9, o)).toBe(300_000);
  });

  it('records every poll whose round outlasts its backoff (it states the bound), and still none at the cap', () => {
    // 100,000 pending at 125 calls/s: a round of 10 s, longer than the backoff of the first three polls.
    const busy = { pending: 100_000, callsPerSecond: 125 };
    expect(pollIntervalBound(3, o, busy)).toBeGreaterThan(nextPollDelay(3, o));
    expect([1, 2, 3, 4, 9, 10, 500].map((k) => pollIsRecorded(k, o, busy))).toEqual([true, true, true, true, true, false, false]);
    // A cap of 16 s: the backoff reaches it at the 4th poll, and a 30 s round is cut to the cap as well.
    const low = { ...o, maxIntervalMs: 16_000 };
    const slow = { pending: 100_000, callsPerSecond: 40 };
    expect([4, 5, 6].map((k) => pollIsRecorded(k, low, slow))).toEqual([true, false, false]);
  });
});

describe('call rate', () => {
  it('is unknown until enough answers were timed', () => {
    const rate = new CallRate();
    expect(rate.perSecond()).toBeNull();
    expect(rate.perSecond(MIN_RATE_SAMPLE - 1, 1000)).toBeNull();
    expect(rate.perSecond(MIN_RATE_SAMPLE, 0)).toBeNull();
    expect(rate.perSecond(MIN_RATE_SAMPLE, 1000)).toBe(MIN_RATE_SAMPLE);
  });

  it('counts the running pass with recent passes, older ones weighing half at each pass', () => {
    const rate = new CallRate();
    rate.add(100, 1000); // 100/s
    expect(rate.perSecond()).toBe(100);
    // A running pass at 50/s so far: (100 + 50) calls over (1000 + 1000) ms.
    expect(rate.perSecond(50, 1000)).toBe(75);
    rate.add(50, 1000); // (50 + 50) / (500 + 1000)
    expect(rate.perSecond()).toBeCloseTo(66.67, 1);
    for (let i = 0; i < 20; i++) rate.add(50, 1000);
    expect(rate.perSecond()).toBeCloseTo(50, 3);
  });

  it('ignores passes without timed answers', () => {
    const rate = new CallRate();
    rate.add(0, 500);
    rate.add(10, 0);
    expect(rate.perSecond()).toBeNull();
  });
});

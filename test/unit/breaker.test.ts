/**
 * The payout service's circuit breaker (src/api/breaker.ts) on a ManualClock:
 * it opens after the threshold of failures in a row, admits one probe per
 * step of the backoff schedule, closes at the first answer, and tells each
 * transition once. And the credentials' life (src/api/tokens.ts): counted from
 * the request, or from the service's timestamp only when that says older.
 */
import { describe, expect, it } from 'vitest';
import { ServiceBreaker, type BreakerTransition } from '../../src/api/breaker.js';
import { credentialTimes } from '../../src/api/tokens.js';
import { backoffDelay } from '../../src/domain/backoff.js';
import { ManualClock } from '../../src/domain/clock.js';
import { serviceHealthLine } from '../../src/domain/service-health.js';

const probe = { baseMs: 1000, maxMs: 4000 };
const half = (): number => 0.5;

function breaker(): { b: ServiceBreaker; clock: ManualClock; seen: BreakerTransition[] } {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const b = new ServiceBreaker({ failureThreshold: 3, probe, clock, random: half });
  const seen: BreakerTransition[] = [];
  b.onChange((t) => seen.push(t));
  return { b, clock, seen };
}

describe('ServiceBreaker', () => {
  it('opens after failureThreshold failures in a row; an answer in between starts the count again', () => {
    const { b, clock, seen } = breaker();
    b.failed('ECONNREFUSED');
    b.failed('ECONNREFUSED');
    b.answered();
    b.failed('ECONNREFUSED');
    b.failed('ECONNREFUSED');
    expect(b.closed).toBe(true);
    expect(b.admit()).toBe('call');
    clock.advance(5);
    b.failed('HTTP_503');
    expect(b.health()).toEqual({ state: 'open', since: clock.now(), lastErrorCode: 'HTTP_503' });
    expect(seen.map((t) => `${t.from}>${t.to}`)).toEqual(['closed>open']);
    expect(seen[0]?.nextProbeAt).toBe(clock.now() + backoffDelay(1, probe, half));
  });

  it('while open: refuses calls, admits one probe per backoff step, and closes at the first answer', () => {
    const { b, clock, seen } = breaker();
    for (let i = 0; i < 3; i++) b.failed('ECONNREFUSED');
    const openedAt = clock.now();
    const probes: number[] = [];
    for (let t = 0; t < 12_000; t += 50) {
      clock.advance(50);
      const admitted = b.admit();
      if (admitted === null) continue;
      expect(admitted).toBe('probe');
      probes.push(clock.now() - openedAt);
      // A second caller while the probe is out is refused.
      expect(b.admit()).toBeNull();
      b.failed('ECONNREFUSED');
    }
    // Steps of 750, 1500, 3000, 3000, 3000 ms (half to all of the capped doubling; jitter fixed at the middle).
    expect(probes).toEqual([750, 2250, 5250, 8250, 11250]);
    expect(b.health().since).toBe(openedAt);
    clock.advance(3000);
    expect(b.probeDue()).toBe(true);
    expect(b.admit()).toBe('probe');
    b.answered();
    expect(b.closed).toBe(true);
    const closed = seen.at(-1) as BreakerTransition;
    expect([closed.from, closed.to, closed.downForMs, closed.failedProbes]).toEqual(['half-open', 'closed', clock.now() - openedAt, 5]);
    expect(seen.filter((t) => t.to === 'closed')).toHaveLength(1);
    expect(seen.filter((t) => t.from === 'closed')).toHaveLength(1);
  });

  it('a probe abandoned without a verdict lets the next call probe at once', () => {
    const { b, clock } = breaker();
    for (let i = 0; i < 3; i++) b.failed('ECONNREFUSED');
    clock.advance(750);
    expect(b.admit()).toBe('probe');
    b.probeAbandoned();
    expect(b.health().state).toBe('open');
    expect(b.admit()).toBe('probe');
  });

  it('says in one line since when the service is unreachable, and nothing while it is reachable', () => {
    const at = new Date(2026, 0, 1, 12, 3, 10).getTime();
    expect(serviceHealthLine({ state: 'open', since: at, lastErrorCode: 'ECONNREFUSED' }, at + 60_000)).toBe(
      'payout service unreachable since 12:03:10 (ECONNREFUSED), sending paused',
    );
    expect(serviceHealthLine({ state: 'half-open', since: at, lastErrorCode: null }, at + 86_400_000)).toBe(
      'payout service unreachable since 2026-01-01 12:03:10, sending paused',
    );
    expect(serviceHealthLine({ state: 'closed', since: at, lastErrorCode: 'ECONNREFUSED' }, at)).toBeNull();
  });
});

describe('credentials: their life by the clock that matters', () => {
  const requestedAt = Date.UTC(2026, 0, 1, 12);
  const base = { requestedAt, receivedAt: requestedAt + 1800, accessExpiresInSeconds: 3, refreshExpiresInSeconds: 60 };

  it('counts from the request, not the answer', () => {
    expect(credentialTimes({ ...base, issuedAtByService: null })).toEqual({
      issuedAt: requestedAt,
      receivedAt: requestedAt + 1800,
      accessExpiresAt: requestedAt + 3000,
      refreshExpiresAt: requestedAt + 60_000,
    });
  });

  it("counts from the service's timestamp when it says the credentials are older than the request", () => {
    const older = requestedAt - 2000;
    expect(credentialTimes({ ...base, receivedAt: requestedAt + 100, issuedAtByService: older }).accessExpiresAt).toBe(older + 3000);
    // Within its one-second resolution of the request, or after it: the request counts.
    expect(credentialTimes({ ...base, issuedAtByService: requestedAt - 999 }).issuedAt).toBe(requestedAt);
    expect(credentialTimes({ ...base, issuedAtByService: requestedAt + 5000 }).issuedAt).toBe(requestedAt);
    // So far back the token would be dead on arrival: a clock out of step, not believed.
    expect(credentialTimes({ ...base, issuedAtByService: requestedAt - 3600_000 }).issuedAt).toBe(requestedAt);
  });

  it('has no refresh expiry when the service gives none', () => {
    expect(credentialTimes({ ...base, refreshExpiresInSeconds: null, issuedAtByService: null }).refreshExpiresAt).toBeNull();
  });
});

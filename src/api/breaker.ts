/**
 * ServiceBreaker: the one circuit breaker of the payout service. After `failureThreshold` calls in a row found
 * it unreachable it opens: one probe per backoff step, and the first answered call closes it. It only keeps
 * the state; the submitter and poller claim nothing while it is open. Listeners hear each transition once.
 */
import { backoffDelay, type BackoffPolicy } from '../domain/backoff.js';
import type { Clock } from '../domain/clock.js';
import type { ServiceHealth, ServiceState } from '../domain/service-health.js';

export interface BreakerOptions {
  /** Calls in a row that found the service unreachable before it opens. */
  failureThreshold: number;
  /** Delay before each probe while open: step 1 after opening, one step more per failed probe. */
  probe: BackoffPolicy;
  clock: Clock;
  random?: () => number;
}

export interface BreakerTransition {
  from: ServiceState;
  to: ServiceState;
  health: ServiceHealth;
  /** Closed again: how long the service was down, ms; otherwise null. */
  downForMs: number | null;
  /** Probes that failed since it opened. */
  failedProbes: number;
  /** Open: when the next probe is due (ms since the epoch); otherwise null. */
  nextProbeAt: number | null;
}

/** What admit() granted: a call while closed, or the one probe while open. */
export type Admission = 'call' | 'probe';

export class ServiceBreaker {
  private state: ServiceState = 'closed';
  private since: number;
  private lastErrorCode: string | null = null;
  private failures = 0;
  private failedProbes = 0;
  private nextProbeAt = 0;
  private readonly random: () => number;
  private readonly listeners = new Set<(t: BreakerTransition) => void>();

  constructor(private readonly o: BreakerOptions) {
    this.since = o.clock.now();
    this.random = o.random ?? Math.random;
  }

  health(): ServiceHealth {
    return { state: this.state, since: this.since, lastErrorCode: this.lastErrorCode };
  }

  get closed(): boolean {
    return this.state === 'closed';
  }

  /** Calls `listener` at each transition; returns what stops it. */
  onChange(listener: (t: BreakerTransition) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Open, and its probe is due. */
  probeDue(): boolean {
    return this.state === 'open' && this.o.clock.now() >= this.nextProbeAt;
  }

  /** May a call go out now? Always while closed; while open, only the probe when due (half-open), one at a time. */
  admit(): Admission | null {
    if (this.state === 'closed') return 'call';
    if (this.state === 'half-open' || this.o.clock.now() < this.nextProbeAt) return null;
    this.move('half-open');
    return 'probe';
  }

  /** A call found the service unreachable (`code`: ECONNREFUSED, HTTP_5XX, …). */
  failed(code: string): void {
    this.lastErrorCode = code;
    if (this.state === 'closed') {
      this.failures++;
      if (this.failures < this.o.failureThreshold) return;
      this.since = this.o.clock.now();
      this.failedProbes = 0;
      this.scheduleProbe();
      this.move('open');
    } else if (this.state === 'half-open') {
      this.failedProbes++;
      this.scheduleProbe();
      this.move('open');
    }
    // Open already: a call sent before it opened failed as well; only the code is kept.
  }

  /** The service answered a call: it is reachable. */
  answered(): void {
    this.failures = 0;
    if (this.state === 'closed') return;
    const now = this.o.clock.now();
    const downForMs = now - this.since;
    this.since = now;
    this.move('closed', downForMs);
  }

  /** The probe ended without telling anything (abandoned at shutdown): the next call may probe at once. */
  probeAbandoned(): void {
    if (this.state !== 'half-open') return;
    this.nextProbeAt = this.o.clock.now();
    this.move('open');
  }

  private scheduleProbe(): void {
    this.nextProbeAt = this.o.clock.now() + backoffDelay(this.failedProbes + 1, this.o.probe, this.random);
  }

  private move(to: ServiceState, downForMs: number | null = null): void {
    const from = this.state;
    this.state = to;
    const t: BreakerTransition = {
      from,
      to,
      health: this.health(),
      downForMs,
      failedProbes: this.failedProbes,
      nextProbeAt: to === 'open' ? this.nextProbeAt : null,
    };
    for (const listener of this.listeners) listener(t);
  }
}

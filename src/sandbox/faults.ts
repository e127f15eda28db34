/** Request fault decisions: which paths they target, the latency to add, and the rate limiter (a token bucket). */
import { performance } from 'node:perf_hooks';
import type { SandboxFaults, RateLimitFault } from './options.js';
import { BUSINESS_PATHS, type ApiPath } from './paths.js';
import type { Random } from './random.js';

export function faultsTarget(faults: SandboxFaults, path: ApiPath): boolean {
  return (faults.endpoints ?? BUSINESS_PATHS).includes(path);
}

/** The ms drawn from a `latencyMs` or `commitDelayMs` setting: a number, or [min, max] per request. */
export function latencyFor(l: SandboxFaults['latencyMs'], random: Random): number {
  if (typeof l === 'number') return l;
  return l[0] === l[1] ? l[0] : random.int(l[0], l[1]);
}

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(readonly limit: RateLimitFault) {
    this.tokens = limit.burst;
    this.last = performance.now();
  }

  /** Takes one token; false when the bucket is empty (the request is over the limit). */
  take(): boolean {
    const t = performance.now();
    this.tokens = Math.min(this.limit.burst, this.tokens + ((t - this.last) / 1000) * this.limit.requestsPerSecond);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

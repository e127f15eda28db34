/** The one backoff schedule of payoutd: exponential with full jitter (between half and all of the capped step). */
export interface BackoffPolicy {
  /** First delay, ms. */
  baseMs: number;
  /** Cap on any single delay, ms. */
  maxMs: number;
}

/** The capped step before retry number `attempt` (1 = first retry): the base, doubled each time, at most the cap. */
export function backoffStep(attempt: number, policy: BackoffPolicy): number {
  return Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
}

/** Delay before retry number `attempt` (1 = first retry): the step with full jitter. `random` returns [0,1). */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const exp = backoffStep(attempt, policy);
  return Math.round(exp / 2 + random() * (exp / 2));
}

/** Resolves after `ms`, or rejects early with the signal's reason when aborted. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

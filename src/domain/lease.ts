/**
 * A lease kept for as long as a piece of work takes: the batch being read, the batch whose result files are
 * written, the notifications being delivered. Other instances take over work whose lease ran out.
 */

/**
 * Runs `work` while `renew` is called every third of `leaseMs` (at least every second), so the lease outlasts
 * work longer than one lease. A failed renewal is left to the next tick; `renew` itself decides whether a lease
 * taken over meanwhile is taken back (never, in payoutd).
 */
export async function whileRenewing<T>(leaseMs: number, renew: () => Promise<unknown>, work: () => Promise<T>): Promise<T> {
  const timer = setInterval(
    () => {
      renew().catch(() => undefined);
    },
    Math.max(1000, Math.floor(leaseMs / 3)),
  );
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

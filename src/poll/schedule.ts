/**
 * The poll schedule, as pure arithmetic: when a payout is asked about again.
 * Each payout is due again after its backoff (minIntervalMs, doubling up to
 * maxIntervalMs). When this process cannot ask about every pending payout
 * within that interval (100,000 payouts on a 2 s interval would need ~500
 * calls/s), due payouts are asked in due order as fast as it can, so each
 * waits about one round; the bound it can promise is then the time one round
 * takes at the rate it has sustained, and that is what it states, instead of
 * a backoff every payout is polled late against. Polling itself never waits
 * for the bound: a payout is asked as soon as it is due and a call is free.
 */

/** Delay before the next poll of a payout that has been polled `count` times. */
export function nextPollDelay(count: number, o: { minIntervalMs: number; maxIntervalMs: number }): number {
  return Math.min(o.maxIntervalMs, o.minIntervalMs * 2 ** Math.min(20, Math.max(0, count - 1)));
}

/**
 * A round is planned at this share of the measured rate: the rate moves with
 * the machine's load and the daemon does other work between calls, and a
 * poller planned at exactly its capacity falls behind at the first hiccup.
 */
export const ROUND_HEADROOM = 1.25;

export interface PollLoad {
  /** Payouts this process follows (PENDING), each asked about once per round. */
  pending: number;
  /** Query calls per second this process sustained recently; null while not measured. */
  callsPerSecond: number | null;
}

/** The time one round over `pending` payouts takes at the sustained rate (with headroom); 0 when unknown. */
export function roundMs(load: PollLoad, queryMaxIds: number): number {
  if (load.callsPerSecond === null || !(load.callsPerSecond > 0) || load.pending <= 0) return 0;
  return Math.ceil((Math.ceil(load.pending / queryMaxIds) / load.callsPerSecond) * 1000 * ROUND_HEADROOM);
}

/**
 * The longest a payout polled `count` times waits for its next poll: its
 * backoff, or one round when a round takes longer (never above
 * maxIntervalMs, where payouts wait anyway).
 */
export function pollIntervalBound(
  count: number,
  o: { minIntervalMs: number; maxIntervalMs: number; queryMaxIds: number },
  load: PollLoad,
): number {
  const backoff = nextPollDelay(count, o);
  return Math.max(backoff, Math.min(o.maxIntervalMs, roundMs(load, o.queryMaxIds)));
}

/**
 * Whether the poll answered PENDING with this count is written to the payout's history. Each such row
 * states the interval to the next poll; once the backoff stops growing (at maxIntervalMs, where the bound
 * is the backoff too) every further poll would state the same one, and a payout pending for days at a
 * 5-minute cap wrote nearly 300 rows a day that said nothing new. The row's own poll_count,
 * last_polled_at and next_poll_at keep the latest poll. So a payout's history holds about
 * log2(maxIntervalMs / minIntervalMs) + 2 poll rows however long it stays pending.
 */
export function pollIsRecorded(
  count: number,
  o: { minIntervalMs: number; maxIntervalMs: number; queryMaxIds: number },
  load: PollLoad,
): boolean {
  if (count <= 1) return true;
  const due = nextPollDelay(count, o);
  return due !== nextPollDelay(count - 1, o) || pollIntervalBound(count, o, load) > due;
}

/** Fewer answers than this say too little about the rate (the first ones carry connection and token set-up). */
export const MIN_RATE_SAMPLE = 20;

/**
 * Query calls per second over recent passes: answers over the time between
 * a pass's first and last answer (so the wait for the first answer and the
 * idle time between passes do not count: this is what the poller can do
 * when it has work). Older passes weigh half at each new pass, so the rate
 * follows the machine's load within a few passes.
 */
export class CallRate {
  private calls = 0;
  private busyMs = 0;

  /** The rate, counting a pass still running (answers after its first, ms since its first); null while unmeasured. */
  perSecond(passCalls = 0, passMs = 0): number | null {
    const calls = this.calls + passCalls;
    const ms = this.busyMs + passMs;
    return calls >= MIN_RATE_SAMPLE && ms > 0 ? (calls * 1000) / ms : null;
  }

  /** A pass ended: `calls` answers came in the `ms` after its first one. */
  add(calls: number, ms: number): void {
    if (calls <= 0 || ms <= 0) return;
    this.calls = this.calls / 2 + calls;
    this.busyMs = this.busyMs / 2 + ms;
  }
}

/**
 * The poll schedule, as pure arithmetic: each payout is due again after its backoff (minIntervalMs doubling to
 * maxIntervalMs). When this process cannot ask about every pending payout within that, due payouts are asked in
 * due order, and the bound it states is one round at the rate it has sustained.
 */

/** Delay before the next poll of a payout that has been polled `count` times. */
export function nextPollDelay(count: number, o: { minIntervalMs: number; maxIntervalMs: number }): number {
  return Math.min(o.maxIntervalMs, o.minIntervalMs * 2 ** Math.min(20, Math.max(0, count - 1)));
}

/** A round is planned at this share of the measured rate, so a hiccup does not put it behind. */
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

/** The longest a payout polled `count` times waits: its backoff, or one round when longer (at most maxIntervalMs). */
export function pollIntervalBound(
  count: number,
  o: { minIntervalMs: number; maxIntervalMs: number; queryMaxIds: number },
  load: PollLoad,
): number {
  const backoff = nextPollDelay(count, o);
  return Math.max(backoff, Math.min(o.maxIntervalMs, roundMs(load, o.queryMaxIds)));
}

/**
 * Whether a PENDING answer with this count is written to the payout's history: once the backoff stops growing
 * every further row would state the same interval, so a payout keeps a few poll rows however long it pends.
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

/** Query calls per second over recent passes (answer spans only), older passes weighing half at each new pass. */
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

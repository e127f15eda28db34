/** Whether the payout service can be reached, as the circuit breaker sees it, and the sentence operators read about it. */

/**
 * closed: calls go out. open: the service is taken for unreachable; nothing is sent but one probe per backoff
 * step. half-open: that probe is on the wire; its answer closes the breaker, its failure opens it again.
 */
export type ServiceState = 'closed' | 'open' | 'half-open';

export interface ServiceHealth {
  state: ServiceState;
  /** ms since the epoch: when the service was taken for down (open, half-open), or seen up again (closed). */
  since: number;
  /** What the last failed call met (ECONNREFUSED, HTTP_5XX, …); null before any failure. */
  lastErrorCode: string | null;
}

/** The service the daemon pays through (one breaker, one row of service health per instance). */
export const PAYOUT_SERVICE = 'payout-api';

function twoDigits(n: number): string {
  return String(n).padStart(2, '0');
}

/** A moment as the operator's clock shows it: HH:MM:SS, with the date in front when it is not today. */
export function clockTime(at: number, now: number): string {
  const d = new Date(at);
  const time = `${twoDigits(d.getHours())}:${twoDigits(d.getMinutes())}:${twoDigits(d.getSeconds())}`;
  if (new Date(now).toDateString() === d.toDateString()) return time;
  return `${d.getFullYear()}-${twoDigits(d.getMonth() + 1)}-${twoDigits(d.getDate())} ${time}`;
}

/** "payout service unreachable since 12:03:10 (ECONNREFUSED), sending paused", or null while it is reachable. */
export function serviceHealthLine(h: ServiceHealth, now: number): string | null {
  if (h.state === 'closed') return null;
  const code = h.lastErrorCode === null ? '' : ` (${h.lastErrorCode})`;
  return `payout service unreachable since ${clockTime(h.since, now)}${code}, sending paused`;
}

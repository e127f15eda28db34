/** How a message of the acceptance names a row of another batch, and how that row stands. */
import { isBeingRead } from '../domain/lifecycle.js';
import { RETRY_BLOCKING_STATES } from '../domain/retry-reference.js';

/** When a batch was received, as a message says it: `2026-01-05 09:00 UTC`. */
function receivedText(ms: number | string): string {
  return `${new Date(Number(ms)).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A row of another batch as a message names it, its file by the name finance gave it: `line 2 of "pay.csv" (batch B…, received …)`. */
export function placeIn(file: string, line: number, batchId: string, receivedAt: number | string): string {
  return `line ${line} of ${JSON.stringify(file)} (batch ${batchId}, received ${receivedText(receivedAt)})`;
}

/**
 * What a row refused for a row of `file`, a file being read at the same time, says to do. That row may be refused
 * while its file is accepted, or end unpaid later (its result file says so), so a rejected file is not the only
 * way neither pays it.
 */
export function ifNotPaidBy(file: string): string {
  const ends = 'its file rejected or cancelled, or the row refused, cancelled or rejected: see its ack or result file';
  return `if that row is not paid by ${JSON.stringify(file)} (${ends}), send this row again`;
}

/** How a row of another batch stands, for what a message says to do: `ended` is CANCELLED or REJECTED. */
export type Standing = 'paid' | 'paying' | 'ended' | 'being read';

export function standingOf(state: string, batchState: string): Standing {
  if (state === 'PAID') return 'paid';
  if (isBeingRead(batchState)) return 'being read';
  return RETRY_BLOCKING_STATES.has(state) ? 'paying' : 'ended';
}

const RANK: Record<Standing, number> = { paid: 0, paying: 1, ended: 2, 'being read': 3 };

/** Orders rows the most telling first, then the first stored; `of` reads a row's state, its batch's state and its id. */
export function standingOrder<T>(of: (row: T) => [string, string, number | string]): (a: T, b: T) => number {
  const rank = (row: T): number => {
    const [state, batchState] = of(row);
    return RANK[standingOf(state, batchState)];
  };
  return (a, b) => rank(a) - rank(b) || Number(of(a)[2]) - Number(of(b)[2]);
}

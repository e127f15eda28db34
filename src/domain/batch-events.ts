/**
 * Batch events: what happened to a batch, in the words a notification
 * carries (docs/notifications.md). Each is stored in the same transaction as
 * the change it reports, then delivered to the configured channels; the
 * data of each type is plain JSON (money as decimal text, times ISO 8601).
 */
import { isFinalRowState, type RowState } from './lifecycle.js';

import { isBeingRead } from './lifecycle.js';

export const BATCH_EVENT_TYPES = [
  'received',
  'accepted',
  'rejected',
  'awaiting-approval',
  'approved',
  'approval-rejected',
  'held',
  'released',
  'cancelled',
  'progress',
  'completed',
  'corrected',
  'stale',
] as const;

export type BatchEventType = (typeof BATCH_EVENT_TYPES)[number];

/** Plain JSON: what a payload may carry (no Date, no bigint, no undefined inside lists). */
export type EventJson = string | number | boolean | null | EventJson[] | { [key: string]: EventJson | undefined };

export type BatchEventData = Record<string, EventJson | undefined>;

/** An event as a caller describes it, to be stored with the change it reports. */
export interface BatchEventInput {
  batchId: string;
  type: BatchEventType;
  data?: BatchEventData;
  /** When it happened (clock ms); default: now. */
  at?: number;
}

/** An event as stored: its id is the `webhook-id` every delivery of it carries (receivers deduplicate by it). */
export interface BatchEvent {
  /** Order of recording, over all batches. */
  seq: number;
  id: string;
  batchId: string;
  type: BatchEventType;
  data: BatchEventData;
  /** Clock ms. */
  createdAt: number;
}

export function isBatchEventType(value: string): value is BatchEventType {
  return (BATCH_EVENT_TYPES as readonly string[]).includes(value);
}

/** The type as payloads and subjects name it: `batch.held`. */
export function eventTypeName(type: BatchEventType): string {
  return `batch.${type}`;
}

/** Row counts of a batch at one moment, and what they say about its progress. */
export interface BatchProgress {
  /** Rows of the batch that count (every data row). */
  rows: number;
  /** Rows in a final state. */
  final: number;
  /** 0-100, one decimal; null while the batch is being read, or has no rows: no share of its rows is known yet. */
  percent: number | null;
}

/**
 * The progress of a batch in `state` (its rows so far, and those final). A batch being read has only the rows
 * read so far, and one without rows has none to be done: either would read "100.0" done before any is.
 */
export function progressOf(rows: number, final: number, state: string): BatchProgress {
  const percent = rows === 0 || isBeingRead(state) ? null : Math.floor((final / rows) * 1000) / 10;
  return { rows, final, percent };
}

/** The progress of a batch from its rows counted per state: every row counts, and those in a final state are done. */
export function progressOfCounts(counts: Partial<Record<RowState, number>>, state: string): BatchProgress {
  let rows = 0;
  let final = 0;
  for (const [state, n = 0] of Object.entries(counts) as [RowState, number | undefined][]) {
    rows += n;
    if (isFinalRowState(state)) final += n;
  }
  return progressOf(rows, final, state);
}

/**
 * Rate (rows made final per minute since `since`) and the estimated end, when there is a rate to go by.
 * Null estimates rather than a guess: an ETA from no movement would be a made-up time.
 */
export function estimateEnd(p: BatchProgress, since: number, now: number): { perMinute: number | null; etaAt: number | null } {
  const minutes = (now - since) / 60_000;
  if (minutes <= 0 || p.final === 0) return { perMinute: null, etaAt: null };
  const perMinute = p.final / minutes;
  const left = p.rows - p.final;
  return { perMinute: Math.round(perMinute * 10) / 10, etaAt: left <= 0 ? now : Math.round(now + (left / perMinute) * 60_000) };
}

/** The state an operator reads of a batch record (payoutd status, status files, emails, the console): one rule for all. */
export function shownStateOf(batch: {
  state: string;
  holdCode: string | null;
  cancelledAt?: number | null;
  finalCountsJson: string | null;
}): string {
  return shownBatchState(batch.state, batch.holdCode, cancelShown(batch));
}

/**
 * Whether a batch reads CANCELLED: an operator cancelled it and the cancel left rows unsent. While it runs, rows
 * its cancel may still stop are followed; once it ended, only NOT_SUBMITTED rows say the cancel stopped any: a
 * batch whose every row was paid all the same is COMPLETE, not CANCELLED. Counts not kept (or
 * unreadable): as cancelled.
 */
export function cancelShown(batch: { state: string; cancelledAt?: number | null; finalCountsJson: string | null }): boolean {
  if (batch.cancelledAt == null) return false;
  if (batch.state !== 'COMPLETE' || batch.finalCountsJson === null) return true;
  let counts: unknown;
  try {
    counts = JSON.parse(batch.finalCountsJson);
  } catch {
    return true;
  }
  return counts === null || typeof counts !== 'object' || leftNotSubmitted(counts as Record<string, unknown>);
}

/** Counts per row state (or result status) of an ended batch: whether any row ended NOT_SUBMITTED. */
export function leftNotSubmitted(counts: Readonly<Record<string, unknown>>): boolean {
  const n = counts['NOT_SUBMITTED'];
  return typeof n === 'number' && n > 0;
}

/**
 * A batch's state as an operator reads it: an ACTIVE batch under a hold is HELD, or AWAITING_APPROVAL; one an
 * operator cancelled (`cancelled`: see cancelShown) is CANCELLED while its sent rows are followed and once they are
 * final, so its final notice does not read as a plain COMPLETE. The one place for this word: status, notifications and
 * /metrics say the same. `cancelled` has no default, so no caller can leave it out.
 */
export function shownBatchState(state: string, holdCode: string | null, cancelled: boolean): string {
  if (cancelled && (state === 'ACTIVE' || state === 'COMPLETE')) return 'CANCELLED';
  if (state !== 'ACTIVE') return state;
  if (holdCode === null) return state;
  return holdCode === 'AWAITING_APPROVAL' ? 'AWAITING_APPROVAL' : 'HELD';
}

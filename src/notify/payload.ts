/**
 * What a notification says about a batch: the event's JSON payload (the
 * webhook body, in the Standard Webhooks shape `{type, timestamp, data}`),
 * and the batch as it stands (the status file and the email's totals).
 */
import { eventTypeName, estimateEnd, progressOfCounts, type BatchEvent } from '../domain/batch-events.js';
import type { RowState } from '../domain/lifecycle.js';
import { sumAmounts } from '../domain/money.js';
import { outcomeStatusOf, type RowOutcomeStatus } from '../report/index.js';
import { amountsByState, batchStateCounts, type BatchRecord, type Database } from '../store/index.js';

export interface EventPayload {
  type: string;
  /** When the event happened, ISO 8601. */
  timestamp: string;
  data: Record<string, unknown>;
}

export function eventPayload(event: BatchEvent, batch: Pick<BatchRecord, 'id' | 'fileName'>): EventPayload {
  return {
    type: eventTypeName(event.type),
    timestamp: new Date(event.createdAt).toISOString(),
    data: { eventId: event.id, batchId: batch.id, file: batch.fileName, ...event.data },
  };
}

/** A batch as it stands: what the status file and an email show. Times are clock ms. */
export interface BatchSnapshot {
  batch: BatchRecord;
  rows: number;
  final: number;
  /** Null while the batch is being read, or has no rows (src/domain/batch-events.ts: progressOf). */
  percent: number | null;
  /** Rows made final per minute since the batch was accepted; null before any. */
  perMinute: number | null;
  etaAt: number | null;
  /** Rows per outcome status (the result file's words). */
  counts: Partial<Record<RowOutcomeStatus, number>>;
  /** Payout amounts per outcome status and currency, exact decimal text. */
  amounts: Partial<Record<RowOutcomeStatus, Record<string, string>>>;
  at: number;
}

export async function batchSnapshot(db: Database, batch: BatchRecord, now: number): Promise<BatchSnapshot> {
  const byState = await batchStateCounts(db, batch);
  const byStateAmounts = await amountsByState(db, batch.id);
  const counts: Partial<Record<RowOutcomeStatus, number>> = {};
  const parts = new Map<RowOutcomeStatus, Map<string, string[]>>();
  for (const [state, n] of Object.entries(byState) as [RowState, number][]) {
    const status = outcomeStatusOf(state);
    counts[status] = (counts[status] ?? 0) + n;
  }
  for (const [state, byCurrency] of Object.entries(byStateAmounts) as [RowState, Record<string, string>][]) {
    const status = outcomeStatusOf(state);
    const m = parts.get(status) ?? new Map<string, string[]>();
    parts.set(status, m);
    for (const [currency, amount] of Object.entries(byCurrency)) m.set(currency, [...(m.get(currency) ?? []), amount]);
  }
  const amounts: BatchSnapshot['amounts'] = {};
  for (const [status, m] of parts) amounts[status] = Object.fromEntries([...m].map(([c, list]) => [c, sumAmounts(list)]));
  const progress = progressOfCounts(byState, batch.state);
  const { rows, final } = progress;
  const { perMinute, etaAt } =
    batch.state === 'ACTIVE' ? estimateEnd(progress, batch.acceptedAt ?? batch.receivedAt, now) : { perMinute: null, etaAt: null };
  return { batch, rows, final, percent: progress.percent, perMinute, etaAt, counts, amounts, at: now };
}

/**
 * What the pages show of a batch, gathered from the store: rows by state,
 * progress and its estimated end, the reason it waits or was refused, its
 * totals per status and currency, and its timeline. The arithmetic is in
 * small pure functions; money is summed exactly (ExactTotal), never as a float.
 */
import { uploaderOf } from '../approval/audit.js';
import { estimateEnd, progressOf as batchProgress, progressOfCounts, type BatchEvent } from '../domain/batch-events.js';
import { ExactTotal } from '../domain/exact-total.js';
import type { RowState } from '../domain/lifecycle.js';
import { decimalText, isSummableAmount } from '../domain/money.js';
import { batchStateCounts, resultRowPages, type BatchRecord, type Database, type StateCounts } from '../store/index.js';
import type { ApprovalView } from './approvals.js';

export interface Progress {
  /** Rows that reached a final state, of `total`. */
  done: number;
  total: number;
  /** Estimated time left (ms) at the pace so far; null when there is no pace yet or nothing is left. */
  etaMs: number | null;
}

/** Progress of a batch: final rows of all rows, and the time left at the pace since it was accepted (the notifications' estimate). */
export function progressOf(batch: Pick<BatchRecord, 'state' | 'rowCount' | 'acceptedAt'>, counts: StateCounts, now: number): Progress {
  const { rows, final: done } = progressOfCounts(counts, batch.state);
  const total = Math.max(rows, batch.rowCount);
  const started = batch.acceptedAt;
  let etaMs: number | null = null;
  if (batch.state === 'ACTIVE' && started !== null && done < total) {
    const { etaAt } = estimateEnd(batchProgress(total, done, batch.state), started, now);
    etaMs = etaAt === null ? null : etaAt - now;
  }
  return { done, total, etaMs };
}

/** Why a batch waits or was refused, in words; null when nothing holds it. */
export function reasonOf(batch: BatchRecord, approval: ApprovalView | null): string | null {
  if (batch.cancelledAt != null) return `cancelled: ${batch.cancelReason ?? 'no reason given'}`;
  if (approval?.awaiting) return `awaiting approval${approval.reason ? `: ${approval.reason}` : ''}`;
  if (batch.holdCode) return `${batch.holdCode}: ${batch.holdReason ?? ''}`.trim();
  if (batch.state === 'DUPLICATE') return `same file as batch ${batch.duplicateOf ?? '?'}`;
  if (batch.rejectCode) return `${batch.rejectCode}: ${batch.rejectReason ?? ''}`.trim();
  return null;
}

/** The payout amounts of every data row of the file, accepted or refused, per currency. */
export function totalsOf(batch: Pick<BatchRecord, 'totalsJson'>): [string, string][] {
  return sortedTotals(batch.totalsJson);
}

/** The payout amounts of the rows accepted (those sent or to be sent), per currency; none before acceptance. */
export function acceptedTotalsOf(batch: Pick<BatchRecord, 'acceptedTotalsJson'>): [string, string][] {
  return sortedTotals(batch.acceptedTotalsJson);
}

function sortedTotals(json: string | null | undefined): [string, string][] {
  if (!json) return [];
  try {
    const parsed = JSON.parse(json) as Record<string, unknown>;
    return Object.entries(parsed)
      .filter((e): e is [string, string] => typeof e[1] === 'string')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  } catch {
    return [];
  }
}

export interface BatchListItem {
  batch: BatchRecord;
  uploader: string | null;
  counts: StateCounts;
  progress: Progress;
  reason: string | null;
  awaitingApproval: boolean;
}

export async function listItem(db: Database, batch: BatchRecord, approval: ApprovalView | null, now: number): Promise<BatchListItem> {
  const counts = await batchStateCounts(db, batch);
  return {
    batch,
    uploader: uploaderOf(batch),
    counts,
    progress: progressOf(batch, counts, now),
    reason: reasonOf(batch, approval),
    awaitingApproval: approval?.awaiting ?? batch.holdCode === 'AWAITING_APPROVAL',
  };
}

/** The user uploaded this batch: as an approver they may reject it, never approve it (docs/approval.md). */
export function isOwnUpload(item: BatchListItem, user: string): boolean {
  return item.uploader !== null && item.uploader === user;
}

export interface StatusTotal {
  state: RowState;
  currency: string;
  rows: number;
  amount: string;
}

/** Rows and exact payout amounts per row state and currency (amounts the summary does not add, as in some invalid rows, are counted but not summed). */
export async function statusTotals(db: Database, batchId: string): Promise<StatusTotal[]> {
  const groups = new Map<string, { state: RowState; currency: string; rows: number; sum: ExactTotal }>();
  for await (const page of resultRowPages(db, batchId)) {
    for (const row of page) {
      const currency = row.payoutCurrency ?? '';
      const key = `${row.state}\u0000${currency}`;
      let g = groups.get(key);
      if (!g) groups.set(key, (g = { state: row.state, currency, rows: 0, sum: new ExactTotal() }));
      g.rows += 1;
      if (row.payoutAmount !== null && isSummableAmount(row.payoutAmount)) g.sum.add(row.payoutAmount);
    }
  }
  return [...groups.values()]
    .map((g) => ({ state: g.state, currency: g.currency, rows: g.rows, amount: decimalText(g.sum.toDecimal()) }))
    .sort((a, b) => (a.state === b.state ? (a.currency < b.currency ? -1 : 1) : a.state < b.state ? -1 : 1));
}

export interface TimelineEvent {
  at: number;
  what: string;
}

const EVENT_WORDS: Record<BatchEvent['type'], string> = {
  received: 'received',
  accepted: 'accepted',
  rejected: 'rejected',
  'awaiting-approval': 'awaiting approval',
  approved: 'approved',
  'approval-rejected': 'rejected by an approver',
  held: 'held',
  released: 'hold lifted',
  cancelled: 'cancelled',
  progress: 'progress',
  completed: 'complete: every row is final; result and summary written',
  corrected: 'result file corrected after the batch finished',
  stale: 'payouts pending for too long',
};

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/** One stored event in words: what happened, who did it and why, from the fields its data has. */
export function eventWords(e: Pick<BatchEvent, 'type' | 'data'>): string {
  const d = e.data;
  let what = EVENT_WORDS[e.type];
  if (e.type === 'accepted' && typeof d.validCount === 'number')
    what += `: ${d.validCount} valid row(s), ${String(d.invalidCount ?? 0)} invalid`;
  if ((e.type === 'released' || e.type === 'cancelled') && text(d.by)) what += ` (${String(d.by)})`;
  if (e.type === 'stale' && typeof d.payouts === 'number') what += `: ${d.payouts}`;
  if (e.type === 'corrected' && text(d.correctionFile))
    what += `: ${String(d.correctionFile)} supersedes ${String(d.supersedes)}, ${String(d.rowsChanged)} row(s) changed`;
  const who = text(d.approver);
  if (who) what += ` by ${who}${text(d.via) ? ` (${String(d.via)})` : ''}`;
  const code = text(d.code);
  const why = text(d.reason) ?? text(d.comment);
  if (code && e.type !== 'released') what += `: ${code}`;
  if (why) what += `${code && e.type !== 'released' ? ' ' : ': '}${why}`;
  return what;
}

/**
 * The events of a batch in order: the notifications' stored events when the batch has them (progress
 * events left out: the progress bar shows it), else what its record says (a batch from before events were
 * stored); approval decisions not among the events are added from the approval audit.
 */
export function timelineOf(
  batch: BatchRecord,
  uploader: string | null,
  approval: ApprovalView | null,
  events: readonly BatchEvent[] = [],
): TimelineEvent[] {
  // A console upload is recorded with its console user and no uid; a file dropped otherwise, with its owner's uid.
  const by = uploader ? ` (uploaded by ${uploader}${batch.uploadedByUid == null ? ' in the console' : ''})` : '';
  if (events.length > 0) {
    // Decisions come from the approval audit, which names who decided, how and why.
    const audited = (approval?.decisions.length ?? 0) > 0;
    const out = events
      .filter((e) => e.type !== 'progress' && !(audited && (e.type === 'approved' || e.type === 'approval-rejected')))
      .map((e) => ({ at: e.createdAt, what: e.type === 'received' ? `received${by}` : eventWords(e) }));
    out.push(...decisionEvents(approval));
    return out.sort((a, b) => a.at - b.at);
  }
  return recordTimeline(batch, by, approval);
}

function decisionEvents(approval: ApprovalView | null): TimelineEvent[] {
  const verb: Record<string, string> = { approve: 'approved', reject: 'rejected', expire: 'approval expired', void: 'approvals void' };
  return (approval?.decisions ?? []).map((d) => ({
    at: d.at,
    what: `${verb[d.decision] ?? d.decision} by ${d.approver} (${d.via})${d.comment ? `: ${d.comment}` : ''}`,
  }));
}

function recordTimeline(batch: BatchRecord, by: string, approval: ApprovalView | null): TimelineEvent[] {
  const events: TimelineEvent[] = [{ at: batch.receivedAt, what: `received${by}` }];
  if (batch.acceptedAt !== null)
    events.push({ at: batch.acceptedAt, what: `accepted: ${batch.validCount} valid row(s), ${batch.invalidCount} invalid` });
  if (batch.ackWrittenAt !== null) events.push({ at: batch.ackWrittenAt, what: 'acknowledgement written to the outbox' });
  if (batch.fileChangedAt !== null) events.push({ at: batch.fileChangedAt, what: 'the upload went on after the file was taken' });
  events.push(...decisionEvents(approval));
  if (batch.holdCode) events.push({ at: batch.updatedAt, what: `held: ${batch.holdCode}: ${batch.holdReason ?? ''}`.trim() });
  if (batch.state === 'REJECTED' || batch.state === 'DUPLICATE') {
    events.push({ at: batch.updatedAt, what: `${batch.state === 'DUPLICATE' ? 'duplicate' : 'rejected'}: ${reasonOf(batch, null) ?? ''}` });
  }
  if (batch.resultWrittenAt !== null) events.push({ at: batch.resultWrittenAt, what: 'result and summary written to the outbox' });
  if (batch.completedAt !== null) events.push({ at: batch.completedAt, what: 'complete: every row is final' });
  return events.sort((a, b) => a.at - b.at);
}

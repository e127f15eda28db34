/**
 * The approval audit of a batch, for display: its state, what it waits for,
 * and every decision (who, when, how, comment, the SHA-256 and totals it was
 * about). `payoutd status --batch`, the result and summary files and the
 * reconciliation report show it; the web console reads it the same way.
 */
import { getBatch, listApprovalEntries, type ApprovalEntry, type BatchRecord, type Database } from '../store/index.js';
import { figuresOf, reasonsOf } from './decide.js';
import { totalsText, type ApprovalReason, type BatchFigures } from './policy.js';

export interface ApprovalDecisionView {
  decision: ApprovalEntry['decision'];
  round: number;
  approver: string | null;
  agent: string | null;
  via: ApprovalEntry['via'];
  comment: string | null;
  sha256: string;
  figures: BatchFigures;
  /** ISO 8601 UTC. */
  at: string;
}

export interface ApprovalView {
  batchId: string;
  /** NONE, REQUIRED, APPROVED, REJECTED, EXPIRED, REFUSED. */
  state: string;
  uploadedBy: string | null;
  needed: number;
  /** Approvals of the current round so far. */
  given: string[];
  reasons: ApprovalReason[];
  figures: BatchFigures;
  sha256: string;
  expiresAt: string | null;
  decisions: ApprovalDecisionView[];
}

function viewOfEntry(e: ApprovalEntry): ApprovalDecisionView {
  return {
    decision: e.decision,
    round: e.round,
    approver: e.approver,
    agent: e.agent,
    via: e.via,
    comment: e.comment,
    sha256: e.sha256,
    figures: JSON.parse(e.figuresJson) as BatchFigures,
    at: new Date(e.decidedAt).toISOString(),
  };
}

export function approvalViewOf(batch: BatchRecord, entries: ApprovalEntry[]): ApprovalView | null {
  if (!batch.approvalState) return null;
  const round = batch.approvalRound ?? 0;
  return {
    batchId: batch.id,
    state: batch.approvalState,
    uploadedBy: batch.uploadedBy ?? null,
    needed: batch.approvalsNeeded ?? 0,
    given: entries.filter((e) => e.round === round && e.decision === 'approve').map((e) => e.approver ?? ''),
    reasons: reasonsOf(batch),
    figures: figuresOf(batch),
    sha256: batch.sha256,
    expiresAt: batch.approvalExpiresAt ? new Date(batch.approvalExpiresAt).toISOString() : null,
    decisions: entries.map(viewOfEntry),
  };
}

/**
 * Who uploaded a batch, as the daemon resolved it when it took the file: the console user of a console
 * upload, else the file's owner on the server (a uid with no name as such); null when not known. Never
 * looked up again by name and bytes: a later upload of the same file by someone else is not this one.
 */
export function uploaderOf(batch: Pick<BatchRecord, 'uploadedBy' | 'uploadedByUid'>): string | null {
  if (batch.uploadedBy) return batch.uploadedBy;
  return batch.uploadedByUid != null ? `uid ${batch.uploadedByUid}` : null;
}

/** A batch's approval state and audit, or null when approval was not in use for it. */
export async function readApproval(db: Database, batchId: string): Promise<ApprovalView | null> {
  const batch = await getBatch(db, batchId);
  if (!batch) return null;
  return approvalViewOf(batch, await listApprovalEntries(db, batchId));
}

/** One decision in words: `approved by alice (sftp) at 2026-…Z: "ok" [sha256 ab12…, 1500 PHP]`. */
export function decisionText(d: ApprovalDecisionView): string {
  const verb: Record<ApprovalDecisionView['decision'], string> = {
    approve: 'approved',
    reject: 'rejected',
    expire: 'expired',
    void: 'approvals void',
    reopen: 'approval needed again',
    'refuse-limit': 'refused at release',
    cancel: 'cancelled',
  };
  const who = d.approver ? ` by ${d.approver}${d.agent ? ` (as named by ${d.agent})` : ''} (${d.via})` : '';
  const comment = d.comment ? `: "${d.comment}"` : '';
  return `${verb[d.decision]}${who} at ${d.at}${comment} [sha256 ${d.sha256}, ${totalsText(d.figures.totals)} in ${d.figures.rows} row(s)]`;
}

/**
 * The audit in one cell, for the result, summary and reconciliation files: the state, then every decision.
 * Null when approval was not in use for the batch, so those files stay as they were.
 */
export function approvalAuditText(view: ApprovalView | null): string | null {
  if (!view || view.state === 'NONE') return null;
  const uploader = view.uploadedBy ? `uploaded by ${view.uploadedBy}; ` : '';
  return `${view.state}: ${uploader}${view.decisions.map(decisionText).join('; ') || 'no decision yet'}`;
}

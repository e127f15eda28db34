/**
 * decideApproval: the one decision every way of approving calls (the CLI,
 * an approval file from SFTP, the web console). It checks the request
 * against the batch and the policy, records the decision for the audit and
 * applies it, in one transaction holding the batch, so it is applied once
 * whichever instance takes it. The last approval a batch needs lets it go,
 * after the limits are looked at again; a rejection ends it unpaid; a
 * decision after the deadline is refused and ends the wait as expired.
 */
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../domain/clock.js';
import { FINAL_BATCH_STATES, isBeingRead, type BatchState } from '../domain/lifecycle.js';
import {
  cancelledCounts,
  endUnpaid,
  getBatch,
  recordBatchEvent,
  insertApprovalEntry,
  listApprovalEntries,
  rollingTotals,
  updateBatch,
  withBatchForDecision,
  type ApprovalEntry,
  type BatchRecord,
  type Database,
  type DecisionTransaction,
} from '../store/index.js';
import { holdForApproval, releaseApproved } from '../holds/index.js';
import { sha256OfFile } from '../ingest/inbox/index.js';
import { ApprovalError, PRIVATE_FILE_HOWTO } from './errors.js';
import {
  awaitingApprovalText,
  isLimitReason,
  limitBreaches,
  mayApprove,
  totalsText,
  worseText,
  worseThanApproved,
  type ApprovalPolicy,
  type ApprovalReason,
  type BatchFigures,
} from './policy.js';
import { SystemUsers, type UserDirectory } from './users.js';

/** The rolling window of the 24-hour limits. */
export const ROLLING_WINDOW_MS = 24 * 3_600_000;

/** What the other batches add up to in the 24-hour window of `now`, batch `id` aside (rollingTotals). */
export type RollingTotal = (trx: DecisionTransaction, id: string, now: number) => Promise<Record<string, string>>;

/**
 * Reads, before a decision takes its lock, what the batches an operator cancelled count (cancelledCounts), so
 * the lock is held while the batches are added up, not while their rows are. Without a 24-hour limit nothing is read.
 */
export async function rollingTotalReader(deps: ApprovalDeps): Promise<RollingTotal> {
  if (!Object.values(deps.policy.limits.perCurrency).some((l) => l?.max24h !== undefined)) return () => Promise.resolve({});
  const cancelled = await cancelledCounts(deps.db, deps.clock.now() - ROLLING_WINDOW_MS);
  return (trx, id, now) => rollingTotals(trx, now - ROLLING_WINDOW_MS, id, cancelled);
}

export interface ApprovalDeps {
  db: Database;
  clock: Clock;
  policy: ApprovalPolicy;
  users: UserDirectory;
  logger?: Logger;
  instanceId?: string;
}

export type ApprovalVia = 'cli' | 'sftp' | 'console';

export interface ApprovalRequest {
  batchId: string;
  /** The file's SHA-256 as the ack shows it: the approval is bound to it. */
  sha256: string;
  decision: 'approve' | 'reject';
  /** The user name deciding (a Unix user: the file owner, the invoking user, the console's logged-in user). */
  approver: string;
  approverUid?: number | null;
  /** A service account that named the approver (`payoutd approve --as`, the console). */
  agent?: string | null;
  via: ApprovalVia;
  comment?: string;
  /** Required to reject: it goes into the result file. */
  reason?: string;
  /**
   * The approval round the approver was shown, counted from 1 as the ack and status print it: an approval of an
   * earlier round is refused once the batch was reopened. Absent: taken as the first round.
   */
  round?: number | null;
}

export type ApprovalOutcome =
  /** The last approval needed: the batch is let go and will be paid. */
  | 'released'
  /** Approval recorded; the batch waits for another approver (six eyes). */
  | 'recorded'
  /** Rejected: the batch ends NOT_SUBMITTED. */
  | 'rejected'
  /** Approved, but at release a limit was found beyond what the approvers were shown (a new one, or a grown 24-hour total): it needs approval again. */
  | 'reopened'
  /** Approved, but at release a limit was found and limits.onExceeded is refuse: not paid. */
  | 'refused-limit';

export interface ApprovalResult {
  outcome: ApprovalOutcome;
  batchId: string;
  approver: string;
  /** Distinct approvals of the current round, and how many the batch needs. */
  approvals: number;
  needed: number;
  figures: BatchFigures;
  /** One sentence for the person who decided. */
  message: string;
}

const SHA256 = /^[0-9a-f]{64}$/;

const isFinal = (state: BatchState): boolean => FINAL_BATCH_STATES.includes(state);

export function figuresOf(batch: BatchRecord): BatchFigures {
  return batch.approvalFiguresJson ? (JSON.parse(batch.approvalFiguresJson) as BatchFigures) : { totals: {}, rows: 0, largest: {} };
}

export function reasonsOf(batch: BatchRecord): ApprovalReason[] {
  return batch.approvalReasonsJson ? (JSON.parse(batch.approvalReasonsJson) as ApprovalReason[]) : [];
}

/** Whether an uploader was recorded for the batch: without one no approval of it can be applied (the ack says so). */
export function uploaderKnown(b: Pick<BatchRecord, 'uploadedBy' | 'uploadedByUid'>): boolean {
  return b.uploadedBy != null || b.uploadedByUid != null;
}

/** Whether a batch's wait for approval ran out by `now`: the decision and the daemon's pass both ask this. */
export function waitRanOut(b: BatchRecord, now: number): boolean {
  return b.state === 'ACTIVE' && b.approvalState === 'REQUIRED' && (b.approvalExpiresAt ?? Infinity) <= now;
}

function durationText(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} day(s)`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} hour(s)`;
  if (ms % 60_000 === 0) return `${ms / 60_000} minute(s)`;
  return `${ms / 1000} s`;
}

/** Ends a wait that ran out (waitRanOut), in the caller's transaction: the audit entry, every row NOT_SUBMITTED, the notice. */
export async function endExpiredWait(deps: ApprovalDeps, trx: DecisionTransaction, b: BatchRecord, now: number): Promise<void> {
  const reason = `not approved within ${durationText(deps.policy.approval.expiresAfter)} (approval.expiresAfter); none of its rows was paid`;
  await insertApprovalEntry(trx, {
    batchId: b.id,
    round: b.approvalRound ?? 0,
    decision: 'expire',
    approver: null,
    approverUid: null,
    agent: null,
    via: 'daemon',
    comment: reason,
    sha256: b.sha256,
    figuresJson: JSON.stringify(figuresOf(b)),
    decidedAt: now,
    instanceId: deps.instanceId ?? null,
  });
  await endUnpaid(trx, b.id, { approvalState: 'EXPIRED', code: 'APPROVAL_EXPIRED', reason }, now);
  await recordBatchEvent(trx, { batchId: b.id, type: 'approval-rejected', data: { by: null, expired: true, reason }, at: now });
}

function describeLast(entries: ApprovalEntry[]): string {
  const last = entries[entries.length - 1];
  if (!last) return '';
  const who = last.approver ? ` by ${last.approver} (${last.via})` : '';
  return ` (${last.decision}${who} at ${new Date(last.decidedAt).toISOString()})`;
}

function checkRequest(r: ApprovalRequest): { sha256: string } {
  if (typeof r.batchId !== 'string' || r.batchId.trim() === '') throw new ApprovalError('APPROVAL_BAD_REQUEST', 'no batch id given');
  const sha256 = String(r.sha256 ?? '')
    .trim()
    .toLowerCase();
  if (!SHA256.test(sha256)) {
    throw new ApprovalError('APPROVAL_BAD_REQUEST', `no SHA-256 given for batch ${r.batchId} (64 hex digits, as its ack shows it)`);
  }
  if (typeof r.approver !== 'string' || r.approver.trim() === '') {
    throw new ApprovalError('APPROVAL_UNKNOWN_USER', 'the approver has no user name on this system');
  }
  if (r.decision === 'reject' && (r.reason ?? '').trim() === '') {
    throw new ApprovalError('APPROVAL_REASON_REQUIRED', `a rejection of batch ${r.batchId} needs a reason (it goes into the result file)`);
  }
  if (r.decision !== 'approve' && r.decision !== 'reject')
    throw new ApprovalError('APPROVAL_BAD_REQUEST', 'decision must be approve or reject');
  if (r.round != null && !(Number.isInteger(r.round) && r.round >= 1)) {
    throw new ApprovalError(
      'APPROVAL_BAD_REQUEST',
      `the round given for batch ${r.batchId} is not a whole number from 1 (as its ack shows it)`,
    );
  }
  return { sha256 };
}

/** Refusals that need nothing but the batch as stored, the request, the approver's uid and the time; null when none applies. */
function refusal(
  batch: BatchRecord | undefined,
  r: ApprovalRequest,
  sha256: string,
  entries: ApprovalEntry[],
  approverUid: number | null,
  now: number,
): ApprovalError | null {
  if (!batch) return new ApprovalError('APPROVAL_UNKNOWN_BATCH', `no batch ${r.batchId}: copy the batch id from its ack`);
  if (isBeingRead(batch.state)) {
    // Its ack (both files) is written before the batch waits for approval: a large one can be seen a moment early.
    return new ApprovalError(
      'APPROVAL_NOT_READY',
      `batch ${batch.id} is still being read or acknowledged: decide on it once payoutd status shows it awaiting approval (seconds after its ack appears)`,
    );
  }
  if (batch.approvalState === null || batch.approvalState === undefined || batch.approvalState === 'NONE') {
    return new ApprovalError('APPROVAL_NOT_REQUIRED', `batch ${batch.id} does not wait for approval; nothing to decide`);
  }
  if (batch.approvalState === 'REQUIRED' && isFinal(batch.state)) {
    // Cancelled while it waited, by a build that did not end the wait with the cancel.
    return new ApprovalError('APPROVAL_ALREADY_DECIDED', `batch ${batch.id} is ${batch.state}: none of it waits for approval any more`);
  }
  if (batch.approvalState !== 'REQUIRED') {
    return new ApprovalError(
      'APPROVAL_ALREADY_DECIDED',
      `batch ${batch.id} is decided already: ${batch.approvalState}${describeLast(entries)}; this ${r.decision === 'approve' ? 'approval' : 'rejection'} changes nothing`,
    );
  }
  if (waitRanOut(batch, now)) {
    // Refused whoever acts first, the daemon's pass or this decision: a deadline is the same on every path.
    return new ApprovalError(
      'APPROVAL_EXPIRED',
      `batch ${batch.id} was not approved in time: its wait ran out at ${new Date(batch.approvalExpiresAt as number).toISOString()} (approval.expiresAfter), before this ${r.decision === 'approve' ? 'approval' : 'rejection'}; it ends NOT_SUBMITTED and none of its rows is paid. To pay them, send the rows again in a new file (the same file again is refused as a duplicate of this batch) and have it approved in time`,
    );
  }
  if (sha256 !== batch.sha256) {
    return new ApprovalError(
      'APPROVAL_HASH_MISMATCH',
      `the SHA-256 given (${sha256.slice(0, 12)}…) is not that of batch ${batch.id}'s file (${batch.sha256.slice(0, 12)}…): copy it from this batch's ack`,
    );
  }
  const stale = r.decision === 'approve' && batch.fileChangedAt === null ? staleRound(batch, r, entries) : null;
  if (stale) return stale;
  if (r.decision === 'approve' && !uploaderKnown(batch)) {
    return new ApprovalError(
      'APPROVAL_UPLOADER_UNKNOWN',
      `no uploader is known for batch ${batch.id} (payoutd's own file with no console upload recorded for it, or a file others ` +
        `could write when it was taken: a second hard link, or writable by group or others; the log says which), so no ` +
        `approver can be told apart from whoever wrote it: reject it and send the rows again in a new file (the same bytes again are a duplicate), ` +
        `in the console or as your own user, ${PRIVATE_FILE_HOWTO}`,
    );
  }
  const sameUid = approverUid != null && batch.uploadedByUid != null && approverUid === batch.uploadedByUid;
  if (r.decision === 'approve' && ((batch.uploadedBy && batch.uploadedBy === r.approver) || sameUid)) {
    return new ApprovalError(
      'APPROVAL_OWN_UPLOAD',
      `${r.approver} uploaded batch ${batch.id} and cannot approve it: another approver must`,
    );
  }
  if (r.decision === 'approve' && batch.uploadedBy == null && approverUid == null) {
    // The uploader is known by uid only and the approver by name only: nothing shows they are not the same person.
    return new ApprovalError(
      'APPROVAL_UNKNOWN_USER',
      `batch ${batch.id}'s uploader is known only as uid ${batch.uploadedByUid} (no user name could be found for it when the file was taken) and no uid is known for ${r.approver} on this system, so ${r.approver} cannot be told apart from the uploader: try again once the system's user directory (/etc/passwd, LDAP) knows ${r.approver}, or have another approver with an account on this server approve it`,
    );
  }
  const round = batch.approvalRound ?? 0;
  const mine = entries.find((e) => e.round === round && e.approver === r.approver && (e.decision === 'approve' || e.decision === 'reject'));
  if (mine) {
    return new ApprovalError(
      'APPROVAL_ALREADY_DECIDED',
      `${r.approver} already approved batch ${batch.id} at ${new Date(mine.decidedAt).toISOString()}; it needs ${batch.approvalsNeeded} different approvers`,
    );
  }
  return null;
}

/** The round of a batch as approvers are told it: the first is 1. */
export const shownRound = (b: Pick<BatchRecord, 'approvalRound'>): number => (b.approvalRound ?? 0) + 1;

/**
 * An approval given for another round than the batch's current one: it was shown figures that no longer stand
 * (a reopen), so it cannot let the batch go. A rejection is always safe and is not asked for its round.
 */
function staleRound(batch: BatchRecord, r: ApprovalRequest, entries: ApprovalEntry[]): ApprovalError | null {
  const current = shownRound(batch);
  const seen = r.round ?? 1;
  if (seen === current) return null;
  if (seen > current) {
    return new ApprovalError(
      'APPROVAL_BAD_REQUEST',
      `batch ${batch.id} is in approval round ${current}; round ${seen} does not exist: copy the round from its ack or payoutd status --batch ${batch.id}`,
    );
  }
  const reopen = entries.filter((e) => e.decision === 'reopen').pop();
  const when = reopen
    ? `was reopened at ${new Date(reopen.decidedAt).toISOString()} because ${reopen.comment ?? 'a limit grew'}`
    : 'was reopened';
  const given = r.round == null ? 'this approval names no round (taken as round 1)' : `this approval is for round ${seen}`;
  return new ApprovalError(
    'APPROVAL_STALE',
    `batch ${batch.id} ${when}; ${given}, and the figures it approved no longer stand, so it lets nothing go: read the ` +
      `figures of now (payoutd status --batch ${batch.id}, or its page in the console) and approve again for round ${current} ` +
      `(the line "round: ${current}" in the approval file, or --round ${current})`,
  );
}

/**
 * Decides on a batch waiting for approval. Throws an ApprovalError (with its code) when the request is
 * refused; otherwise the decision is recorded and applied, and the result says what became of the batch.
 */
export async function decideApproval(deps: ApprovalDeps, r: ApprovalRequest): Promise<ApprovalResult> {
  const { sha256 } = checkRequest(r);
  const { db, clock, policy, users } = deps;
  const groups = await users.groupsOf(r.approver);
  if (!mayApprove(policy.approval, r.approver, groups)) {
    throw new ApprovalError(
      'APPROVAL_NOT_ALLOWED',
      `${r.approver} may not approve or reject batches (approval.approvers names the users and groups who may)`,
    );
  }
  // The console and `--as` name the approver only: the uid tells them from an uploader recorded by uid alone.
  // Looked up before the transaction, as the file is hashed: neither may hold the database while it waits.
  const approverUid = r.approverUid ?? (r.decision === 'approve' ? await users.uidOfName(r.approver) : null);
  const before = await getBatch(db, r.batchId);
  // Gone or unreadable (null): not the file approved.
  const fileSha = before && r.decision === 'approve' ? await sha256OfFile(before.storedPath).catch(() => null) : null;
  const rolling24h = await rollingTotalReader(deps);

  const applied = await withBatchForDecision(db, r.batchId, async (trx, batch) => {
    const entries = batch ? await listApprovalEntries(trx, batch.id) : [];
    const now = clock.now();
    const refused = refusal(batch, r, sha256, entries, approverUid, now);
    if (refused) {
      // Ended here as the daemon's pass would end it, so its rows are NOT_SUBMITTED whoever came first.
      if (refused.code === 'APPROVAL_EXPIRED') await endExpiredWait(deps, trx, batch as BatchRecord, now);
      return { error: refused };
    }
    const b = batch as BatchRecord;
    const round = b.approvalRound ?? 0;
    const figures = figuresOf(b);
    const entry: ApprovalEntry = {
      batchId: b.id,
      round,
      decision: r.decision,
      approver: r.approver,
      approverUid,
      agent: r.agent ?? null,
      via: r.via,
      comment: (r.decision === 'reject' ? r.reason : r.comment)?.trim() || null,
      sha256,
      figuresJson: JSON.stringify(figures),
      decidedAt: now,
      instanceId: deps.instanceId ?? null,
    };
    if (r.decision === 'approve' && (b.fileChangedAt !== null || fileSha !== b.sha256)) {
      // Approvals are of the bytes acknowledged; once those changed, none given so far counts.
      await insertApprovalEntry(trx, {
        ...entry,
        decision: 'void',
        approver: null,
        agent: null,
        via: 'daemon',
        comment: `file changed; approval by ${r.approver} refused`,
      });
      await updateBatch(trx, b.id, { approvalRound: round + 1 }, now);
      return {
        error: new ApprovalError(
          'APPROVAL_FILE_CHANGED',
          `batch ${b.id}'s file changed after it was taken (its SHA-256 is no longer ${b.sha256.slice(0, 12)}…): every approval of it is void; it will not be paid as it is (payoutd cancel, or let it expire) — send the corrected file as a new batch`,
        ),
      };
    }
    await insertApprovalEntry(trx, entry);
    if (r.decision === 'reject') {
      const reason = `rejected by ${r.approver} (${r.via}): ${entry.comment ?? ''}`;
      await endUnpaid(trx, b.id, { approvalState: 'REJECTED', code: 'APPROVAL_REJECTED', reason }, now);
      await recordBatchEvent(trx, { batchId: b.id, type: 'approval-rejected', data: { by: r.approver, via: r.via, reason }, at: now });
      return { result: result('rejected', b, r, figures, 0, `batch ${b.id} rejected: none of its rows will be paid (${reason})`) };
    }
    const approvers = new Set([...entries, entry].filter((e) => e.round === round && e.decision === 'approve').map((e) => e.approver));
    const needed = b.approvalsNeeded ?? 1;
    if (approvers.size < needed) {
      return {
        result: result(
          'recorded',
          b,
          r,
          figures,
          approvers.size,
          `approval of batch ${b.id} by ${r.approver} recorded: ${approvers.size} of ${needed}; it waits for another approver`,
        ),
      };
    }
    return { result: await release(deps, trx, b, r, entry, figures, approvers.size, now, await rolling24h(trx, b.id, now)) };
  });
  if ('error' in applied) throw applied.error;
  // Approved yet not let go: an operator may be waiting for money that now needs another decision.
  const level = applied.result.outcome === 'reopened' || applied.result.outcome === 'refused-limit' ? 'warn' : 'info';
  deps.logger?.[level](
    { batchId: r.batchId, approver: r.approver, via: r.via, decision: r.decision, outcome: applied.result.outcome },
    applied.result.message,
  );
  return applied.result;
}

function result(
  outcome: ApprovalOutcome,
  b: BatchRecord,
  r: ApprovalRequest,
  figures: BatchFigures,
  approvals: number,
  message: string,
): ApprovalResult {
  return { outcome, batchId: b.id, approver: r.approver, approvals, needed: b.approvalsNeeded ?? 1, figures, message };
}

/**
 * The approvals are complete: the limits are looked at again now, then the batch is let go (or not). A limit
 * breached beyond what the approvers were shown (one they were not told of, or a 24-hour total grown since)
 * is not theirs to have approved: the batch is refused, or waits for a new round shown the figures of now.
 */
async function release(
  deps: ApprovalDeps,
  trx: DecisionTransaction,
  b: BatchRecord,
  r: ApprovalRequest,
  entry: ApprovalEntry,
  figures: BatchFigures,
  approvals: number,
  now: number,
  rolling: Record<string, string>,
): Promise<ApprovalResult> {
  const { policy } = deps;
  const breaches = limitBreaches(figures, policy.limits, rolling);
  const worse = worseThanApproved(breaches, reasonsOf(b));
  const why = worse.map(worseText).join('; ');
  const daemonEntry: ApprovalEntry = { ...entry, approver: null, approverUid: null, agent: null, via: 'daemon' };
  if (worse.length > 0 && policy.limits.onExceeded === 'refuse') {
    const reason = `approved, but at release ${why}: not paid`;
    await insertApprovalEntry(trx, { ...daemonEntry, decision: 'refuse-limit', comment: reason });
    await recordBatchEvent(trx, { batchId: b.id, type: 'approval-rejected', data: { by: null, code: 'LIMIT_EXCEEDED', reason }, at: now });
    await endUnpaid(trx, b.id, { approvalState: 'REFUSED', code: 'LIMIT_EXCEEDED', reason }, now);
    return result('refused-limit', b, r, figures, approvals, `batch ${b.id}: ${reason}`);
  }
  if (worse.length > 0) {
    // The thresholds stand as they were; the limits are all shown as they are now, the next approvers' figures.
    const reasons = [...reasonsOf(b).filter((x) => !isLimitReason(x)), ...breaches];
    const round = (b.approvalRound ?? 0) + 1;
    await insertApprovalEntry(trx, { ...daemonEntry, decision: 'reopen', comment: why });
    await updateBatch(trx, b.id, { approvalRound: round, approvalReasonsJson: JSON.stringify(reasons) }, now);
    const text = awaitingApprovalText({
      id: b.id,
      sha256: b.sha256,
      figures,
      reasons,
      needed: b.approvalsNeeded ?? 1,
      expiresAt: b.approvalExpiresAt ?? now,
      uploaderKnown: uploaderKnown(b),
      round: round + 1,
    });
    const hold = await holdForApproval(trx, b.id, text, now);
    // Still held as before, so the hold itself tells no one: the new round is news of its own.
    await recordBatchEvent(trx, {
      batchId: b.id,
      type: 'awaiting-approval',
      data: { code: hold.code, reason: hold.reason, until: null, reopened: true, round: round + 1, why },
      at: now,
    });
    return result(
      'reopened',
      b,
      r,
      figures,
      approvals,
      `batch ${b.id} approved, but at release ${why}: not paid; it needs approval again for round ${round + 1}, shown the figures of now`,
    );
  }
  await releaseApproved(trx, b.id, now);
  await recordBatchEvent(trx, {
    batchId: b.id,
    type: 'approved',
    data: { by: r.approver, via: r.via, comment: entry.comment, sha256: b.sha256, totals: figures.totals },
    at: now,
  });
  return result(
    'released',
    b,
    r,
    figures,
    approvals,
    `batch ${b.id} approved by ${[r.approver].join(', ')}: ${totalsText(figures.totals)} will be paid`,
  );
}

/** How long a decision waits for a batch still being read or acknowledged (a large file's ack takes seconds). */
export const READY_WAIT_MS = 120_000;

/** How a decision asked for a moment too early waits for its batch (decideWhenReady). */
export interface ReadyWait {
  /** Resolves after `ms` (tests move their clock instead). */
  sleep(ms: number): Promise<void>;
  /** How long to wait at most, and how often to look again. */
  maxWaitMs: number;
  stepMs: number;
  /** Told once, when the decision has to wait. */
  onWait?(batchId: string): void;
}

/**
 * decideApproval, waiting while the batch is still being read or acknowledged: its ack's first file appears
 * before the batch waits for approval (a large file's spreadsheet copy is still being written), and an
 * approver who acts on it at once means the decision, not a refusal.
 */
export async function decideWhenReady(deps: ApprovalDeps, r: ApprovalRequest, wait: ReadyWait): Promise<ApprovalResult> {
  const until = deps.clock.now() + wait.maxWaitMs;
  for (let told = false; ; told = true) {
    try {
      return await decideApproval(deps, r);
    } catch (err) {
      if (!(err instanceof ApprovalError) || err.code !== 'APPROVAL_NOT_READY' || deps.clock.now() >= until) throw err;
      if (!told) wait.onWait?.(r.batchId);
      await wait.sleep(wait.stepMs);
    }
  }
}

/**
 * The deps of decideApproval from the configuration, for a caller outside the daemon (a command, the web
 * console): the system's users, the policy as configured, the system clock unless given.
 */
export function approvalDepsFrom(
  config: { approval: ApprovalPolicy['approval']; limits: ApprovalPolicy['limits'] },
  db: Database,
  o: { clock?: Clock; users?: UserDirectory; instanceId?: string; logger?: Logger } = {},
): ApprovalDeps {
  return {
    db,
    clock: o.clock ?? systemClock,
    users: o.users ?? new SystemUsers(),
    policy: { approval: config.approval, limits: config.limits },
    instanceId: o.instanceId,
    logger: o.logger,
  };
}

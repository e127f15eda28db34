/**
 * Approvals in SQL (the decisions are src/approval's): the batch locked while
 * a decision is taken, each decision kept for the audit, what the batches of
 * the last 24 hours add up to for the rolling limits, the rows of a batch
 * that ends unpaid, and the batches whose wait for approval ran out.
 */
import type { Knex } from 'knex';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { getBatch, type BatchRecord } from './batches.js';
import { readyRowsNotSubmitted } from './holds.js';
import { moneyOf } from './request-fields.js';
import type { RowState } from '../domain/lifecycle.js';
import type { BatchHold } from '../domain/holds.js';
import { Decimal, decimalText } from '../domain/money.js';

/** The transaction a decision runs in (withBatchForDecision). */
export type DecisionTransaction = Knex.Transaction;

export type ApprovalDecisionKind = 'approve' | 'reject' | 'expire' | 'void' | 'reopen' | 'refuse-limit' | 'cancel';
export type ApprovalVia = 'cli' | 'sftp' | 'console' | 'daemon';

/** One decision on a batch, as the audit shows it. */
export interface ApprovalEntry {
  id?: number;
  batchId: string;
  round: number;
  decision: ApprovalDecisionKind;
  /** null for the daemon's own entries (expiry, a void). */
  approver: string | null;
  approverUid: number | null;
  /** A service account that named the approver (payoutd approve --as). */
  agent: string | null;
  via: ApprovalVia;
  comment: string | null;
  /** The file's SHA-256 the decision was about. */
  sha256: string;
  /** JSON of the figures (totals per currency, rows, largest row) approved or rejected. */
  figuresJson: string;
  decidedAt: number;
  instanceId: string | null;
}

const COLUMNS: Record<keyof ApprovalEntry, string> = {
  id: 'id',
  batchId: 'batch_id',
  round: 'round',
  decision: 'decision',
  approver: 'approver',
  approverUid: 'approver_uid',
  agent: 'agent',
  via: 'via',
  comment: 'comment',
  sha256: 'sha256',
  figuresJson: 'figures_json',
  decidedAt: 'decided_at',
  instanceId: 'instance_id',
};

function fromRow(r: Record<string, unknown>): ApprovalEntry {
  const out: Record<string, unknown> = {};
  for (const [k, c] of Object.entries(COLUMNS)) out[k] = r[c] ?? null;
  out.id = Number(out.id);
  return out as unknown as ApprovalEntry;
}

/**
 * Runs `f` in a transaction holding the batch: on PostgreSQL its row is locked (FOR UPDATE), so two instances
 * deciding on one batch take turns and the second sees the first's decision; on SQLite the write lock,
 * taken before the batch is read (writeTransaction), does the same between the daemon and `payoutd approve`.
 * Also takes the limits lock: a release and an acceptance elsewhere never count the rolling totals at once.
 */
export async function withBatchForDecision<T>(
  db: Database,
  batchId: string,
  f: (trx: Knex.Transaction, batch: BatchRecord | undefined) => Promise<T>,
): Promise<T> {
  return writeTransaction(db, async (trx) => {
    if (isPostgres(db)) {
      await takeLimitsLock(trx);
      await trx('batches').where({ id: batchId }).forUpdate().select('id');
    }
    return f(trx, await getBatch(trx, batchId));
  });
}

/** One lock for every reading of the rolling totals that ends in a release (PostgreSQL; SQLite has one writer). */
export async function takeLimitsLock(trx: Knex.Transaction): Promise<void> {
  if (isPostgres(trx)) await trx.raw('select pg_advisory_xact_lock(hashtext(current_schema() || ?))', ['.payoutd_limits']);
}

export async function insertApprovalEntry(trx: Knex.Transaction | Database, e: ApprovalEntry): Promise<void> {
  const row: Record<string, unknown> = {};
  for (const [k, c] of Object.entries(COLUMNS)) if (k !== 'id') row[c] = (e as unknown as Record<string, unknown>)[k];
  await trx('batch_approvals').insert(row);
}

/** Every decision on a batch, oldest first. */
export async function listApprovalEntries(db: Database | Knex.Transaction, batchId: string): Promise<ApprovalEntry[]> {
  const rows = (await db('batch_approvals').where({ batch_id: batchId }).orderBy('id')) as Record<string, unknown>[];
  return rows.map(fromRow);
}

/**
 * The rows of a cancelled batch that were or may have been sent: CREATING and UNKNOWN may still be paid; PENDING,
 * PAID, CANCELLED and REJECTED reached the service; and any row a create was tried for or that holds a payout,
 * whatever its state (a late create may have paid a row made NOT_SUBMITTED). Only a claim raises create_attempts,
 * and none follows a cancel, so the count never rises after it.
 */
function mayHaveBeenSent(q: Knex.QueryBuilder): Knex.QueryBuilder {
  return q.where((w) =>
    w
      .whereIn('state', ['CREATING', 'UNKNOWN', 'PENDING', 'PAID', 'CANCELLED', 'REJECTED'] satisfies RowState[])
      .orWhere('create_attempts', '>', 0)
      .orWhereNotNull('payout_id'),
  );
}

/** The batches the 24-hour total counts: let go since `since`, or still being paid. */
function countedBatches(db: Knex.Transaction | Database, since: number): Knex.QueryBuilder {
  return db('batches').where((counted) =>
    counted
      .where((w) =>
        w.whereIn('approval_state', ['NONE', 'APPROVED']).andWhere((x) => x.where('released_at', '>=', since).orWhere('state', 'ACTIVE')),
      )
      .orWhere((w) =>
        w
          .whereNull('approval_state')
          .andWhere((x) => x.where('state', 'ACTIVE').orWhere((y) => y.where('state', 'COMPLETE').andWhere('accepted_at', '>=', since))),
      ),
  );
}

/** Per batch id, what a batch an operator cancelled counts per payout currency: its rows that were or may have been sent. */
export type CancelledCounts = Map<string, Record<string, string>>;

/**
 * The counts of the batches counted from `since` that an operator has cancelled, read before a decision takes its
 * lock: no row of a cancelled batch is claimed again, so its count only goes down and a figure read early is never
 * below the truth.
 */
export async function cancelledCounts(db: Database, since: number): Promise<CancelledCounts> {
  const ids = (await countedBatches(db, since).whereNotNull('cancelled_at').pluck('id')) as string[];
  const counts: CancelledCounts = new Map();
  for (const id of ids) counts.set(id, (await moneyOf(db, id, mayHaveBeenSent)).payoutTotals());
  return counts;
}

/**
 * What the batches let go in the last 24 hours (from `since`), and those still being paid, add up to per
 * payout currency, the batch `excludeId` aside: the totals each was let go with (batches from before approval
 * was in use, their file's), or its count in `cancelled` (cancelledCounts). A batch cancelled since that was
 * read counts whole: the rows are not read here, under the decision's lock.
 */
export async function rollingTotals(
  trx: Knex.Transaction | Database,
  since: number,
  excludeId: string,
  cancelled: CancelledCounts,
): Promise<Record<string, string>> {
  const rows = (await countedBatches(trx, since).whereNot({ id: excludeId }).select('id', 'approval_figures_json', 'totals_json')) as {
    id: string;
    approval_figures_json: string | null;
    totals_json: string | null;
  }[];
  const sums = new Map<string, Decimal>();
  for (const r of rows) {
    const totals =
      cancelled.get(r.id) ??
      (r.approval_figures_json
        ? (JSON.parse(r.approval_figures_json) as { totals: Record<string, string> }).totals
        : r.totals_json
          ? (JSON.parse(r.totals_json) as Record<string, string>)
          : {});
    for (const [currency, amount] of Object.entries(totals)) sums.set(currency, (sums.get(currency) ?? new Decimal(0)).plus(amount));
  }
  return Object.fromEntries([...sums].map(([c, d]) => [c, decimalText(d)]));
}

/**
 * A batch that will not be paid: its READY rows become NOT_SUBMITTED with the reason, its hold ends (the
 * finisher then writes its result file), and it keeps why in its record.
 */
export async function endUnpaid(
  trx: Knex.Transaction,
  batchId: string,
  end: { approvalState: string; code: string; reason: string },
  now: number,
): Promise<number> {
  const moved = await readyRowsNotSubmitted(trx, batchId, { code: end.code, reason: end.reason, event: 'not-approved' }, now);
  await trx('batches').where({ id: batchId }).update({
    approval_state: end.approvalState,
    hold_code: null,
    hold_reason: null,
    hold_until: null,
    reject_code: end.code,
    reject_reason: end.reason,
    updated_at: now,
  });
  return moved;
}

/**
 * The approvals a batch needs are in and the limits allow it: it is let go. Only the approval's own hold ends,
 * replaced by `next` (src/holds decides which).
 */
export async function markApproved(trx: Knex.Transaction, batchId: string, now: number, next: BatchHold): Promise<void> {
  await trx('batches')
    .where({ id: batchId, approval_state: 'REQUIRED' })
    .update({ approval_state: 'APPROVED', released_at: now, updated_at: now });
  await trx('batches')
    .where({ id: batchId, hold_code: 'AWAITING_APPROVAL' })
    .update({ hold_code: next.code, hold_reason: next.reason, hold_until: next.until });
}

/** ACTIVE batches still waiting for approval whose time ran out by `now`. */
export async function listExpiredApprovals(db: Database, now: number): Promise<string[]> {
  return (await db('batches')
    .where({ state: 'ACTIVE', approval_state: 'REQUIRED' })
    .andWhere('approval_expires_at', '<=', now)
    .pluck('id')) as string[];
}

/**
 * An operator's cancel of a batch: its READY rows end NOT_SUBMITTED, its hold ends, and a wait for approval
 * ends with it. The cancel stays on the batch (`cancelled_at`): no row of it is claimed again, and one that
 * comes back to READY later (a create the service proves it never got) follows the others. A batch still
 * being read is cancelled too: its rows are the reader's until the acceptance, which does the cancel's work.
 */
import { UsageError } from '../domain/errors.js';
import type { Knex } from 'knex';
import { FINAL_BATCH_STATES, isBeingRead, type BatchState } from '../domain/lifecycle.js';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { getBatch, type BatchRecord } from './batches.js';
import { insertApprovalEntry } from './approvals.js';
import { recordBatchEvent } from './batch-events.js';
import { readyRowsNotSubmitted, releaseBatchHold } from './holds.js';
import { stateCounts, type StateCounts } from './counts.js';
import { OPERATOR_HOLD_CODES } from '../domain/holds.js';
import type { RowState } from '../domain/lifecycle.js';

const operatorCancel = (reason: string): { code: string; reason: string; event: string } => ({
  code: 'CANCELLED_BY_OPERATOR',
  reason,
  event: 'cancelled',
});

/** What a cancel did to a batch's rows. */
export interface CancelOutcome {
  /** READY rows made NOT_SUBMITTED. */
  notSubmitted: number;
  /**
   * Rows claimed for a create (CREATING): one already on the wire is followed to its end; one not yet sent is
   * put back READY by its create's fence and made NOT_SUBMITTED (cancelReturnedRows).
   */
  claimed: number;
  /**
   * Rows whose create's outcome is being resolved by a query of their reference (UNKNOWN): each may still end
   * PAID, or is proven never received and made NOT_SUBMITTED.
   */
  unknown: number;
  /**
   * The batch was still being read (its state then): none of its rows was sent, and its acceptance makes its
   * valid rows NOT_SUBMITTED (cancelOnAcceptance).
   */
  beingRead?: BatchState;
}

/**
 * A cancel of a batch an operator cancelled before: nothing changes, and its reason is not recorded, as the
 * first cancel's stands (a batch is cancelled once). Exit 2, as for any batch a command does not apply to.
 */
export class BatchAlreadyCancelledError extends UsageError {
  constructor(batchId: string, at: number, reason: string | null, by: string | null, ignoredReason: string) {
    super(
      'BATCH_ALREADY_CANCELLED',
      `batch ${batchId} was already cancelled at ${new Date(at).toISOString()}${by ? ` by ${by}` : ''} (${reason ?? 'no reason recorded'}); nothing changed, and this cancel's reason (${ignoredReason}) is not recorded`,
    );
  }
}

/**
 * A cancel that would change nothing: every row was already sent to the payout service (or is final), and no
 * hold waits for an operator. Recording it would label the batch CANCELLED while its rows are paid all the same.
 */
export class BatchNothingToCancelError extends UsageError {
  constructor(batchId: string, counts: StateCounts) {
    const n = (s: RowState): number => counts[s] ?? 0;
    const others = (Object.entries(counts) as [RowState, number][])
      .filter(([s, k]) => k > 0 && s !== 'PENDING' && s !== 'PAID')
      .map(([s, k]) => `, ${k} ${s}`)
      .join('');
    super(
      'BATCH_NOTHING_TO_CANCEL',
      `batch ${batchId} has no row left to cancel: every row was already sent to the payout service (${n('PENDING')} PENDING, ${n('PAID')} PAID${others}); nothing changed and no cancel is recorded`,
    );
  }
}

/**
 * A cancel of a batch that has ended (COMPLETE, REJECTED, DUPLICATE): nothing of it is left to stop. Exit 2, as
 * for any batch a command does not apply to.
 */
export class BatchEndedError extends UsageError {
  constructor(batchId: string, state: BatchState) {
    super(
      'BATCH_ENDED',
      state === 'COMPLETE'
        ? `batch ${batchId} is COMPLETE: every row of it is final (its result file says how each ended); nothing is left to cancel`
        : `batch ${batchId} is ${state}: none of its rows is paid (its ack says why); nothing is left to cancel`,
    );
  }
}

/** Rows a cancel still acts on: unsent (READY), or a create that may not have reached the service (CREATING, UNKNOWN). */
const CANCELLABLE_STATES: readonly RowState[] = ['READY', 'CREATING', 'UNKNOWN'];

/** Who cancelled a batch, as its `cancelled` event says (null: no one named, or a cancel from before these events). */
async function cancelledBy(trx: Database, batchId: string): Promise<string | null> {
  const r = (await trx('batch_events').where({ batch_id: batchId, type: 'cancelled' }).orderBy('seq', 'desc').first('data_json')) as
    { data_json: string } | undefined;
  const by = r === undefined ? null : (JSON.parse(r.data_json) as { by?: unknown }).by;
  return typeof by === 'string' ? by : null;
}

/**
 * Cancels the batch for good, and records its `cancelled` event with it: every channel learns of it, and the
 * status file reads CANCELLED. `by` is the operator's user name for the approval audit and the event: a batch
 * waiting for approval is not decided on after its cancel. A batch still being read is marked cancelled only
 * (its acceptance does the rest). A batch cancelled before: BatchAlreadyCancelledError; one that has ended:
 * BatchEndedError; one with nothing left to cancel: BatchNothingToCancelError.
 */
export async function cancelReadyRows(
  db: Database,
  batchId: string,
  reason: string,
  now: number,
  by: string | null = null,
): Promise<CancelOutcome> {
  return writeTransaction(db, async (trx) => {
    const marked = await trx('batches')
      .where({ id: batchId })
      .whereNull('cancelled_at')
      .update({ cancelled_at: now, cancel_reason: reason, updated_at: now });
    const batch = await getBatch(trx, batchId);
    if (marked === 0 && batch?.cancelledAt != null) {
      throw new BatchAlreadyCancelledError(batchId, batch.cancelledAt, batch.cancelReason ?? null, await cancelledBy(trx, batchId), reason);
    }
    // Thrown inside the transaction: the cancelled_at just set is rolled back with it.
    if (batch && FINAL_BATCH_STATES.includes(batch.state)) throw new BatchEndedError(batchId, batch.state);
    if (batch && isBeingRead(batch.state)) {
      // Told at once, as any cancel: nothing is sent from now on. The reading goes on, so how many rows the cancel
      // stops is not known yet (null, not 0): the acceptance counts them (batch.accepted `cancelledRows`).
      const rowsRead = await batchRowCount(trx, batchId);
      await recordBatchEvent(trx, {
        batchId,
        type: 'cancelled',
        data: { by, reason, notSubmitted: null, claimed: 0, unknown: 0, beingRead: true, rowsRead },
        at: now,
      });
      return { notSubmitted: 0, claimed: 0, unknown: 0, beingRead: batch.state };
    }
    // A hold only an operator lifts (a changed file, an approval) is something a cancel decides, rows or not.
    const counts = await stateCounts(trx, batchId);
    const operatorHold = batch?.holdCode != null && OPERATOR_HOLD_CODES.includes(batch.holdCode);
    if (batch && !operatorHold && CANCELLABLE_STATES.every((s) => !counts[s])) {
      throw new BatchNothingToCancelError(batchId, counts);
    }
    const notSubmitted = batch ? await cancelWork(trx, batch, reason, now, by) : 0;
    // Counted after the cancel's work, as the cancel leaves them: both may still end PAID.
    const left = await stateCounts(trx, batchId);
    const claimed = left.CREATING ?? 0;
    const unknown = left.UNKNOWN ?? 0;
    if (batch) await recordBatchEvent(trx, { batchId, type: 'cancelled', data: { by, reason, notSubmitted, claimed, unknown }, at: now });
    return { notSubmitted, claimed, unknown };
  });
}

/**
 * What a cancel does to the batch, in the caller's transaction: its wait for approval ends (the audit names `by`),
 * its READY rows become NOT_SUBMITTED for `reason`, and its hold ends. How many rows it made NOT_SUBMITTED.
 */
async function cancelWork(trx: Knex.Transaction, batch: BatchRecord, reason: string, now: number, by: string | null): Promise<number> {
  const batchId = batch.id;
  if (batch.approvalState === 'REQUIRED') {
    await insertApprovalEntry(trx, {
      batchId,
      round: batch.approvalRound ?? 0,
      decision: 'cancel',
      approver: by,
      approverUid: null,
      agent: null,
      via: 'cli',
      comment: reason,
      sha256: batch.sha256,
      figuresJson: batch.approvalFiguresJson ?? JSON.stringify({ totals: {}, rows: 0, largest: {} }),
      decidedAt: now,
      instanceId: null,
    });
    await trx('batches').where({ id: batchId, approval_state: 'REQUIRED' }).update({ approval_state: 'CANCELLED' });
  }
  const notSubmitted = await readyRowsNotSubmitted(trx, batchId, operatorCancel(reason), now);
  await releaseBatchHold(trx, batchId, now, 'operator-cancel');
  return notSubmitted;
}

/** Rows of the batch stored so far. */
async function batchRowCount(trx: Database, batchId: string): Promise<number> {
  const [r] = (await trx('payouts').where({ batch_id: batchId }).count({ n: '*' })) as { n: number | string }[];
  return Number(r?.n ?? 0);
}

/**
 * The rows an operator's cancel of a batch being read stops, counted as the batch is made ACTIVE (before the move's
 * cancelOnAcceptance, given the batch read here): those made NOT_SUBMITTED for it already, and those READY it makes
 * so. Null: not cancelled.
 */
export async function rowsCancelledOnAcceptance(trx: Knex.Transaction, id: string): Promise<{ rows: number; batch: BatchRecord } | null> {
  // PostgreSQL: the batch row is locked before its cancel is looked for, so a cancel committing now is waited for
  // and seen, not missed by a plain read and then overwritten by the acceptance. SQLite has one writer. The batch
  // read here is the one activateReadBatch cancels with: this lock is what keeps it current.
  if (isPostgres(trx)) await trx('batches').where({ id }).forUpdate().select('id');
  const batch = await getBatch(trx, id);
  if (batch?.cancelledAt == null) return null;
  const [r] = (await trx('payouts')
    .where({ batch_id: id })
    .andWhere((w) => w.where({ state: 'READY' }).orWhere({ state: 'NOT_SUBMITTED', reason_code: operatorCancel('').code }))
    .count({ n: '*' })) as { n: number | string }[];
  return { rows: Number(r?.n ?? 0), batch };
}

/**
 * The acceptance of a batch an operator cancelled while it was being read: the cancel's work, in the caller's
 * transaction (the one that makes its rows READY, the one that makes it ACTIVE), so no row of it is left READY
 * once accepted and none is ever claimed. How many rows it made NOT_SUBMITTED (0 for a batch not cancelled).
 */
export async function cancelOnAcceptance(trx: Knex.Transaction, of: string | BatchRecord, now: number): Promise<number> {
  const batch = typeof of === 'string' ? await getBatch(trx, of) : of;
  if (batch?.cancelledAt == null) return 0;
  return cancelWork(trx, batch, batch.cancelReason ?? 'cancelled by an operator', now, await cancelledBy(trx, batch.id));
}

/** Rows of cancelled batches back in READY since the cancel, made NOT_SUBMITTED for its reason; how many. */
export async function cancelReturnedRows(db: Database, now: number): Promise<number> {
  const batches = (await db('batches as b')
    .where('b.state', 'ACTIVE')
    .whereNotNull('b.cancelled_at')
    .whereExists((e) => e.select(db.raw('1')).from('payouts as p').whereRaw('p.batch_id = b.id').andWhere('p.state', 'READY'))
    .select('b.id', 'b.cancel_reason')) as { id: string; cancel_reason: string }[];
  let moved = 0;
  for (const b of batches) {
    moved += await writeTransaction(db, (trx) => readyRowsNotSubmitted(trx, b.id, operatorCancel(b.cancel_reason), now));
  }
  return moved;
}

/** Whether any row of the batch was ever sent: a create tried, or a payout of it known. */
export async function anyRowSent(db: Database, batchId: string): Promise<boolean> {
  const sent = await db('payouts')
    .where({ batch_id: batchId })
    .andWhere((q) => q.where('create_attempts', '>', 0).orWhereNotNull('payout_id'))
    .first('id');
  return sent !== undefined;
}

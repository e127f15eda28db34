/**
 * An operator's cancel of a batch: its READY rows end NOT_SUBMITTED, its hold ends, and a wait for approval
 * ends with it. The cancel stays on the batch (`cancelled_at`): no row of it is claimed again, and one that
 * comes back to READY later (a create the service proves it never got) follows the others.
 */
import { writeTransaction, type Database } from './db.js';
import { getBatch } from './batches.js';
import { insertApprovalEntry } from './approvals.js';
import { readyRowsNotSubmitted, releaseBatchHold } from './holds.js';

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
}

/**
 * Cancels the batch for good. `by` is the operator's user name for the approval audit: a batch waiting for
 * approval is not decided on after its cancel.
 */
export async function cancelReadyRows(
  db: Database,
  batchId: string,
  reason: string,
  now: number,
  by: string | null = null,
): Promise<CancelOutcome> {
  return writeTransaction(db, async (trx) => {
    await trx('batches')
      .where({ id: batchId })
      .whereNull('cancelled_at')
      .update({ cancelled_at: now, cancel_reason: reason, updated_at: now });
    const batch = await getBatch(trx, batchId);
    if (batch?.approvalState === 'REQUIRED') {
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
    const r = (await trx('payouts').where({ batch_id: batchId, state: 'CREATING' }).count({ n: '*' }).first()) as
      { n: number | string } | undefined;
    const claimed = Number(r?.n ?? 0);
    return { notSubmitted, claimed };
  });
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

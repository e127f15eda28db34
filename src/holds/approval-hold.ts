/**
 * The holds of approval (src/approval decides when; the holds themselves are
 * put on here, like every hold). AWAITING_APPROVAL waits for an approver,
 * never for a time, and its words say how to approve. Once approved, a batch
 * waits for its balance check (BALANCE_CHECK), as one that needs no approval
 * is checked at acceptance: the balance may have gone meanwhile.
 */
import { BALANCE_CHECK_HOLD, type BatchHold } from '../domain/holds.js';
import { holdBatch, markApproved, type Database, type DecisionTransaction } from '../store/index.js';

export function awaitingApprovalHold(reason: string): BatchHold {
  return { code: 'AWAITING_APPROVAL', reason, until: null };
}

/** Holds the batch for its approval, in the caller's transaction (the decision and the hold commit together). */
export async function holdForApproval(trx: Database, batchId: string, reason: string, now: number): Promise<BatchHold> {
  const hold = awaitingApprovalHold(reason);
  await holdBatch(trx, batchId, hold, now);
  return hold;
}

/** The hold an approval leaves: the daemon checks the balance before the first create (BatchHolds.reviewDue). */
export function balanceCheckHold(): BatchHold {
  return { code: BALANCE_CHECK_HOLD, reason: 'approved; the balance is checked before its first payout is sent', until: null };
}

/** Lets an approved batch go, in the decision's transaction: its approval hold becomes the balance check. */
export async function releaseApproved(trx: DecisionTransaction, batchId: string, now: number): Promise<void> {
  await markApproved(trx, batchId, now, balanceCheckHold());
}

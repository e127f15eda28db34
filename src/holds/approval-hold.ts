/**
 * The hold of a batch waiting for approval (src/approval decides when; the
 * hold itself is put on here, like every hold). AWAITING_APPROVAL waits for
 * an approver, never for a time, and its words say how to approve.
 */
import type { BatchHold } from '../domain/holds.js';
import { holdBatch, type Database } from '../store/index.js';

export function awaitingApprovalHold(reason: string): BatchHold {
  return { code: 'AWAITING_APPROVAL', reason, until: null };
}

/** Holds the batch for its approval, in the caller's transaction (the decision and the hold commit together). */
export async function holdForApproval(trx: Database, batchId: string, reason: string, now: number): Promise<BatchHold> {
  const hold = awaitingApprovalHold(reason);
  await holdBatch(trx, batchId, hold, now);
  return hold;
}

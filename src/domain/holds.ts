/** Holds on a batch: while held, none of its unsent rows is sent. What each hold means; decisions are in src/holds/. */

/**
 * FILE_CHANGED: the upload went on after the file was taken; an operator decides (payoutd release / cancel).
 * INSUFFICIENT_BALANCE: the stablecoin balance will not cover the batch; ends by itself once it does.
 * AWAITING_APPROVAL: reserved for batches that wait for an approval.
 * BALANCE_CHECK: approved; the balance is checked before its first create (then released, or short).
 */
export const HOLD_CODES = ['FILE_CHANGED', 'INSUFFICIENT_BALANCE', 'AWAITING_APPROVAL', 'BALANCE_CHECK'] as const;

export type HoldCode = (typeof HOLD_CODES)[number];

/** Holds only an operator lifts: they also keep a batch from finishing, and its ack states them. */
export const OPERATOR_HOLD_CODES: readonly HoldCode[] = ['FILE_CHANGED', 'AWAITING_APPROVAL'];

/** The hold that ends by itself when its time comes. */
export const BALANCE_HOLD: HoldCode = 'INSUFFICIENT_BALANCE';

/** The hold an approval leaves: nothing is sent until the balance was checked (which ends it at once). */
export const BALANCE_CHECK_HOLD: HoldCode = 'BALANCE_CHECK';

export interface BatchHold {
  code: HoldCode;
  /** In words finance and operators read (ack, status, log). */
  reason: string;
  /** When a timed hold is looked at again (clock ms); null: until an operator decides. */
  until: number | null;
}

/** Why a batch's READY rows are not sent yet, in words (`its batch awaits approval`); null when it waits for nothing. */
export function waitText(hold?: string | null, approval?: string | null): string | null {
  if (approval === 'REQUIRED' || hold === 'AWAITING_APPROVAL') return 'its batch awaits approval';
  if (hold === 'FILE_CHANGED') return 'its batch is held, its upload went on after it was taken, until an operator decides';
  if (hold === 'INSUFFICIENT_BALANCE') return 'its batch is held until the balance covers it';
  return hold === 'BALANCE_CHECK' ? 'its batch waits for its balance check' : null;
}

export function waitsForOperator(code: HoldCode | null): boolean {
  return code !== null && OPERATOR_HOLD_CODES.includes(code);
}

/**
 * Approval states of a batch (src/approval): NONE (checked, not needed), REQUIRED (waiting), APPROVED, and the
 * ends without payment REJECTED, EXPIRED, REFUSED (a limit at release). Only NONE and APPROVED let rows be sent.
 */
export const APPROVAL_STATES = ['NONE', 'REQUIRED', 'APPROVED', 'REJECTED', 'EXPIRED', 'REFUSED', 'CANCELLED'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];
export const RELEASED_APPROVAL_STATES: readonly ApprovalState[] = ['NONE', 'APPROVED'];

/** Which hold a batch gets, and why in words: pure functions of what BatchHolds found. */
import { BALANCE_HOLD, type BatchHold } from '../domain/holds.js';

/** When the change of a taken file was found: before any row was sent, or while the batch was being sent. */
export type ChangeSeen = 'at-acceptance' | 'while-sending';

const OPERATOR_DECIDES = 'payoutd release / payoutd cancel';

/** The upload went on after its file was taken (`change`: how, in words). */
export function fileChangedHold(change: string | undefined, seen: ChangeSeen): BatchHold {
  const what = change ?? 'the file changed after it was taken';
  const reason =
    seen === 'at-acceptance'
      ? `${what}; only the rows read before the change are in this batch and NONE will be paid until an operator decides (${OPERATOR_DECIDES})`
      : `${what}; rows already sent are followed to their end, the others wait for an operator (${OPERATOR_DECIDES})`;
  return { code: 'FILE_CHANGED', reason, until: null };
}

/** The balance check found the batch will not be covered: looked at again after `recheckMs`. */
export function balanceShortHold(reason: string | null, now: number, recheckMs: number): BatchHold {
  return { code: BALANCE_HOLD, reason: reason ?? 'insufficient balance', until: now + recheckMs };
}

/** The service refused a create for the balance (INSUFFICIENT_BALANCE): the batch waits until `until`. */
export function balanceRefusedHold(currency: string, until: number): BatchHold {
  return {
    code: BALANCE_HOLD,
    reason: `the ${currency} balance does not cover the next payout; waiting for a top-up (retry at ${new Date(until).toISOString()})`,
    until,
  };
}

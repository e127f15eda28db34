/**
 * The hold decisions (src/holds/decide.ts): which hold, for how long, and
 * the words finance and operators read; and which holds only an operator
 * lifts (src/domain/holds.ts).
 */
import { describe, expect, it } from 'vitest';
import { HOLD_CODES, waitsForOperator } from '../../src/domain/holds.js';
import { balanceRefusedHold, balanceShortHold, fileChangedHold } from '../../src/holds/index.js';

describe('hold decisions', () => {
  it('a file changed after the claim: held until an operator decides, in words that say what happens to the rows', () => {
    const atAcceptance = fileChangedHold('size changed from 10 to 20 bytes after the claim: the upload went on', 'at-acceptance');
    expect(atAcceptance).toEqual({
      code: 'FILE_CHANGED',
      until: null,
      reason:
        'size changed from 10 to 20 bytes after the claim: the upload went on; only the rows read before the change are in this batch and NONE will be paid until an operator decides (payoutd release / payoutd cancel)',
    });
    const whileSending = fileChangedHold(undefined, 'while-sending');
    expect(whileSending.reason).toBe(
      'the file changed after it was taken; rows already sent are followed to their end, the others wait for an operator (payoutd release / payoutd cancel)',
    );
    expect(waitsForOperator(whileSending.code)).toBe(true);
  });

  it('a short balance: a timed hold that ends by itself', () => {
    expect(balanceShortHold(null, 1000, 60_000)).toEqual({ code: 'INSUFFICIENT_BALANCE', reason: 'insufficient balance', until: 61_000 });
    const refused = balanceRefusedHold('USDT', Date.UTC(2026, 0, 5, 9));
    expect(refused.until).toBe(Date.UTC(2026, 0, 5, 9));
    expect(refused.reason).toBe(
      'the USDT balance does not cover the next payout; waiting for a top-up (retry at 2026-01-05T09:00:00.000Z)',
    );
    expect(waitsForOperator(refused.code)).toBe(false);
  });

  it('only FILE_CHANGED and AWAITING_APPROVAL wait for an operator', () => {
    expect(HOLD_CODES.filter(waitsForOperator)).toEqual(['FILE_CHANGED', 'AWAITING_APPROVAL']);
    expect(waitsForOperator(null)).toBe(false);
  });
});

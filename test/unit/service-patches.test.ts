/**
 * The row patches made of what the payout service says (src/submit/outcome.ts):
 * adoption (a create whose outcome was unknown, found by its reference) sets
 * everything the service knows, including the payout id and the creation
 * time; a settlement found by a poll sets the service's fields and the poll's
 * own, and leaves the payout id and the local creation time alone (setting
 * the id again would only rewrite its index; the creation time is what
 * staleness counts from).
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { isPayoutOf, payoutDifferences, type PayoutRecord } from '../../src/domain/payout.js';
import { createdWhenWritten } from '../../src/store/created-at.js';
import { adoptRecord, settledPatch } from '../../src/submit/outcome.js';

const record = (over: Partial<PayoutRecord> = {}): PayoutRecord => ({
  payoutId: 'P-1',
  merchantReferenceId: 'INV-1',
  status: 'PAID',
  payoutCurrency: 'PHP',
  payoutAmount: '1500.5',
  deductionCurrency: 'USDT',
  deductionAmount: '26.01',
  rate: '57.69',
  totalFee: '0.25',
  feeCurrency: 'USDT',
  createTime: '2026-11-23T01:00:00Z',
  completeTime: '2026-11-23T01:05:00Z',
  failureReason: null,
  ...over,
});

const SERVICE_FIELDS = {
  serviceStatus: 'PAID',
  rate: '57.69',
  deductionAmount: '26.01',
  serviceDeductionCurrency: 'USDT',
  totalFee: '0.25',
  feeCurrency: 'USDT',
  createTime: '2026-11-23T01:00:00Z',
  completeTime: '2026-11-23T01:05:00Z',
  reasonCode: null,
  reason: null,
};

describe('patches from what the service says', () => {
  it("a payout is the row's own by its currencies, in any case, and its amount by value", () => {
    const m = (payoutCurrency: string, payoutAmount: string, deductionCurrency = 'USDT') => ({
      payoutCurrency,
      payoutAmount,
      deductionCurrency,
    });
    const asked = m('PHP', '100.5');
    expect(isPayoutOf(m('php', '100.50', 'usdt'), asked)).toBe(true);
    expect(isPayoutOf(m('PHP', '100.51'), asked)).toBe(false);
    expect(isPayoutOf(m('USD', '100.5'), asked)).toBe(false);
    // Debited in another currency: still the row's payout, but its deduction amount is not in the row's currency.
    expect(payoutDifferences(m('PHP', '100.5', 'USDC'), asked)).toEqual(['deductionCurrency']);
    expect(isPayoutOf(m('PHP', '100.5', 'USDC'), asked)).toBe(true);
    // Compared as decimals, never as floats: trailing zeros do not count, digits past a double's precision do.
    expect(payoutDifferences(m('PHP', '0.3'), m('PHP', '0.30'))).toEqual([]);
    expect(payoutDifferences(m('PHP', '12345678901234567.1'), m('PHP', '12345678901234567.2'))).toEqual(['payoutAmount']);
    expect(payoutDifferences(m('USD', '99'), asked)).toEqual(['payoutCurrency', 'payoutAmount']);
  });

  it('adoption takes the payout id, the time payoutd learned of it and the first poll of a pending payout', () => {
    // created_at is payoutd's own clock (reconciliation periods), whatever the service's createTime says.
    const clock = new ManualClock(1_000);
    expect(adoptRecord(record({ status: 'PENDING', completeTime: null }), clock, 2_000)).toEqual({
      to: 'PENDING',
      patch: {
        ...SERVICE_FIELDS,
        serviceStatus: 'PENDING',
        completeTime: null,
        payoutId: 'P-1',
        // Read from the clock by the write that records it (src/store/created-at.ts).
        createdAtMs: createdWhenWritten(clock),
        // Adopted for its currency and amount: proven the row's own, a later record is not rejected.
        payoutCheckedAt: 1_000,
        nextPollAt: 3_000,
      },
    });
    expect(adoptRecord(record({ createTime: 'soon' }), clock, 2_000).patch).toMatchObject({
      createdAtMs: createdWhenWritten(clock),
      nextPollAt: null,
    });
  });

  it('a settlement found by a poll sets the service fields and the poll, never the payout id or creation time', () => {
    const patch = settledPatch(record(), { pollCount: 4, lastPolledAt: 9_000 });
    expect(patch).toEqual({ ...SERVICE_FIELDS, nextPollAt: null, pollCount: 4, lastPolledAt: 9_000 });
    expect(patch).not.toHaveProperty('payoutId');
    expect(patch).not.toHaveProperty('createdAtMs');
  });

  it('a cancellation carries its reason, or a default one', () => {
    const cancelled = settledPatch(record({ status: 'CANCELLED', failureReason: 'account closed' }), { pollCount: 1, lastPolledAt: 1 });
    expect(cancelled).toMatchObject({ serviceStatus: 'CANCELLED', reasonCode: 'CANCELLED', reason: 'account closed' });
    expect(settledPatch(record({ status: 'CANCELLED' }), { pollCount: 1, lastPolledAt: 1 }).reason).toBe('cancelled by the payout service');
    expect(adoptRecord(record({ status: 'CANCELLED' }), new ManualClock(1), 1).patch).toMatchObject({ reasonCode: 'CANCELLED' });
  });
});

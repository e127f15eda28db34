/**
 * judgeCheck: what a query's answer means for a row whose check was owed. An answer that does not show the row's own
 * payout tells nothing of it, whichever way the row was asked: it is never taken as agreeing (which withdraws the
 * row's note and puts a CANCELLED row back into retry files).
 */
import { describe, expect, it } from 'vitest';
import type { PayoutQueryAnswer, PayoutRecord } from '../../src/domain/payout.js';
import { judgeCheck, type CheckedRow } from '../../src/domain/service-check.js';

function record(payoutId: string, status: PayoutRecord['status'], merchantReferenceId = 'JC-1'): PayoutRecord {
  return {
    payoutId,
    merchantReferenceId,
    status,
    payoutCurrency: 'PHP',
    payoutAmount: '100.50',
    deductionCurrency: 'USDT',
    deductionAmount: '1.79',
    rate: '56.25',
    totalFee: '0',
    feeCurrency: 'USDT',
    createTime: '2026-01-01T00:00:00Z',
    completeTime: null,
    failureReason: null,
  };
}

const answer = (records: PayoutRecord[], unread: PayoutQueryAnswer['unread'] = []): PayoutQueryAnswer => ({ records, unread });
const cancelledRow = (serviceCheck: CheckedRow['serviceCheck']): CheckedRow => ({
  merchantReferenceId: 'JC-1',
  payoutId: 'P1',
  state: 'CANCELLED',
  serviceCheck,
});

describe('judgeCheck', () => {
  for (const kind of ['PAYOUT', 'REFERENCE'] as const) {
    it(`${kind}: an answer without the row's own payout is no answer`, () => {
      expect(judgeCheck(cancelledRow(kind), answer([])).kind).toBe('unanswered');
      // Another payout under the reference, CANCELLED, says nothing of the row's own either.
      expect(judgeCheck(cancelledRow(kind), answer([record('P2', 'CANCELLED')])).kind).toBe('unanswered');
    });

    it(`${kind}: the row's own payout as recorded agrees; reported otherwise contradicts`, () => {
      expect(judgeCheck(cancelledRow(kind), answer([record('P1', 'CANCELLED')])).kind).toBe('agrees');
      const paid = judgeCheck(cancelledRow(kind), answer([record('P1', 'PAID')]));
      expect(paid).toMatchObject({ kind: 'contradicts', status: 'PAID' });
    });
  }

  it('REFERENCE: the own payout read without its reference is no answer of it', () => {
    const unread = [{ payoutId: 'P1', merchantReferenceId: null, status: 'PAID', problem: 'field merchantReferenceId missing' }];
    expect(judgeCheck(cancelledRow('REFERENCE'), answer([], unread)).kind).toBe('unanswered');
  });

  it('REFERENCE: another payout under the reference, PAID, contradicts the row', () => {
    const verdict = judgeCheck(cancelledRow('REFERENCE'), answer([record('P1', 'CANCELLED'), record('P2', 'PAID')]));
    expect(verdict).toMatchObject({ kind: 'contradicts', report: { own: null, others: [{ payoutId: 'P2', status: 'PAID' }] } });
  });

  it('REFERENCE, a row ended without a payout: only other payouts count', () => {
    const none: CheckedRow = { merchantReferenceId: 'JC-1', payoutId: null, state: 'NOT_SUBMITTED', serviceCheck: 'REFERENCE' };
    expect(judgeCheck(none, answer([])).kind).toBe('agrees');
    expect(judgeCheck(none, answer([record('P2', 'PAID')])).kind).toBe('contradicts');
  });
});

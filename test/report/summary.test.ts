import { describe, expect, it } from 'vitest';
import { completedEventData } from '../../src/daemon/finisher.js';
import { ackTotalsRecords, AckTotalsAccumulator } from '../../src/report/ack-totals.js';
import { SummaryAccumulator, summarize, type RowOutcome, type RowOutcomeStatus } from '../../src/report/index.js';

let nextLine = 1;
function row(
  status: RowOutcomeStatus,
  payoutCurrency: string,
  payoutAmount: string,
  paid?: { deduction: string; fee: string; feeCurrency?: string },
): RowOutcome {
  return {
    line: nextLine++,
    merchantReferenceId: `R${nextLine}`,
    payoutCurrency,
    payoutAmount,
    deductionCurrency: 'USDT',
    beneficiaryAccountName: 'n',
    beneficiaryAccountNumber: '1',
    status,
    payoutId: paid ? `P${nextLine}` : null,
    rate: paid ? '56.1' : null,
    deductionAmount: paid?.deduction ?? null,
    totalFee: paid?.fee ?? null,
    feeCurrency: paid ? (paid.feeCurrency ?? 'USDT') : null,
    completeTime: null,
    reason: null,
  };
}

describe('summary', () => {
  it('adds exactly: 0.1 + 0.2 is 0.3, and big amounts keep every digit', () => {
    const s = summarize([
      row('PAID', 'PHP', '0.1', { deduction: '0.1', fee: '0.1' }),
      row('PAID', 'PHP', '0.2', { deduction: '0.2', fee: '0.2' }),
      row('PAID', 'IDR', '99999999999999999999999999.99', { deduction: '9007199254740993', fee: '0' }),
      row('PAID', 'IDR', '0.01', { deduction: '0.01', fee: '0' }),
    ]);
    const amount = (measure: string, currency: string): string | null | undefined =>
      s.rows.find((r) => r.status === 'PAID' && r.measure === measure && r.currency === currency)?.amount;
    expect(amount('payout_amount', 'PHP')).toBe('0.3');
    expect(amount('payout_amount', 'IDR')).toBe('100000000000000000000000000');
    expect(amount('deduction_amount', 'USDT')).toBe('9007199254740993.31');
    expect(amount('total_fee', 'USDT')).toBe('0.3');
  });

  it('lists statuses in fixed order, currencies by code point, a total per status and a grand total', () => {
    const s = summarize([
      row('REJECTED', 'PHP', 'abc'),
      row('PAID', 'PHP', '10', { deduction: '0.2', fee: '0.01', feeCurrency: 'USDC' }),
      row('CANCELLED', 'EUR', '5', { deduction: '5.5', fee: '0.1' }),
      row('PAID', 'EUR', '1.50', { deduction: '1.6', fee: '0.02' }),
      row('REJECTED', 'PHP', '1e5'),
      row('REJECTED', 'PHP', '7'),
    ]);
    expect(s.rowCount).toBe(6);
    expect(s.statusCounts).toEqual({ REJECTED: 3, PAID: 2, CANCELLED: 1 });
    expect(s.rows.map((r) => [r.status, r.measure, r.currency, r.rowCount, r.amount, r.rowsNotSummed])).toEqual([
      ['PAID', 'payout_amount', 'EUR', 1, '1.5', 0],
      ['PAID', 'payout_amount', 'PHP', 1, '10', 0],
      ['PAID', 'deduction_amount', 'USDT', 2, '1.8', 0],
      ['PAID', 'total_fee', 'USDC', 1, '0.01', 0],
      ['PAID', 'total_fee', 'USDT', 1, '0.02', 0],
      ['PAID', 'rows', '', 2, null, null],
      ['CANCELLED', 'payout_amount', 'EUR', 1, '5', 0],
      ['CANCELLED', 'deduction_amount', 'USDT', 1, '5.5', 0],
      ['CANCELLED', 'total_fee', 'USDT', 1, '0.1', 0],
      ['CANCELLED', 'rows', '', 1, null, null],
      // 'abc' and '1e5' are counted but not summed (Decimal alone would read 1e5 as 100000).
      ['REJECTED', 'payout_amount', 'PHP', 3, '7', 2],
      ['REJECTED', 'rows', '', 3, null, null],
      ['ALL', 'rows', '', 6, null, null],
    ]);
  });

  it('accumulates incrementally to the same result', () => {
    const rows = [row('PAID', 'PHP', '1', { deduction: '1', fee: '0' }), row('DUPLICATE', 'PHP', '2')];
    const acc = new SummaryAccumulator();
    expect(acc.rows()).toEqual([{ status: 'ALL', measure: 'rows', currency: '', rowCount: 0, amount: null, rowsNotSummed: null }]);
    for (const r of rows) acc.add(r);
    expect(acc.summary()).toEqual(summarize(rows));
  });

  it('groups a currency written in any letter case as one (the intake accepts it so): summary and completed event', () => {
    const paid = { deduction: '1', fee: '0.5', feeCurrency: 'usdt' };
    const rows = [
      row('PAID', 'PHP', '100', paid),
      row('PAID', 'php', '200', paid),
      row('PAID', 'Php', '300', paid),
      row('REJECTED', 'php', '7'),
    ];
    rows[1] = { ...rows[1]!, deductionCurrency: 'usdt' };
    const s = summarize(rows);
    expect(s.rows.map((r) => [r.status, r.measure, r.currency, r.rowCount, r.amount])).toEqual([
      ['PAID', 'payout_amount', 'PHP', 3, '600'],
      ['PAID', 'deduction_amount', 'USDT', 3, '3'],
      ['PAID', 'total_fee', 'USDT', 3, '1.5'],
      ['PAID', 'rows', '', 3, null],
      ['REJECTED', 'payout_amount', 'PHP', 1, '7'],
      ['REJECTED', 'rows', '', 1, null],
      ['ALL', 'rows', '', 4, null],
    ]);
    const event = completedEventData(
      { resultPath: '/o/r.csv', summaryPath: '/o/s.csv', summary: s },
      { cancelledAt: null, cancelReason: null },
    );
    expect([event['payoutTotals'], event['deductionTotals']]).toEqual([
      { PAID: { PHP: '600' }, REJECTED: { PHP: '7' } },
      { PAID: { USDT: '3' } },
    ]);
  });
});

describe('ack totals', () => {
  it("group a currency written in any letter case as one, shown with the currency's decimals", () => {
    const acc = new AckTotalsAccumulator();
    acc.add({ verdict: 'ACCEPTED', payoutCurrency: 'PHP', payoutAmount: '100' });
    acc.add({ verdict: 'ACCEPTED', payoutCurrency: 'php', payoutAmount: '200' });
    acc.add({ verdict: 'REJECTED', payoutCurrency: 'Php', payoutAmount: '300' });
    const currencies = acc.currencies();
    expect(currencies.map((c) => [c.currency, c.rows, c.amount, c.accepted.amount, c.rejected.amount])).toEqual([
      ['PHP', 3, '600', '300', '300'],
    ]);
    const [line] = ackTotalsRecords({ batchId: 'B', fileName: 'f.csv' }, { currencies, verdict: 'PARTLY_ACCEPTED' });
    expect(line?.[5]).toMatch(/^PHP: 3 rows, 600\.00 \(accepted 2 rows, 300\.00; rejected 1 row, 300\.00\)/);
  });

  it('of an ack written late count the accepted rows already ended, and never say a cancelled row will be paid', () => {
    const acc = new AckTotalsAccumulator();
    acc.add({ verdict: 'ACCEPTED', payoutCurrency: 'PHP', payoutAmount: '100', ended: 'PAID' });
    acc.add({ verdict: 'ACCEPTED', payoutCurrency: 'PHP', payoutAmount: '200', ended: 'CANCELLED' });
    acc.add({ verdict: 'ACCEPTED', payoutCurrency: 'EUR', payoutAmount: '5', ended: 'REJECTED' });
    acc.add({ verdict: 'REJECTED', payoutCurrency: 'PHP', payoutAmount: '300' });
    const currencies = acc.currencies();
    const text = (verdict: 'PARTLY_ACCEPTED' | 'HELD'): string[] =>
      ackTotalsRecords({ batchId: 'B', fileName: 'f.csv' }, { currencies, verdict }).map((l) => l[5] ?? '');
    const [eur, php] = text('PARTLY_ACCEPTED');
    expect(php).toBe(
      'PHP: 3 rows, 600.00 (accepted 2 rows, 300.00; rejected 1 row, 300.00; of the accepted: already paid 1 row, 100.00; ' +
        'already cancelled by the payout service 1 row, 200.00). Batch PARTLY_ACCEPTED: this acknowledgement was written late, ' +
        'after some rows had ended: rows already paid are paid; rows already cancelled by the payout service are not paid; ' +
        'rows already refused by the payout service are not paid; the rejected rows are not paid (see each row)',
    );
    expect(eur).toMatch(
      /^EUR: 1 row, 5\.00 \(accepted 1 row, 5\.00; rejected 0 rows, 0\.00; of the accepted: already refused by the payout service 1 row, 5\.00\)/,
    );
    // No accepted row is left to send: nothing is said to be paid later.
    expect(php).not.toContain('will be paid');
    // A hold's words stand (they speak of rows not yet sent); the counts are there all the same.
    expect(text('HELD')[1]).toMatch(
      /already paid 1 row, 100\.00.*Batch HELD: no row not yet sent is paid until an operator releases the batch$/,
    );
  });
});

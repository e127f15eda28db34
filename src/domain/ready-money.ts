/**
 * ReadyMoney: what a batch's READY rows will cost as their requests say, per stablecoin and payout currency
 * (the total, the rows and the largest amount). The balance and approval gates decide on it; it is added up
 * in the pass that writes the batch's acknowledgement, or read from the store when that pass did not run.
 */
import { ExactTotal } from './exact-total.js';
import { compareAmounts, decimalText, sumAmounts, type Decimal } from './money.js';

export interface ReadyMoneyPair {
  deductionCurrency: string;
  payoutCurrency: string;
  total: Decimal;
  rows: number;
  /** The largest single amount, as the request has it. */
  largest: string;
}

export class ReadyMoney {
  private readonly pairs = new Map<
    string,
    { deductionCurrency: string; payoutCurrency: string; sum: ExactTotal; rows: number; largest: string }
  >();

  add(deductionCurrency: string, payoutCurrency: string, amount: string): void {
    const key = `${deductionCurrency} ${payoutCurrency}`;
    let pair = this.pairs.get(key);
    if (!pair) this.pairs.set(key, (pair = { deductionCurrency, payoutCurrency, sum: new ExactTotal(), rows: 0, largest: amount }));
    pair.sum.add(amount);
    pair.rows += 1;
    if (compareAmounts(amount, pair.largest) > 0) pair.largest = amount;
  }

  /** The total per payout currency, whatever the stablecoin: what the accepted rows pay, as a batch states it. */
  payoutTotals(): Record<string, string> {
    const totals: Record<string, string> = {};
    for (const p of this.pairs.values())
      totals[p.payoutCurrency] = sumAmounts([totals[p.payoutCurrency] ?? '0', decimalText(p.sum.toDecimal())]);
    return totals;
  }

  /** Per stablecoin and payout currency, in the order first seen. */
  entries(): ReadyMoneyPair[] {
    return [...this.pairs.values()].map((p) => ({
      deductionCurrency: p.deductionCurrency,
      payoutCurrency: p.payoutCurrency,
      total: p.sum.toDecimal(),
      rows: p.rows,
      largest: p.largest,
    }));
  }
}

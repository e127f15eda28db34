/**
 * ReadyMoney: what a batch's READY rows will cost as their requests say, per stablecoin and payout currency
 * (the total, the rows and the largest amount). The balance and approval gates decide on it; it is added up
 * in the pass that writes the batch's acknowledgement, or read from the store when that pass did not run.
 */
import { ExactTotal } from './exact-total.js';
import { compareAmounts, type Decimal } from './money.js';

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

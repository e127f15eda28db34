/**
 * BalanceGate: estimates what a batch's unpaid rows will cost per stablecoin (plus a buffer) against the
 * balance. It only decides whether to wait; each create's answer remains the truth.
 */
import type { Logger } from 'pino';
import { isApiError } from '../api/errors.js';
import { Decimal, decimalText } from '../domain/money.js';
import type { PayoutService } from '../domain/payout.js';
import type { ReadyMoney } from '../domain/ready-money.js';
import { readyMoneyOf, type Database } from '../store/index.js';

export interface BalanceVerdict {
  ok: boolean;
  /** Why the batch must wait, naming currency, need and availability. */
  reason: string | null;
}

export interface BalanceGateOptions {
  bufferPercent: number;
}

export class BalanceGate {
  constructor(
    private readonly db: Database,
    private readonly service: PayoutService,
    private readonly logger: Logger,
    private readonly o: BalanceGateOptions,
  ) {}

  /** Sum of READY payout amounts per (deductionCurrency, payoutCurrency); a request's amount is a plain decimal. */
  private static outstanding(money: ReadyMoney): Map<string, Map<string, Decimal>> {
    const sums = new Map<string, Map<string, Decimal>>();
    for (const pair of money.entries()) {
      let byPayout = sums.get(pair.deductionCurrency);
      if (!byPayout) sums.set(pair.deductionCurrency, (byPayout = new Map()));
      byPayout.set(pair.payoutCurrency, pair.total);
    }
    return sums;
  }

  /** Whether the balance covers the batch's READY rows; `ready`, when the caller has added them up, spares reading them. */
  async check(batchId: string, signal?: AbortSignal, ready?: ReadyMoney | null): Promise<BalanceVerdict> {
    const sums = BalanceGate.outstanding(ready ?? (await readyMoneyOf(this.db, batchId)));
    if (sums.size === 0) return { ok: true, reason: null };
    const currencies = [...new Set([...sums.values()].flatMap((m) => [...m.keys()]))];
    try {
      const [rates, balances] = await Promise.all([this.service.exchangeRates(currencies, signal), this.service.balances(signal)]);
      const shortfalls: string[] = [];
      for (const [coin, byPayout] of sums) {
        let need = new Decimal(0);
        for (const [fiat, amount] of byPayout) {
          const rate = rates.find((r) => r.sourceCurrency === coin && r.targetCurrency === fiat);
          if (!rate || new Decimal(rate.rate).lte(0)) return { ok: true, reason: null }; // cannot estimate: let the creates decide
          need = need.plus(amount.div(rate.rate));
        }
        need = need.times(new Decimal(100).plus(this.o.bufferPercent)).div(100);
        const available = new Decimal(balances.find((b) => b.currency === coin)?.available ?? '0');
        if (need.gt(available)) {
          shortfalls.push(
            `needs about ${decimalText(need.toDecimalPlaces(2, Decimal.ROUND_UP))} ${coin}, ${decimalText(available)} available`,
          );
        }
      }
      if (shortfalls.length === 0) return { ok: true, reason: null };
      return { ok: false, reason: `insufficient balance: ${shortfalls.join('; ')} (estimate with ${this.o.bufferPercent}% buffer)` };
    } catch (err) {
      // The check is a courtesy; the creates themselves will meet INSUFFICIENT_BALANCE if it matters.
      this.logger.warn({ batchId, err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' } }, 'balance check failed; proceeding');
      return { ok: true, reason: null };
    }
  }
}

/**
 * BalanceGate: estimates what a batch's unpaid rows will cost per stablecoin (the amounts at the indicative
 * rates, a buffer for rate moves, and a fee per payout) against the balance. It only decides whether to wait;
 * each create's answer remains the truth.
 */
import type { Logger } from 'pino';
import { isApiError } from '../api/errors.js';
import { Decimal, decimalText, isPlainDecimal } from '../domain/money.js';
import type { PayoutService } from '../domain/payout.js';
import type { ReadyMoney, ReadyMoneyPair } from '../domain/ready-money.js';
import { readyMoneyOf, recentFees, type ChargedFee, type Database } from '../store/index.js';

export interface BalanceVerdict {
  ok: boolean;
  /** Why the batch must wait, naming currency, need and availability, and the parts of the estimate. */
  reason: string | null;
}

export interface BalanceGateOptions {
  bufferPercent: number;
  /** The fee of one payout per stablecoin, decimal text in that coin (config batch.balanceCheck.feePerPayout). */
  feePerPayout?: Readonly<Record<string, string>>;
}

/** How many of the latest payouts created tell what a payout's fee is now. */
export const RECENT_FEE_PAYOUTS = 200;

/** The fee counted per payout in one stablecoin, and in words where it comes from. */
interface FeeEstimate {
  perPayout: Decimal;
  /** Where `perPayout` comes from; null: no fee is known for the coin, none is counted. */
  source: string | null;
  /** Currencies other than the coin that its recent payouts' fees were charged in: not counted. */
  elsewhere: string[];
}

const CONFIG_NAME = 'batch.balanceCheck.feePerPayout';

/** An estimate shown to two decimals, never below what it is. */
function about(d: Decimal): string {
  return decimalText(d.toDecimalPlaces(2, Decimal.ROUND_UP));
}

export class BalanceGate {
  constructor(
    private readonly db: Database,
    private readonly service: PayoutService,
    private readonly logger: Logger,
    private readonly o: BalanceGateOptions,
  ) {}

  /** The READY pairs of (payout currency, amounts) per deduction currency. */
  private static outstanding(money: ReadyMoney): Map<string, ReadyMoneyPair[]> {
    const byCoin = new Map<string, ReadyMoneyPair[]>();
    for (const pair of money.entries()) {
      let pairs = byCoin.get(pair.deductionCurrency);
      if (!pairs) byCoin.set(pair.deductionCurrency, (pairs = []));
      pairs.push(pair);
    }
    return byCoin;
  }

  /**
   * The larger of the configured fee and the largest fee of recent payouts in `coin`. A fee charged in another
   * currency cannot be added to an amount in the coin without a rate, so it is named and left out.
   */
  private feeOf(coin: string, fees: readonly ChargedFee[]): FeeEstimate {
    let seen: Decimal | null = null;
    const elsewhere = new Set<string>();
    for (const f of fees) {
      if (f.deductionCurrency !== coin) continue;
      if (f.feeCurrency !== coin) elsewhere.add(f.feeCurrency);
      else if (isPlainDecimal(f.totalFee) && (seen === null || seen.lt(f.totalFee))) seen = new Decimal(f.totalFee);
    }
    const configured = this.o.feePerPayout?.[coin];
    const seenWords = `the largest fee of the last ${RECENT_FEE_PAYOUTS} payouts in ${coin}`;
    let fee: Omit<FeeEstimate, 'elsewhere'>;
    if (configured !== undefined && (seen === null || seen.lt(configured)))
      fee = { perPayout: new Decimal(configured), source: CONFIG_NAME };
    else if (seen !== null) fee = { perPayout: seen, source: seenWords };
    else fee = { perPayout: new Decimal(0), source: null };
    return { ...fee, elsewhere: [...elsewhere].sort() };
  }

  /** Whether the balance covers the batch's READY rows; `ready`, when the caller has added them up, spares reading them. */
  async check(batchId: string, signal?: AbortSignal, ready?: ReadyMoney | null): Promise<BalanceVerdict> {
    const byCoin = BalanceGate.outstanding(ready ?? (await readyMoneyOf(this.db, batchId)));
    if (byCoin.size === 0) return { ok: true, reason: null };
    const fees = await recentFees(this.db, RECENT_FEE_PAYOUTS);
    const currencies = [...new Set([...byCoin.values()].flatMap((pairs) => pairs.map((p) => p.payoutCurrency)))];
    try {
      const [rates, balances] = await Promise.all([this.service.exchangeRates(currencies, signal), this.service.balances(signal)]);
      const shortfalls: string[] = [];
      coins: for (const [coin, pairs] of byCoin) {
        let amounts = new Decimal(0);
        let payouts = 0;
        for (const pair of pairs) {
          const rate = rates.find((r) => r.sourceCurrency === coin && r.targetCurrency === pair.payoutCurrency);
          if (!rate || !new Decimal(rate.rate).gt(0)) {
            // Without a rate nothing of this coin can be estimated: its creates decide; the other coins are still checked.
            this.logger.warn(
              { batchId, deductionCurrency: coin, payoutCurrency: pair.payoutCurrency, rate: rate?.rate ?? null },
              `balance check: no usable ${coin}/${pair.payoutCurrency} rate from the service; the ${coin} balance is not checked for this batch, its creates will tell`,
            );
            continue coins;
          }
          amounts = amounts.plus(pair.total.div(rate.rate));
          payouts += pair.rows;
        }
        const buffer = amounts.times(this.o.bufferPercent).div(100);
        const fee = this.feeOf(coin, fees);
        const feeTotal = fee.perPayout.times(payouts);
        const need = amounts.plus(buffer).plus(feeTotal);
        if (fee.source === null)
          this.logger.warn(
            { batchId, currency: coin },
            `balance check: no fee known for ${coin} (none configured, no recent payout): the estimate counts none; set ${CONFIG_NAME}.${coin}`,
          );
        if (fee.elsewhere.length > 0)
          this.logger.warn(
            { batchId, currency: coin, feeCurrencies: fee.elsewhere },
            `balance check: recent ${coin} payouts were charged fees in ${fee.elsewhere.join(', ')}; those are not counted in the ${coin} estimate`,
          );
        const available = new Decimal(balances.find((b) => b.currency === coin)?.available ?? '0');
        if (need.gt(available)) shortfalls.push(this.shortfall(coin, { need, available, amounts, buffer, payouts, fee, feeTotal }));
      }
      if (shortfalls.length === 0) return { ok: true, reason: null };
      return { ok: false, reason: `insufficient balance: ${shortfalls.join('; ')}` };
    } catch (err) {
      // The check is a courtesy; the creates themselves will meet INSUFFICIENT_BALANCE if it matters.
      this.logger.warn({ batchId, err: isApiError(err) ? err.toLog() : { code: 'UNEXPECTED' } }, 'balance check failed; proceeding');
      return { ok: true, reason: null };
    }
  }

  /** One coin's shortfall in words: the need, the balance, and the parts of the estimate, so an operator sees why. */
  private shortfall(
    coin: string,
    e: { need: Decimal; available: Decimal; amounts: Decimal; buffer: Decimal; payouts: number; fee: FeeEstimate; feeTotal: Decimal },
  ): string {
    const parts = [`${about(e.amounts)} for the amounts at the indicative rates`, `${about(e.buffer)} buffer (${this.o.bufferPercent}%)`];
    if (e.fee.source === null) parts.push(`no fees (none known for ${coin}: set ${CONFIG_NAME}.${coin})`);
    else
      parts.push(
        `${decimalText(e.feeTotal)} for ${e.payouts} ${e.payouts === 1 ? 'fee' : 'fees'} of ${decimalText(e.fee.perPayout)} (${e.fee.source})`,
      );
    const left = e.fee.elsewhere.length > 0 ? `; fees charged in ${e.fee.elsewhere.join(', ')} not counted` : '';
    return `needs about ${about(e.need)} ${coin}, ${decimalText(e.available)} available (${parts.join(' + ')}${left})`;
  }
}

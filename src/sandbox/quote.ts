/** What a payout costs: payoutAmount / rate rounded UP to 6 decimals (never under-debits), plus the fixed fee. */
import { Decimal, decimalText, normalizeAmount } from '../domain/money.js';

export interface Quote {
  /** The applied rate, normal form. */
  rate: string;
  /** Total debited, fee included, normal form. */
  deductionAmount: string;
  totalFee: string;
}

export const DEDUCTION_DECIMALS = 6;

export function quotePayout(payoutAmount: string, rate: string, fixedFee: string): Quote {
  const principal = new Decimal(payoutAmount).div(rate).toDecimalPlaces(DEDUCTION_DECIMALS, Decimal.ROUND_UP);
  return {
    rate: normalizeAmount(rate),
    deductionAmount: decimalText(principal.plus(fixedFee)),
    totalFee: normalizeAmount(fixedFee),
  };
}

/** How many decimals a currency's amounts show: the rules' override, the stablecoins', ISO 4217's. */
import { ISO_4217_MINOR_UNITS } from './iso4217.js';

/** Decimals shown for the stablecoins funding payouts (both carry 6 on chain). */
export const STABLECOIN_DECIMALS: ReadonlyMap<string, number> = new Map([
  ['USDT', 6],
  ['USDC', 6],
]);

/** Minor units of a currency (override, stablecoin, ISO 4217), undefined when unknown. */
export function currencyDecimals(currency: string, overrides?: Readonly<Record<string, number>>): number | undefined {
  return overrides?.[currency] ?? STABLECOIN_DECIMALS.get(currency) ?? ISO_4217_MINOR_UNITS.get(currency);
}

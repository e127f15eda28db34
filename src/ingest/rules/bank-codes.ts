/** Bank identifiers with a checkable structure: BIC (ISO 9362) and the US ABA routing number's checksum. */
import { ISO_3166_ALPHA2 } from './iso3166.js';

export type BicProblem = { kind: 'format' } | { kind: 'country'; country: string };

/** Checks an upper-case BIC: 4 letters bank, 2 letters country, 2 location, optional 3 branch. */
export function bicProblem(bic: string): BicProblem | null {
  if (!/^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?$/.test(bic)) return { kind: 'format' };
  const country = bic.slice(4, 6);
  // Kosovo has BICs under its user-assigned code.
  if (!ISO_3166_ALPHA2.has(country) && country !== 'XK') return { kind: 'country', country };
  return null;
}

export type AbaProblem = { kind: 'format' } | { kind: 'prefix'; prefix: string } | { kind: 'checksum' };

/** First two digits the Federal Reserve assigns: 00-12 (banks, 00 government), 21-32 (thrifts), 61-72 (electronic), 80 (traveler's checks). */
function abaPrefixValid(prefix: number): boolean {
  return prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
}

/** 3*(d1+d4+d7) + 7*(d2+d5+d8) + (d3+d6+d9) must be a multiple of 10. */
export function abaChecksumValid(routing: string): boolean {
  const weights = [3, 7, 1, 3, 7, 1, 3, 7, 1];
  let sum = 0;
  for (let i = 0; i < 9; i++) sum += (routing.charCodeAt(i) - 48) * (weights[i] ?? 0);
  return sum % 10 === 0;
}

/** Checks a US routing number; null when valid. */
export function abaProblem(routing: string): AbaProblem | null {
  if (!/^\d{9}$/.test(routing)) return { kind: 'format' };
  const prefix = routing.slice(0, 2);
  if (!abaPrefixValid(Number.parseInt(prefix, 10))) return { kind: 'prefix', prefix };
  return abaChecksumValid(routing) ? null : { kind: 'checksum' };
}

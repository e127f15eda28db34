/** Retry references: `<base>-R<n>` is round n of the payout `<base>` (made by report/retry.ts, checked at intake). */

const ROUND_SUFFIX = /^(.+)-R([1-9]\d{0,5})$/;

/** The reference a retry derives from and the round this one already is (0 for an original). */
export function retryBase(reference: string): { base: string; round: number } {
  const m = ROUND_SUFFIX.exec(reference);
  return m?.[1] && m[2] ? { base: m[1], round: Number.parseInt(m[2], 10) } : { base: reference, round: 0 };
}

/** The references a retry row may retry: its base and each earlier round (none for an original). */
export function retriedReferences(reference: string): string[] {
  const { base, round } = retryBase(reference);
  return round === 0 ? [] : [base, ...Array.from({ length: round - 1 }, (_, i) => `${base}-R${i + 1}`)];
}

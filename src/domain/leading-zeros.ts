/**
 * Leading zeros a spreadsheet drops from identifiers (`0012345670000` opened and saved as CSV is `12345670000`),
 * and what a row keeps of them once retention removes its stored request: for each such field, how many
 * leading zeros it had and a short hash of the rest. A retry row is checked against that as against the request,
 * with no account number kept.
 */
import { createHash } from 'node:crypto';
import { REQUEST_VALUE_INDEX, type PayoutRequestField } from './request-values.js';

/** Fields whose leading zeros a spreadsheet drops. */
export const ZERO_PADDED_FIELDS: readonly PayoutRequestField[] = ['beneficiary.accountNumber', 'beneficiary.bankCode', 'sender.idValue'];

/** How a field of an original row was written: its leading zeros, and the rest as text or as its hash only. */
export interface ZeroPadding {
  zeros: number;
  rest?: string;
  hash?: string;
}

/**
 * Short on purpose: a hash of a few digits could be reversed by trying every number, and this one matches many
 * numbers of any length, so what retention keeps names no account. A chance match refuses a retry row, never pays it.
 */
const HASH_HEX = 6;

/** The hash kept of the rest of `field` of the row `reference` (both in it, so one table of hashes fits no two rows). */
function restHash(reference: string, field: PayoutRequestField, rest: string): string {
  return createHash('sha256').update(`${reference}\u0000${field}\u0000${rest}`, 'utf8').digest('hex').slice(0, HASH_HEX);
}

/** The padding of a value as written: null when it has no leading zeros followed by more (nothing to lose). */
function paddingOf(value: string): { zeros: number; rest: string } | null {
  if (!/^0+\d/.test(value)) return null;
  const rest = value.replace(/^0+/, '');
  return rest === '' ? null : { zeros: value.length - rest.length, rest };
}

/**
 * What retention keeps of a row's request (values in PAYOUT_REQUEST_FIELDS order): `[[field index, zeros, hash],…]`
 * as JSON, or null when no field has leading zeros.
 */
export function keptZeroPadding(reference: string, values: readonly string[]): string | null {
  const kept: [number, number, string][] = [];
  for (const field of ZERO_PADDED_FIELDS) {
    const at = REQUEST_VALUE_INDEX[field];
    const padding = paddingOf(values[at] ?? '');
    if (padding) kept.push([at, padding.zeros, restHash(reference, field, padding.rest)]);
  }
  return kept.length === 0 ? null : JSON.stringify(kept);
}

/** The padding of each field of an original: from its request values, or from what retention kept of them. */
export function paddingsOf(original: { values: readonly string[] } | { kept: string }): Map<PayoutRequestField, ZeroPadding> {
  const out = new Map<PayoutRequestField, ZeroPadding>();
  if ('values' in original) {
    for (const field of ZERO_PADDED_FIELDS) {
      const padding = paddingOf(original.values[REQUEST_VALUE_INDEX[field]] ?? '');
      if (padding) out.set(field, padding);
    }
    return out;
  }
  for (const [at, zeros, hash] of JSON.parse(original.kept) as [number, number, string][]) {
    const field = ZERO_PADDED_FIELDS.find((f) => REQUEST_VALUE_INDEX[f] === at);
    if (field) out.set(field, { zeros, hash });
  }
  return out;
}

/** Whether `value` of `field` is the original `reference`'s, as `padding` says it was written, without its zeros. */
export function lostZeros(reference: string, field: PayoutRequestField, padding: ZeroPadding, value: string): boolean {
  if (value === '') return false;
  if (padding.rest !== undefined) return padding.rest === value;
  return !value.startsWith('0') && padding.hash === restHash(reference, field, value);
}

/** Whether a value may be one whose leading zeros a spreadsheet dropped: digits only, not starting with zero. */
export function mayHaveLostZeros(value: string): boolean {
  return /^[1-9]\d*$/.test(value);
}

/**
 * A stored row a retry row may repeat, as the intake's lookup gives it: its request as stored (request_values), what
 * retention kept of its leading zeros (keptZeroPadding), or that retention removed its request keeping nothing.
 */
export type StoredOriginal = { values: string } | { kept: string } | { removed: { batchId: string; file: string } };

/**
 * The digits of an all-digit reference without its leading zeros (`000123` and `123`: `123`; `000`: `0`), else
 * null. Stored with each row (migration 0040), so the acceptance finds a reference a spreadsheet stripped.
 */
export function referenceDigits(reference: string): string | null {
  return /^\d+$/.test(reference) ? reference.replace(/^0+(?=\d)/, '') : null;
}

/**
 * Whether two references may be one as a spreadsheet saves them: other text, the same digits (`000123`, `0123`,
 * `123`). A column of the format `0000` shows `000123`, saved as `123`, as `0123`: zeros lost, yet some kept.
 */
export function sameButLeadingZeros(a: string, b: string): boolean {
  const digits = referenceDigits(a);
  return a !== b && digits !== null && digits === referenceDigits(b);
}

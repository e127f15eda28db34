/** Money as decimal text from cell to wire to database to file; arithmetic uses decimal.js, never a float. */
import { Decimal as DecimalJs } from 'decimal.js';

/** A Decimal constructor with room for any amount we will ever add up. */
export const Decimal = DecimalJs.clone({ precision: 80, rounding: DecimalJs.ROUND_HALF_EVEN, toExpNeg: -100, toExpPos: 100 });
export type Decimal = InstanceType<typeof Decimal>;

/** A plain decimal as finance writes it: digits, optional fraction, no sign, no exponent. */
const PLAIN_DECIMAL = /^(\d+)(?:\.(\d+))?$/;

export function isPlainDecimal(text: string): boolean {
  return PLAIN_DECIMAL.test(text);
}

/** What a total adds: a signed plain decimal. Decimal itself would also take `1e5` or `0x10`. */
const SUMMABLE = /^-?\d+(\.\d+)?$/;
/** Longer texts are not summed (Decimal has 80 significant digits; a rejected row's cell can hold anything). */
const MAX_SUMMABLE_LENGTH = 60;

/**
 * Whether an amount as written is added to a total: one rule for the summary, the ack, the status file and the
 * console, so they give the same sums for a batch (a rejected `-5` counts in each).
 */
export function isSummableAmount(text: string): boolean {
  return text.length <= MAX_SUMMABLE_LENGTH && SUMMABLE.test(text);
}

/** Number of digits after the point, as written. */
export function fractionDigits(text: string): number {
  const dot = text.indexOf('.');
  return dot < 0 ? 0 : text.length - dot - 1;
}

/** An amount already in normal form (most, as finance writes them): returned as it is, with no match to take apart. */
const NORMAL_FORM = /^(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;

/** The contract's normal form of an amount (`1500.50` -> `1500.5`, `0100.00` -> `100`); throws on a non-decimal. */
export function normalizeAmount(text: string): string {
  if (NORMAL_FORM.test(text)) return text;
  const m = /^(-)?(\d+)(?:\.(\d*))?$/.exec(text);
  if (!m) throw new TypeError(`not a plain decimal amount: ${JSON.stringify(text)}`);
  const [, sign, intRaw = '', fracRaw = ''] = m;
  const intPart = intRaw.replace(/^0+(?=\d)/, '');
  const frac = fracRaw.replace(/0+$/, '');
  const body = frac ? `${intPart}.${frac}` : intPart;
  return sign && /[1-9]/.test(body) ? `-${body}` : body;
}

/** Decimal text of a Decimal, never in exponent form, normal form. */
export function decimalText(d: Decimal): string {
  return normalizeAmount(d.toFixed());
}

/** Which of two amounts is larger; two in normal form (most) compare by their digits, without a Decimal. */
export function compareAmounts(a: string, b: string): number {
  if (!NORMAL_FORM.test(a) || !NORMAL_FORM.test(b)) return new Decimal(a).comparedTo(new Decimal(b));
  // No leading zeros: more integer digits is more; as many, the digits decide from the left.
  const aInt = a.indexOf('.') < 0 ? a.length : a.indexOf('.');
  const bInt = b.indexOf('.') < 0 ? b.length : b.indexOf('.');
  if (aInt !== bInt) return aInt < bInt ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Sum of decimal texts, as normal-form text. */
export function sumAmounts(amounts: Iterable<string>): string {
  let total = new Decimal(0);
  for (const a of amounts) total = total.plus(a);
  return decimalText(total);
}

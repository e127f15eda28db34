/**
 * Canonical ("minified") JSON, the text both signature schemes hash (spec 5.3): keys sorted by code point, no
 * whitespace, numbers from their lexeme as Java's BigDecimal.toPlainString() renders them, never through a float.
 */
import { LosslessNumber, isLosslessNumber, parse } from 'lossless-json';

/** How object keys are ordered; `canonicalJson.sortKeys` in the config. */
export interface CanonicalOptions {
  sortKeys: boolean;
}

export const DEFAULT_CANONICAL: CanonicalOptions = { sortKeys: true };

/** A JSON number kept as its decimal text. */
export { LosslessNumber as JsonNumber };

const NUMBER_LEXEME = /^(-)?(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** Largest exponent written out in full at all: beyond it a number is refused rather than built as a huge string. */
export const MAX_EXPONENT = 10_000;

/**
 * Largest exponent written out in full when minifying a received body, which anyone can send. No amount, rate
 * or fee comes near a hundred digits either side of the point, and each number of such a body can then grow by
 * a hundred characters at most. The service's answers are read with MAX_EXPONENT: a BigDecimal zero at a large
 * scale (0E-101) is a genuine value there.
 */
export const MAX_PLAIN_EXPONENT = 100;

/** A number the canonical writer will not write out: its exponent, or the body's growth, is out of proportion. */
export class NumberExpansionError extends RangeError {
  override readonly name = 'NumberExpansionError';
  constructor(
    readonly code: 'EXPONENT_OUT_OF_RANGE' | 'EXPANSION_OVER_LIMIT',
    message: string,
  ) {
    super(message);
  }
}

/** Plain (non-exponent) decimal text of a JSON number lexeme, exactly; exponents beyond `maxExponent` are refused. */
export function plainNumberText(lexeme: string, maxExponent: number = MAX_EXPONENT): string {
  const m = NUMBER_LEXEME.exec(lexeme);
  if (!m) throw new TypeError(`not a JSON number: ${JSON.stringify(lexeme)}`);
  const [, sign, intPart = '', fracPart = '', expPart] = m;
  const exponent = expPart === undefined ? 0 : Number.parseInt(expPart, 10);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > maxExponent) {
    throw new NumberExpansionError('EXPONENT_OUT_OF_RANGE', `exponent out of range in ${lexeme.slice(0, 40)}`);
  }
  const digits = intPart + fracPart;
  const scale = fracPart.length - exponent;
  let text: string;
  if (scale <= 0) {
    text = digits + '0'.repeat(-scale);
  } else {
    const padded = digits.padStart(scale + 1, '0');
    text = `${padded.slice(0, padded.length - scale)}.${padded.slice(padded.length - scale)}`;
  }
  text = text.replace(/^0+(?=\d)/, '');
  const isZero = !/[1-9]/.test(text);
  return sign && !isZero ? `-${text}` : text;
}

function compareCodePoints(a: string, b: string): number {
  // String comparison orders UTF-16 code units, not code points.
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done) return y.done ? 0 : -1;
    if (y.done) return 1;
    const cx = x.value.codePointAt(0) ?? 0;
    const cy = y.value.codePointAt(0) ?? 0;
    if (cx !== cy) return cx - cy;
  }
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

function sortedKeys(keys: string[]): string[] {
  // Plain sort equals code point order when every key is ASCII (the usual case).
  return keys.every(isAscii) ? keys.sort() : keys.sort(compareCodePoints);
}

function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Already in code point order (ASCII keys in ascending order): the keys of a stored request usually are. */
function inAsciiOrder(keys: string[]): boolean {
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    if (!isAscii(k) || (i > 0 && k <= (keys[i - 1] as string))) return false;
  }
  return true;
}

/** A positive decimal lexeme already in plain form is its own plain text (the amounts the daemon sends). */
const PLAIN_POSITIVE = /^(?:0|[1-9]\d*)(?:\.\d+)?$/;

/** Characters that writing numbers out in full may still add to a received body. */
interface GrowthAllowance {
  left: number;
}

function spendGrowth(growth: GrowthAllowance, added: number): void {
  if (added <= 0) return;
  growth.left -= added;
  if (growth.left < 0) throw new NumberExpansionError('EXPANSION_OVER_LIMIT', 'numbers written out in full would make the body too long');
}

// One string built by concatenation, without per-level arrays or closures: a create signs one of these per call.
// `growth` is given for received text only: what the daemon builds itself is bounded only by MAX_EXPONENT.
function write(value: unknown, options: CanonicalOptions, growth?: GrowthAllowance): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      // Only integers may travel as JS numbers; a fraction must come as text.
      if (!Number.isSafeInteger(value)) {
        throw new TypeError(`refusing to serialize non-integer JS number ${value}; use a JsonNumber`);
      }
      return String(value);
    case 'bigint':
      return value.toString();
    case 'object':
      break;
    default:
      throw new TypeError(`cannot serialize a ${typeof value} as JSON`);
  }
  if (isLosslessNumber(value)) {
    const lexeme = (value as LosslessNumber).value;
    if (PLAIN_POSITIVE.test(lexeme)) return lexeme;
    const plain = plainNumberText(lexeme, growth ? MAX_PLAIN_EXPONENT : MAX_EXPONENT);
    if (growth) spendGrowth(growth, plain.length - lexeme.length);
    return plain;
  }
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) text += ',';
      const item: unknown = value[i];
      text += write(item === undefined ? null : item, options, growth);
    }
    return `${text}]`;
  }
  if (isPlainObject(value)) {
    const record = value as Record<string, unknown>;
    let keys = Object.keys(record);
    if (options.sortKeys && !inAsciiOrder(keys)) keys = sortedKeys(keys);
    let text = '{';
    let first = true;
    for (const key of keys) {
      const v = record[key];
      if (v === undefined) continue;
      text += `${first ? '' : ','}${JSON.stringify(key)}:${write(v, options, growth)}`;
      first = false;
    }
    return `${text}}`;
  }
  throw new TypeError(`cannot serialize a ${typeof value} as JSON`);
}

/** True when `JSON.stringify(value)` already is the canonical text (plain, ASCII, sorted keys; simple values only). */
function stringifiesCanonically(record: Record<string, unknown>, sortKeys: boolean): boolean {
  let previous = '';
  let first = true;
  for (const key in record) {
    if (!Object.prototype.hasOwnProperty.call(record, key)) return false;
    if (!isAscii(key)) return false;
    // Integer-like keys come first in property order; the sort check catches them ("10" < "2").
    if (sortKeys && !first && key <= previous) return false;
    previous = key;
    first = false;
    const v = record[key];
    switch (typeof v) {
      case 'string':
      case 'boolean':
        break;
      case 'number':
        if (!Number.isSafeInteger(v)) return false;
        break;
      case 'object':
        if (v === null) break;
        if (Array.isArray(v) || !isPlainObject(v) || !stringifiesCanonically(v as Record<string, unknown>, sortKeys)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** Canonical text of a value built in code (request bodies). */
export function canonicalStringify(value: unknown, options: CanonicalOptions = DEFAULT_CANONICAL): string {
  return canonicalText(value, options);
}

function canonicalText(value: unknown, options: CanonicalOptions, growth?: GrowthAllowance): string {
  // Fast path for the common shape (a stored create request: nested objects of strings, built in key order).
  if (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    isPlainObject(value) &&
    stringifiesCanonically(value as Record<string, unknown>, options.sortKeys)
  ) {
    return JSON.stringify(value);
  }
  return write(value, options, growth);
}

/** The generic writer alone, without the fast path (tests compare the two byte for byte). */
export function genericCanonicalStringify(value: unknown, options: CanonicalOptions = DEFAULT_CANONICAL): string {
  return write(value, options);
}

/** Parses JSON keeping every number as its lexeme (a JsonNumber). */
export function parseLossless(text: string): unknown {
  return parse(text);
}

function stripWhitespace(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') {
      out += c;
    }
  }
  return out;
}

/** What writing numbers out in full may add to a short received body, beyond its own length. */
const SHORT_BODY_GROWTH = 1024;

/**
 * The minified form (spec 5.3) of received `text`, given its lossless parse. Numbers written out in full may at
 * most double the text (plus a little for short bodies), so a forged body of exponents costs no more to check
 * than one of its size; beyond that, or for an exponent out of range, it throws NumberExpansionError.
 */
export function minifyParsed(parsed: unknown, text: string, options: CanonicalOptions): string {
  if (!options.sortKeys) return stripWhitespace(text.trim());
  return canonicalText(parsed, options, { left: text.length + SHORT_BODY_GROWTH });
}

/** The minified form of a received body (spec 5.3): empty -> '', unparsable -> trimmed text. */
export function minifyBodyText(text: string, options: CanonicalOptions = DEFAULT_CANONICAL): string {
  if (text === '') return '';
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch {
    // Spec 5.3: a body that is not JSON is signed as its trimmed text.
    return text.trim();
  }
  try {
    return minifyParsed(parsed, text, options);
  } catch {
    // Numbers we will not write out (see minifyParsed): sign the text as is, which no sender has hashed.
    return text.trim();
  }
}

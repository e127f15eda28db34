/**
 * The payoutAmount rule: a strict plain decimal, positive, within the currency's minor units and the limits,
 * decided on the text and with Decimal. Malformed amounts get a message saying what is wrong (decimal comma,
 * thousands separators, exponent, sign).
 */
import { decimalText, fractionDigits, isPlainDecimal, normalizeAmount, type Decimal } from '../../domain/money.js';
import { quoteValue } from './row-error.js';

export type AmountFormatCode = 'AMOUNT_LOCALE_FORMAT' | 'AMOUNT_EXPONENT' | 'AMOUNT_NEGATIVE' | 'AMOUNT_ZERO' | 'AMOUNT_INVALID';
export type AmountRangeCode = 'AMOUNT_TOO_MANY_DECIMALS' | 'AMOUNT_BELOW_MIN' | 'AMOUNT_ABOVE_MAX';

export interface AmountProblem {
  code: AmountFormatCode | AmountRangeCode;
  message: string;
}

export interface AmountLimits {
  /** Inclusive bounds; null = no bound. Built once from config text, never from a float. */
  min: Decimal | null;
  max: Decimal | null;
}

const DECIMAL_COMMA = /^\d{1,3}(?:\.\d{3})+,\d+$|^\d+,\d+$/;
const COMMA_THOUSANDS = /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;
const OTHER_THOUSANDS = /^\d{1,3}(?:[ '\u00a0\u202f]\d{3})+(?:[.,]\d+)?$/;
const EXPONENT = /^[+-]?(?:\d+\.?\d*|\.\d+)[eE][+-]?\d+$/;
/** Dots grouping thousands as much of Europe and Indonesia writes them: `1.500`, `250.000`, `1.234.567`. */
const DOT_THOUSANDS = /^[1-9]\d{0,2}(?:\.\d{3})+$/;

/**
 * Why a trimmed, non-empty amount text is not a plain decimal; null when it is one. `subject` names the amount
 * in the message (a control total is held to the same rule).
 */
export function amountFormatProblem(text: string, subject = 'payoutAmount'): AmountProblem | null {
  if (isPlainDecimal(text)) {
    // A plain decimal is zero exactly when it has no non-zero digit.
    if (!/[1-9]/.test(text)) return { code: 'AMOUNT_ZERO', message: `${subject} ${quoteValue(text)} is zero; it must be positive` };
    return null;
  }
  const v = `${subject} ${quoteValue(text)}`;
  if (EXPONENT.test(text)) {
    return { code: 'AMOUNT_EXPONENT', message: `${v} is in exponent notation; write it out in full, e.g. 1000 for 1e3` };
  }
  if (text.startsWith('-') && isPlainDecimal(text.slice(1))) {
    if (!/[1-9]/.test(text)) return { code: 'AMOUNT_ZERO', message: `${v} is zero; it must be positive` };
    return { code: 'AMOUNT_NEGATIVE', message: `${v} is negative; it must be positive` };
  }
  if (text.startsWith('+') && isPlainDecimal(text.slice(1))) {
    return { code: 'AMOUNT_INVALID', message: `${v} has a plus sign; write the digits only` };
  }
  const both = text.includes(',') && text.includes('.');
  if (DECIMAL_COMMA.test(text) && !COMMA_THOUSANDS.test(text)) {
    return {
      code: 'AMOUNT_LOCALE_FORMAT',
      message: `${v} uses a decimal comma${both ? ' and dots as thousands separators' : ''}; write a plain decimal with a point and no separators, e.g. 1234.56`,
    };
  }
  if (COMMA_THOUSANDS.test(text)) {
    return {
      code: 'AMOUNT_LOCALE_FORMAT',
      message: `${v} has a comma, read as a thousands separator (or an ambiguous decimal comma); write a plain decimal with no separators, e.g. 1234.56`,
    };
  }
  if (DOT_THOUSANDS.test(text)) {
    // Several dots: never a decimal point; one dot is left to the currency's minor units (amountRangeProblem).
    return {
      code: 'AMOUNT_LOCALE_FORMAT',
      message: `${v} has dots as thousands separators; write ${text.replaceAll('.', '')}, with no separators`,
    };
  }
  if (OTHER_THOUSANDS.test(text)) {
    return {
      code: 'AMOUNT_LOCALE_FORMAT',
      message: `${v} has thousands separators; write a plain decimal with no separators, e.g. 1234.56`,
    };
  }
  if (/^\.\d+$/.test(text) || /^\d+\.$/.test(text)) {
    return { code: 'AMOUNT_INVALID', message: `${v} needs digits on both sides of the decimal point, e.g. 0.5 or 5` };
  }
  return { code: 'AMOUNT_INVALID', message: `${v} is not a plain decimal number (digits with an optional '.' fraction)` };
}

/** Normal-form text of each limit, computed once per limit (limits live as long as the compiled rules). */
const LIMIT_TEXT = new WeakMap<Decimal, string>();

function limitText(limit: Decimal): string {
  let text = LIMIT_TEXT.get(limit);
  if (text === undefined) {
    text = decimalText(limit);
    LIMIT_TEXT.set(limit, text);
  }
  return text;
}

/** Compares two non-negative amounts in normal form on their text: longer integer part first, then the fractions as strings. */
export function compareNormal(a: string, b: string): number {
  const dotA = a.indexOf('.');
  const dotB = b.indexOf('.');
  const intA = dotA < 0 ? a : a.slice(0, dotA);
  const intB = dotB < 0 ? b : b.slice(0, dotB);
  if (intA.length !== intB.length) return intA.length < intB.length ? -1 : 1;
  if (intA !== intB) return intA < intB ? -1 : 1;
  const fracA = dotA < 0 ? '' : a.slice(dotA + 1);
  const fracB = dotB < 0 ? '' : b.slice(dotB + 1);
  return fracA === fracB ? 0 : fracA < fracB ? -1 : 1;
}

/**
 * A plain decimal with more decimals than the currency has, shaped like thousands grouped by a dot: `1.500` PHP is
 * far likelier fifteen hundred than one and a half, so it is refused even though its extra decimals are zeros.
 */
export function dotThousandsProblem(text: string, currency: string, minorUnits: number, subject = 'payoutAmount'): AmountProblem | null {
  const written = fractionDigits(text);
  if (written <= minorUnits || !DOT_THOUSANDS.test(text)) return null;
  const whole = text.replace('.', '');
  const padded = minorUnits > 0 ? ` or ${whole}.${'0'.repeat(minorUnits)}` : '';
  const small = normalizeAmount(text);
  const meant = fractionDigits(small) <= minorUnits ? `; or ${small} if ${small} ${currency} was meant` : '';
  return {
    code: 'AMOUNT_LOCALE_FORMAT',
    message: `${subject} ${quoteValue(text)} has a dot that looks like a thousands separator (${currency} has ${minorUnits} decimals, not ${written}): write ${whole}${padded}, with no separator${meant}`,
  };
}

/**
 * Checks a plain, positive amount against the currency; trailing fractional zeros do not count as decimals,
 * unless the dot looks like a thousands separator.
 */
export function amountRangeProblem(text: string, currency: string, minorUnits: number, limits: AmountLimits): AmountProblem | null {
  const grouped = dotThousandsProblem(text, currency, minorUnits);
  if (grouped) return grouped;
  const normal = normalizeAmount(text);
  const digits = fractionDigits(normal);
  if (digits > minorUnits) {
    return {
      code: 'AMOUNT_TOO_MANY_DECIMALS',
      message: `payoutAmount ${quoteValue(text)} has ${digits} decimals; ${currency} allows at most ${minorUnits}`,
    };
  }
  if (limits.min === null && limits.max === null) return null;
  if (limits.min !== null && compareNormal(normal, limitText(limits.min)) < 0) {
    return {
      code: 'AMOUNT_BELOW_MIN',
      message: `payoutAmount ${quoteValue(text)} is below the minimum ${decimalText(limits.min)} ${currency}`,
    };
  }
  if (limits.max !== null && compareNormal(normal, limitText(limits.max)) > 0) {
    return {
      code: 'AMOUNT_ABOVE_MAX',
      message: `payoutAmount ${quoteValue(text)} is above the maximum ${decimalText(limits.max)} ${currency}`,
    };
  }
  return null;
}

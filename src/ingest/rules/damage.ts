/**
 * What a spreadsheet does to a value it takes for a number or a date, seen in a cell's text: identifiers in
 * scientific notation, references turned into dates, error values of failed formulas, and (given the original
 * row) lost leading zeros.
 */
import { maskAccountNumber } from '../../domain/payout.js';
import { lostZeros, mayHaveLostZeros, ZERO_PADDED_FIELDS, type ZeroPadding } from '../../domain/leading-zeros.js';
import { FIELD_WORDS, type FieldPath } from './fields.js';
import { quoteValue, type RowErrorCode } from './row-error.js';

export interface DamageProblem {
  code: RowErrorCode;
  message: string;
}

/** As spreadsheets write a number too long to show: one digit, maybe a fraction, an exponent with its sign. */
const SCIENTIFIC = /^\d(?:[.,]\d+)?E[+-]\d{1,3}$/i;
const MONTH = '(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)';
/** Dates as a spreadsheet shows a value it read as one: `7-Jan`, `7-Jan-26`, `Jan-26`, `1/7/2026`, `2026-01-07 00:00:00`. */
const DATE_SHAPES = [
  new RegExp(`^\\d{1,2}[-\\s]${MONTH}(?:[-\\s]\\d{2,4})?$`, 'i'),
  new RegExp(`^${MONTH}[-\\s]\\d{2,4}$`, 'i'),
  /^\d{1,2}[/.]\d{1,2}[/.]\d{2,4}$/,
  /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?$/,
];

/** The error values spreadsheets show for a formula that failed (Excel's and LibreOffice's), upper case. */
const ERROR_VALUES: ReadonlySet<string> = new Set([
  '#N/A',
  '#REF!',
  '#VALUE!',
  '#DIV/0!',
  '#NAME?',
  '#NUM!',
  '#NULL!',
  '#SPILL!',
  '#CALC!',
  '#GETTING_DATA',
]);

/** Whether a trimmed value is a spreadsheet's error value (`#N/A`), in any case as a CSV may hold it. */
export function isSpreadsheetError(value: string): boolean {
  // Most values do not start with '#': one character code decides.
  return value.charCodeAt(0) === 0x23 && ERROR_VALUES.has(value.toUpperCase());
}

/** A cell holding a spreadsheet's error value: what a lookup or formula left, never a name, id or amount to pay. */
export function spreadsheetErrorProblem(field: FieldPath, error: string): DamageProblem {
  const words = FIELD_WORDS[field];
  return {
    code: 'SPREADSHEET_ERROR_VALUE',
    message: `the ${words} cell holds ${error}, the error a spreadsheet shows for a formula that failed; type the ${words} itself`,
  };
}

/** Fields that hold identifiers a spreadsheet may turn into numbers. */
const NUMBERISH: ReadonlySet<FieldPath> = new Set([
  'merchantReferenceId',
  'sender.idValue',
  'beneficiary.accountNumber',
  'beneficiary.bankCode',
]);
/** Fields a spreadsheet may turn into dates. */
const DATEISH: ReadonlySet<FieldPath> = new Set(['merchantReferenceId', 'sender.idValue']);

/** Whether `field` is checked here at all (most fields are not). */
export function damageChecked(field: FieldPath): boolean {
  return NUMBERISH.has(field);
}

/**
 * The significant digits a spreadsheet keeps of a number; it writes the rest as zeros. A rounded reference is one
 * payoutd has never seen, and would pay again. Account and id numbers are not checked: a 16-digit account ending
 * in 0 is as common as any other, and unlike a reference cannot be changed.
 */
const KEPT_DIGITS = 15;

/**
 * Whether a value is digits only with more than 15 significant digits, all 0 after the 15th: what a spreadsheet
 * writes for a longer number (`0012345678901234567` saved from a Number column as `12345678901234600`).
 */
export function looksRounded(value: string): boolean {
  if (!/^\d+$/.test(value)) return false;
  const significant = value.replace(/^0+/, '');
  return significant.length > KEPT_DIGITS && /^0+$/.test(significant.slice(KEPT_DIGITS));
}

/** ` "value"` as a message shows `field`'s value: account numbers masked, id values never shown. */
function shownValue(field: FieldPath, value: string): string {
  if (field === 'beneficiary.accountNumber') return ` ${quoteValue(maskAccountNumber(value))}`;
  return field === 'sender.idValue' ? '' : ` ${quoteValue(value)}`;
}

/** The mangling a trimmed, non-empty value of `field` shows, or null. */
export function damageProblem(field: FieldPath, value: string): DamageProblem | null {
  const words = FIELD_WORDS[field];
  if (field === 'merchantReferenceId' && looksRounded(value)) {
    return {
      code: 'NUMBER_ROUNDED',
      message: `the ${words} ${quoteValue(value)} has more than ${KEPT_DIGITS} digits, all 0 after the ${KEPT_DIGITS}th: a spreadsheet keeps ${KEPT_DIGITS} digits of a number and rounds the rest to 0, so it is probably a longer ${words} rounded; format the column as Text (or use the .xlsx file) and type the ${words} again; if the ${words} really is that, it cannot be told from a rounded one: give the row a reference that is not such a number`,
    };
  }
  if (NUMBERISH.has(field) && SCIENTIFIC.test(value)) {
    const shown = shownValue(field, value);
    return {
      code: 'SCIENTIFIC_NOTATION',
      message: `the ${words}${shown} is in scientific notation: a spreadsheet took it for a number and dropped its last digits; open the file with the column formatted as Text (or use the .xlsx file) and type the ${words} again`,
    };
  }
  if (DATEISH.has(field) && DATE_SHAPES.some((shape) => shape.test(value))) {
    return {
      code: 'DATE_CONVERTED',
      message: `the ${words} ${field === 'sender.idValue' ? '' : `${quoteValue(value)} `}looks like a date: a spreadsheet probably turned it into one; format the column as Text and type the ${words} again`,
    };
  }
  return null;
}

/** An original row a retry row repeats: how its fields were padded with zeros, or that retention removed its request. */
export type RetriedOriginal =
  { reference: string; paddings: ReadonlyMap<FieldPath, ZeroPadding> } | { reference: string; removed: { batchId: string; file: string } };

/**
 * A retry row's field that is the same field of a row it retries with the leading zeros gone (`0012345670000`
 * became `12345670000`): what a spreadsheet does to a retry file opened and saved as CSV. `values` are request
 * values in FIELD_PATHS order. An original whose request retention removed, keeping nothing of its zeros, cannot
 * tell: a field that may have lost them is refused rather than paid to what may be another account.
 */
export function zerosLostProblem(
  values: readonly string[],
  originals: readonly RetriedOriginal[],
  fieldIndex: (field: FieldPath) => number,
): { field: FieldPath; problem: DamageProblem } | null {
  for (const field of ZERO_PADDED_FIELDS) {
    const value = values[fieldIndex(field)] ?? '';
    for (const original of originals) {
      const padding = 'paddings' in original ? original.paddings.get(field) : undefined;
      if (padding && lostZeros(original.reference, field, padding, value)) {
        const words = FIELD_WORDS[field];
        return {
          field,
          problem: {
            code: 'LEADING_ZEROS_LOST',
            message: `the ${words} has lost its leading zeros: it is the ${words} of ${original.reference}, which this retry row repeats, without its ${padding.zeros} leading zero(s); a spreadsheet probably dropped them when the file was opened and saved as CSV; open the .xlsx retry file instead, or format the column as Text and type the ${words} again`,
          },
        };
      }
    }
  }
  const unknown = originals.find((o): o is Extract<RetriedOriginal, { removed: unknown }> => 'removed' in o);
  if (unknown === undefined) return null;
  const field = ZERO_PADDED_FIELDS.find((f) => mayHaveLostZeros(values[fieldIndex(f)] ?? ''));
  if (field === undefined) return null;
  const words = FIELD_WORDS[field];
  const { batchId, file } = unknown.removed;
  return {
    field,
    problem: {
      code: 'LEADING_ZEROS_UNCHECKED',
      message: `the ${words} cannot be checked for lost leading zeros: the details of ${unknown.reference}, which this retry row repeats, were removed by retention (batch ${batchId}, ${quoteValue(file)}) by a payoutd that kept nothing to compare with, and a spreadsheet drops leading zeros from a retry file saved as CSV, which would pay another account; compare the ${words} with the file as first sent: if it had leading zeros, type them back (the column formatted as Text) and drop the file again; if it had none, send the row under a reference of its own, not ending in -R<n>`,
    },
  };
}

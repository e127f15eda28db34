/**
 * What a spreadsheet does to a value it takes for a number or a date, seen in a cell's text: identifiers in
 * scientific notation, references turned into dates, error values of failed formulas, and (given the original
 * row) lost leading zeros.
 */
import { maskAccountNumber } from '../../domain/payout.js';
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

/** The mangling a trimmed, non-empty value of `field` shows, or null. */
export function damageProblem(field: FieldPath, value: string): DamageProblem | null {
  const words = FIELD_WORDS[field];
  if (NUMBERISH.has(field) && SCIENTIFIC.test(value)) {
    // Account numbers masked and id values never shown, as in every message.
    const shown =
      field === 'beneficiary.accountNumber'
        ? ` ${quoteValue(maskAccountNumber(value))}`
        : field === 'sender.idValue'
          ? ''
          : ` ${quoteValue(value)}`;
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

/** Fields whose leading zeros a spreadsheet drops, in FIELD_PATHS order positions. */
const ZERO_PADDED: readonly FieldPath[] = ['beneficiary.accountNumber', 'beneficiary.bankCode', 'sender.idValue'];

/**
 * A retry row's field that is the same field of a row it retries with the leading zeros gone (`0012345670000`
 * became `12345670000`): what a spreadsheet does to a retry file opened and saved as CSV. `values` and each of
 * `originals` are request values in FIELD_PATHS order.
 */
export function zerosLostProblem(
  values: readonly string[],
  originals: readonly { reference: string; values: readonly string[] }[],
  fieldIndex: (field: FieldPath) => number,
): { field: FieldPath; problem: DamageProblem } | null {
  for (const field of ZERO_PADDED) {
    const at = fieldIndex(field);
    const value = values[at] ?? '';
    for (const original of originals) {
      const was = original.values[at] ?? '';
      if (value !== '' && was !== value && /^0+\d/.test(was) && was.replace(/^0+/, '') === value) {
        const words = FIELD_WORDS[field];
        return {
          field,
          problem: {
            code: 'LEADING_ZEROS_LOST',
            message: `the ${words} has lost its leading zeros: it is the ${words} of ${original.reference}, which this retry row repeats, without its ${was.length - value.length} leading zero(s); a spreadsheet probably dropped them when the file was opened and saved as CSV; open the .xlsx retry file instead, or format the column as Text and type the ${words} again`,
          },
        };
      }
    }
  }
  return null;
}

/**
 * A workbook cell as the text a clerk sees: numbers as exact decimals (more than 15 significant digits are
 * refused, never rounded); dates, error cells, and long numbers in identifier columns, refused as what a
 * spreadsheet made of the value; numbers whose format shows another value than they hold, text whose format
 * shows other text or none, and cells whose format is not known, refused.
 */
import { Decimal } from '../../domain/money.js';
import { spreadsheetErrorProblem } from '../rules/damage.js';
import { FIELD_WORDS, type FieldPath } from '../rules/fields.js';
import { quoteValue, type RowErrorCode } from '../rules/row-error.js';
import { trimSpaces } from '../rules/text.js';
import { amountFormatHides, identifierFormatShowsDigits, textFormatHides } from './number-format.js';
import type { CellFormat } from './styles.js';

/** One cell of a sheet row, as read (src/ingest/xlsx/workbook.ts); `format`: its number format, as the clerk sees it. */
export type SheetCell =
  | { kind: 'text'; text: string; format: CellFormat }
  | { kind: 'number'; value: number; format: CellFormat }
  /** A date cell, its date as `2026-01-07` (or as stored, when it is no date); `time`: shown as a time only. */
  | { kind: 'date'; date: string; time?: boolean }
  /** An error cell: what a formula that failed left (`#N/A`), whatever error it names. */
  | { kind: 'error'; error: string }
  | { kind: 'empty' };

export interface CellProblem {
  code: RowErrorCode;
  message: string;
}

/** Digits a double holds for any decimal typed (DBL_DIG): up to these, the shortest text of the double is what was typed. */
const EXACT_DIGITS = 15;

/** Fields whose value is an identifier: digits that must be kept as written. */
const IDENTIFIERS: ReadonlySet<FieldPath> = new Set([
  'merchantReferenceId',
  'sender.idValue',
  'beneficiary.accountNumber',
  'beneficiary.bankCode',
]);

/** Identifiers never shown in a message, not even their leading digits. */
const NEVER_SHOWN: ReadonlySet<FieldPath> = new Set(['beneficiary.accountNumber', 'sender.idValue']);

/** The exact decimal text of a number cell, or null when the double may not hold the digits typed. */
export function exactNumberText(value: number): string | null {
  if (!Number.isFinite(value)) return null;
  // decimal.js takes a number by its shortest round-trip text: the typed digits, when there are at most 15.
  const d = new Decimal(value);
  return d.sd() <= EXACT_DIGITS ? d.toFixed() : null;
}

/** A number format of zeros only (`000000000000`): the width a clerk asked identifiers to be shown with. */
function zeroPadWidth(numFmt: string | null): number {
  return numFmt !== null && /^0+$/.test(numFmt) ? numFmt.length : 0;
}

/** A format not known, in words: `built-in format 59`, or a style the workbook does not list. */
function unknownFormatWords(format: { id: number | null }): string {
  return format.id === null
    ? 'a cell style the workbook does not list'
    : `number format id ${format.id}, which is neither the workbook's own nor one of Excel's built-in formats`;
}

/** The code of the rows a problem with the format of a cell of `field` refuses. */
function formatCode(field: FieldPath): RowErrorCode {
  return field === 'payoutAmount' ? 'AMOUNT_FORMAT_HIDES' : IDENTIFIERS.has(field) ? 'IDENTIFIER_NUMBER_FORMAT' : 'CELL_FORMAT_HIDES';
}

/** The format, quoted, unless it may hold digits of a secret identifier. */
function formatWords(field: FieldPath | null, numFmt: string): string {
  return field !== null && NEVER_SHOWN.has(field) && /\d/.test(numFmt) ? 'a number format' : `the number format ${quoteValue(numFmt)}`;
}

/** A text cell of `field` read as shown, or why its format shows other text or none (or is not known). */
function textCell(cell: { text: string; format: CellFormat }, field: FieldPath | null): { text: string } | { problem: CellProblem } {
  // Blank text shows nothing whatever its format: an empty cell, not one refused.
  if (field === null || trimSpaces(cell.text) === '') return { text: cell.text };
  const words = FIELD_WORDS[field];
  const { format } = cell;
  if (!format.known) {
    return {
      problem: {
        code: formatCode(field),
        message: `the ${words} cell holds text shown with ${unknownFormatWords(format)}, so payoutd cannot tell what the sheet shows: it may show another ${words} than would be paid; format the column as Text and drop the workbook again`,
      },
    };
  }
  const hides = textFormatHides(format.code);
  if (hides === null) return { text: cell.text };
  return {
    problem: {
      code: formatCode(field),
      message: `the ${words} cell holds text, but ${formatWords(field, format.code as string)} ${hides}: the sheet shows another ${words} than would be paid; format the column as Text and drop the workbook again`,
    },
  };
}

/** The cell's text for `field` (null: a header cell or a column with no field), or why it cannot be read. */
export function cellText(cell: SheetCell, field: FieldPath | null): { text: string } | { problem: CellProblem } {
  switch (cell.kind) {
    case 'empty':
      return { text: '' };
    case 'text':
      return textCell(cell, field);
    case 'date': {
      const what = field === null ? 'this cell' : `the ${FIELD_WORDS[field]}`;
      // A time's date is none the clerk sees: quoting it would send them looking for a date in the sheet.
      if (cell.time === true) {
        return {
          problem: {
            code: 'DATE_CONVERTED',
            message: `${field === null ? 'this cell' : `the ${FIELD_WORDS[field]} cell`} is shown as a time: a spreadsheet probably turned the value into a time; format the column as Text and type the value again`,
          },
        };
      }
      return {
        problem: {
          code: 'DATE_CONVERTED',
          message: `${what} is a date cell (${quoteValue(cell.date, 30).slice(1, -1)}): a spreadsheet probably turned the text into a date; format the column as Text and type the value again`,
        },
      };
    }
    case 'number':
      return numberText(cell, field);
    case 'error':
      return field === null ? { text: cell.error } : { problem: spreadsheetErrorProblem(field, cell.error) };
  }
}

function numberText(cell: { value: number; format: CellFormat }, field: FieldPath | null): { text: string } | { problem: CellProblem } {
  const exact = exactNumberText(cell.value);
  const { format } = cell;
  if (!format.known && field !== null && (field === 'payoutAmount' || IDENTIFIERS.has(field))) {
    const words = FIELD_WORDS[field];
    const holds = NEVER_SHOWN.has(field) || exact === null ? 'a number' : exact;
    return {
      problem: {
        code: formatCode(field),
        message: `the ${words} cell holds ${holds} shown with ${unknownFormatWords(format)}, so payoutd cannot tell what the sheet shows: it may show another ${words} than would be paid; ${field === 'payoutAmount' ? 'format the column as Number with as many decimals as the amounts have (0.00), or as General' : `format the column as Text and type the ${words} again`}, and drop the workbook again`,
      },
    };
  }
  const numFmt = format.known ? format.code : null;
  if (field !== null && IDENTIFIERS.has(field)) {
    if (exact === null || !/^\d+$/.test(exact) || exact.length > EXACT_DIGITS) {
      const shown = NEVER_SHOWN.has(field) ? '' : ` (shown as ${cell.value.toExponential(5).toUpperCase()})`;
      return {
        problem: {
          code: 'SCIENTIFIC_NOTATION',
          message: `the ${FIELD_WORDS[field]} is a number too long for a spreadsheet to keep${shown}: its last digits are lost; format the column as Text and type the ${FIELD_WORDS[field]} again`,
        },
      };
    }
    if (!identifierFormatShowsDigits(numFmt)) return identifierFormatProblem(field, exact, numFmt as string);
    return { text: exact.padStart(zeroPadWidth(numFmt), '0') };
  }
  if (exact === null) {
    return {
      problem: {
        code: field === 'payoutAmount' ? 'AMOUNT_NOT_EXACT' : 'SCIENTIFIC_NOTATION',
        message: `the ${field === null ? 'cell' : FIELD_WORDS[field]} is a number with more than ${EXACT_DIGITS} significant digits, which a spreadsheet cannot hold exactly; write it as text`,
      },
    };
  }
  if (field === 'payoutAmount') {
    const hides = amountFormatHides(numFmt, exact, cell.value);
    if (hides !== null) {
      const problem = amountHiddenProblem(
        `the ${FIELD_WORDS[field]} cell`,
        exact,
        numFmt as string,
        hides,
        'another amount than would be paid',
      );
      return { problem };
    }
  }
  return { text: exact };
}

/** The identifier `field`, a number cell holding `exact`, whose number format may show other characters. */
function identifierFormatProblem(field: FieldPath, exact: string, numFmt: string): { problem: CellProblem } {
  const words = FIELD_WORDS[field];
  // Nor a format holding digits, which may be some of theirs.
  const secret = NEVER_SHOWN.has(field);
  const holds = secret ? 'a number' : `the number ${exact}`;
  const format = secret && /[1-9]/.test(numFmt) ? 'a number format' : `the number format ${quoteValue(numFmt)}`;
  return {
    problem: {
      code: 'IDENTIFIER_NUMBER_FORMAT',
      message: `the ${words} cell holds ${holds} shown with ${format}, which can show characters the cell does not hold (leading zeros, spaces, text): the sheet may show another ${words} than would be paid; format the column as Text and type the ${words} again`,
    },
  };
}

/** A money cell (`what`) holding `exact` whose format `numFmt` shows `shows`, as `hides` says. */
function amountHiddenProblem(what: string, exact: string, numFmt: string, hides: string, shows: string): CellProblem {
  return {
    code: 'AMOUNT_FORMAT_HIDES',
    message: `${what} holds ${exact}, but its number format ${quoteValue(numFmt)} ${hides}: the sheet shows ${shows}; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again`,
  };
}

/**
 * Why a number cell of a `#CONTROL` row (cell `address`) shows another value than the one its totals are
 * checked with; null when it shows what it holds.
 */
export function controlCellHides(cell: SheetCell, address: string): string | null {
  if (cell.kind !== 'number' && cell.kind !== 'text') return null;
  const { format } = cell;
  if (!format.known) {
    return `the control line's cell ${address} is shown with ${unknownFormatWords(format)}, so payoutd cannot tell what the sheet shows: it may show another value than the one checked; format the column as Number with as many decimals as the amounts have (0.00), or as General or Text, and drop the workbook again`;
  }
  if (cell.kind === 'text') {
    const hides = textFormatHides(format.code);
    if (hides === null) return null;
    return `the control line's cell ${address} holds text, but its number format ${quoteValue(format.code as string)} ${hides}: the sheet shows another value than the one checked; format the column as Text and drop the workbook again`;
  }
  const exact = exactNumberText(cell.value);
  const hides = exact === null ? null : amountFormatHides(format.code, exact, cell.value);
  if (exact === null || hides === null) return null;
  return amountHiddenProblem(
    `the control line's cell ${address}`,
    exact,
    format.code as string,
    hides,
    'another value than the one checked',
  ).message;
}

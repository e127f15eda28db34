/**
 * A workbook cell as the text a clerk sees: numbers as exact decimals (more than 15 significant digits are
 * refused, never rounded); dates, error cells, and long numbers in identifier columns, refused as what a
 * spreadsheet made of the value; numbers whose format shows another value than they hold, refused.
 */
import { Decimal } from '../../domain/money.js';
import { spreadsheetErrorProblem } from '../rules/damage.js';
import { FIELD_WORDS, type FieldPath } from '../rules/fields.js';
import { quoteValue, type RowErrorCode } from '../rules/row-error.js';
import { amountFormatHides, identifierFormatShowsDigits } from './number-format.js';

/** One cell of a sheet row, as read (src/ingest/xlsx/workbook.ts). */
export type SheetCell =
  | { kind: 'text'; text: string }
  | { kind: 'number'; value: number; numFmt: string | null }
  | { kind: 'date'; value: Date }
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

/** The cell's text for `field` (null: a header cell or a column with no field), or why it cannot be read. */
export function cellText(cell: SheetCell, field: FieldPath | null): { text: string } | { problem: CellProblem } {
  switch (cell.kind) {
    case 'empty':
      return { text: '' };
    case 'text':
      return { text: cell.text };
    case 'date': {
      const what = field === null ? 'this cell' : `the ${FIELD_WORDS[field]}`;
      return {
        problem: {
          code: 'DATE_CONVERTED',
          message: `${what} is a date cell (${cell.value.toISOString().slice(0, 10)}): a spreadsheet probably turned the text into a date; format the column as Text and type the value again`,
        },
      };
    }
    case 'number':
      return numberText(cell, field);
    case 'error':
      return field === null ? { text: cell.error } : { problem: spreadsheetErrorProblem(field, cell.error) };
  }
}

function numberText(cell: { value: number; numFmt: string | null }, field: FieldPath | null): { text: string } | { problem: CellProblem } {
  const exact = exactNumberText(cell.value);
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
    if (!identifierFormatShowsDigits(cell.numFmt)) return identifierFormatProblem(field, exact, cell.numFmt as string);
    return { text: exact.padStart(zeroPadWidth(cell.numFmt), '0') };
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
    const hides = amountFormatHides(cell.numFmt, exact, cell.value);
    if (hides !== null) {
      const problem = amountHiddenProblem(
        `the ${FIELD_WORDS[field]} cell`,
        exact,
        cell.numFmt as string,
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
  if (cell.kind !== 'number') return null;
  const exact = exactNumberText(cell.value);
  const hides = exact === null ? null : amountFormatHides(cell.numFmt, exact, cell.value);
  if (exact === null || hides === null) return null;
  return amountHiddenProblem(
    `the control line's cell ${address}`,
    exact,
    cell.numFmt as string,
    hides,
    'another value than the one checked',
  ).message;
}

/**
 * A workbook cell as the text a clerk sees: numbers as exact decimals (more than 15 significant digits are
 * refused, never rounded); dates, error cells, and long numbers in identifier columns, refused as what a
 * spreadsheet made of the value.
 */
import { Decimal } from '../../domain/money.js';
import { spreadsheetErrorProblem } from '../rules/damage.js';
import { FIELD_WORDS, type FieldPath } from '../rules/fields.js';
import type { RowErrorCode } from '../rules/row-error.js';

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
      // Account numbers and id values are never shown, not even their leading digits.
      const shown =
        field === 'beneficiary.accountNumber' || field === 'sender.idValue'
          ? ''
          : ` (shown as ${cell.value.toExponential(5).toUpperCase()})`;
      return {
        problem: {
          code: 'SCIENTIFIC_NOTATION',
          message: `the ${FIELD_WORDS[field]} is a number too long for a spreadsheet to keep${shown}: its last digits are lost; format the column as Text and type the ${FIELD_WORDS[field]} again`,
        },
      };
    }
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
  return { text: exact };
}

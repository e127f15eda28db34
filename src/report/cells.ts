/**
 * Spreadsheet safety of one cell: a cell a spreadsheet may run as a formula (src/domain/formula-text.ts) gets
 * a leading `'`, which shows as text. Plain numbers are left alone so amounts stay numbers.
 */
import { FORMULA_ESCAPE, FORMULA_TRIGGERS } from '../domain/formula-text.js';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;
const TRIGGERS: ReadonlySet<string> = new Set(FORMULA_TRIGGERS);
const QUOTE = FORMULA_ESCAPE;

/** The cell as written; one already starting with `'` is prefixed too, so reading back drops exactly one `'`. */
export function spreadsheetSafeCell(text: string): string {
  const first = text.charAt(0);
  // Most cells start with no trigger: left alone without the number test (it runs once per cell of a file).
  if (!TRIGGERS.has(first) && first !== QUOTE) return text;
  return PLAIN_NUMBER.test(text) ? text : QUOTE + text;
}

/** The original text of a cell written by `spreadsheetSafeCell`. */
export function unescapeSpreadsheetCell(cell: string): string {
  return cell.startsWith(QUOTE) ? cell.slice(1) : cell;
}

/**
 * Spreadsheet safety of one cell: a cell a spreadsheet may run as a formula (src/domain/formula-text.ts) gets
 * a leading `'`, which shows as text. Plain numbers are left alone so amounts stay numbers. The same `'` goes
 * before a trigger right after a `;`, tab, CR or LF in the cell (docs/result-files.md, spreadsheet safety).
 */
import { FORMULA_ESCAPE, FORMULA_TRIGGERS } from '../domain/formula-text.js';

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;
const TRIGGERS: ReadonlySet<string> = new Set(FORMULA_TRIGGERS);
const QUOTE = FORMULA_ESCAPE;

/**
 * Where a spreadsheet may begin another cell inside this one: after a `;` or tab (the list separator of many
 * locales splits a line there, comma quoting or not) or a CR or LF (a new line there), and any spaces or `"`.
 */
const INNER_START = '[;\\t\\r\\n][ "]*';
/** What gets a `'` at an inner start: a trigger, or a `'` (so reading back is one rule, as at the cell's start). */
const ESCAPED_AT_START = `[${[...FORMULA_TRIGGERS, QUOTE].map((c) => c.replace(/[-\\\]^]/g, '\\$&')).join('')}]`;
const HAS_INNER_START = /[;\t\r\n]/;
const INNER_TRIGGER = new RegExp(`(${INNER_START})(?=${ESCAPED_AT_START})`, 'g');
const INNER_ESCAPE = new RegExp(`(${INNER_START})${QUOTE}(?=${ESCAPED_AT_START})`, 'g');

/** The cell as written; one already starting with `'` is prefixed too, so reading back drops exactly one `'`. */
export function spreadsheetSafeCell(text: string): string {
  // Most cells hold no separator: the replace (a regex per cell of a million-row file) is skipped.
  const safe = HAS_INNER_START.test(text) ? text.replace(INNER_TRIGGER, `$1${QUOTE}`) : text;
  const first = safe.charAt(0);
  // Most cells start with no trigger: left alone without the number test (it runs once per cell of a file).
  if (!TRIGGERS.has(first) && first !== QUOTE) return safe;
  return PLAIN_NUMBER.test(safe) ? safe : QUOTE + safe;
}

/** The original text of a cell written by `spreadsheetSafeCell`. */
export function unescapeSpreadsheetCell(cell: string): string {
  const inner = cell.replace(INNER_ESCAPE, '$1');
  return inner.startsWith(QUOTE) ? inner.slice(1) : inner;
}

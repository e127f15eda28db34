/**
 * Formula-like text: a cell that a spreadsheet (Excel, LibreOffice) may run
 * as a formula when finance opens a CSV, told by its first character: `=`,
 * `+`, `-`, `@`, tab or carriage return (the OWASP list for CSV injection).
 * One definition for the intake rule that refuses such text in a batch and
 * for the outbox writers that escape it with a leading `'`.
 */

/** The characters that make a cell starting with them formula-like. */
export const FORMULA_TRIGGERS = ['=', '+', '-', '@', '\t', '\r'] as const;

/** What makes formula-like text read as text: written before it. */
export const FORMULA_ESCAPE = "'";

/**
 * The leading character that makes `text` formula-like, or null. A lone
 * `-` is not: it is the usual placeholder for a missing name part, and no
 * spreadsheet runs an operator alone.
 */
export function formulaTrigger(text: string): string | null {
  switch (text.charCodeAt(0)) {
    case 0x3d: // =
    case 0x2b: // +
    case 0x40: // @
    case 0x09: // tab
    case 0x0d: // carriage return
      return text.charAt(0);
    case 0x2d: // -
      return text.length > 1 ? '-' : null;
    default:
      return null;
  }
}

/** The text with a leading `'` when it is formula-like (what a file meant to be opened and read back holds). */
export function escapeFormulaLike(text: string): string {
  return formulaTrigger(text) === null ? text : FORMULA_ESCAPE + text;
}

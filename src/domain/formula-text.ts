/**
 * Formula-like text: a cell a spreadsheet may run as a formula, told by its first character (`=`, `+`, `-`, `@`,
 * tab, CR: OWASP's CSV injection list). One definition for the intake rule and the outbox writers.
 */

/** The characters that make a cell starting with them formula-like. */
export const FORMULA_TRIGGERS = ['=', '+', '-', '@', '\t', '\r'] as const;

/** What makes formula-like text read as text: written before it. */
export const FORMULA_ESCAPE = "'";

/** The leading character that makes `text` formula-like, or null; a lone `-` (a usual placeholder) is not. */
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

/**
 * Whether a batch file looks like a whole upload. A cut upload can end inside a row, or after a field with no
 * line break (a cut amount that still validates: `1500.50` cut to `150`); such a file is refused whole.
 */

/** What is known of a file's end when it has been read. */
export interface FileEnd {
  /** The last byte is a line break (LF or CR). */
  endsWithLineBreak: boolean;
  /** A control trailer is present (after the rows: a cut upload loses it), and every control block matches the rows. */
  controlTotalsMatched: boolean;
  /** A `<name>.done` marker was consumed with the file: the sender said it was complete. */
  doneMarker: boolean;
}

export const UNTERMINATED_REASON = 'the file does not end with a line break: the upload may be incomplete; upload it again';

/** Why a file that may be cut after its last field cannot be paid; null when a line break, a control trailer or a done marker vouch for it. */
export function unterminatedFileProblem(end: FileEnd): string | null {
  return end.endsWithLineBreak || end.controlTotalsMatched || end.doneMarker ? null : UNTERMINATED_REASON;
}

/** The words for a file that ends inside a row (`rowNumber`: among its data rows; null: inside its header). */
export function endsInsideRow(rowNumber: number | null): string {
  return rowNumber === null
    ? 'the upload looks incomplete (the file ends inside its header row)'
    : `the upload looks incomplete (the file ends inside row ${rowNumber})`;
}

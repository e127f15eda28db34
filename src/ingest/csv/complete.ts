/**
 * Whether a batch file looks like a whole upload. An upload cut short (a
 * stalled SFTP client, an aborted copy) can end inside a row, or right
 * after the last field of one with no line break: a cut account number or
 * amount that still validates (`1500.50` cut to `150`). Such a file is
 * refused whole, in words finance understands.
 */

/** What is known of a file's end when it has been read. */
export interface FileEnd {
  /** The last byte is a line break (LF or CR). */
  endsWithLineBreak: boolean;
  /** Control totals (trailer lines or a `.ctl` sidecar) are present and every one matches the rows. */
  controlTotalsMatched: boolean;
  /** A `<name>.done` marker was consumed with the file: the sender said it was complete. */
  doneMarker: boolean;
}

export const UNTERMINATED_REASON = 'the file does not end with a line break: the upload may be incomplete; upload it again';

/**
 * Why a file that may have been cut after its last field cannot be paid, or
 * null when it can: it ends with a line break, or its control totals or a
 * done marker vouch for it.
 */
export function unterminatedFileProblem(end: FileEnd): string | null {
  return end.endsWithLineBreak || end.controlTotalsMatched || end.doneMarker ? null : UNTERMINATED_REASON;
}

/** The words for a file that ends inside a row (`rowNumber`: among its data rows; null: inside its header). */
export function endsInsideRow(rowNumber: number | null): string {
  return rowNumber === null
    ? 'the upload looks incomplete (the file ends inside its header row)'
    : `the upload looks incomplete (the file ends inside row ${rowNumber})`;
}

/** How a message of the acceptance names a row of another batch. */

/** When a batch was received, as a message says it: `2026-01-05 09:00 UTC`. */
function receivedText(ms: number | string): string {
  return `${new Date(Number(ms)).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A row of another batch as a message names it, its file by the name finance gave it: `line 2 of "pay.csv" (batch B…, received …)`. */
export function placeIn(file: string, line: number, batchId: string, receivedAt: number | string): string {
  return `line ${line} of ${JSON.stringify(file)} (batch ${batchId}, received ${receivedText(receivedAt)})`;
}

/**
 * What a row refused for a row of `file`, a file being read at the same time, says to do. That row may be refused
 * while its file is accepted, so a rejected file is not the only way neither pays it.
 */
export function ifNotPaidBy(file: string): string {
  return `if that row is not paid by ${JSON.stringify(file)} (its file rejected, or the row refused too: see its ack), send this row again`;
}

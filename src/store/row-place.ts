/** How a message of the acceptance names a row of another batch. */

/** When a batch was received, as a message says it: `2026-01-05 09:00 UTC`. */
function receivedText(ms: number | string): string {
  return `${new Date(Number(ms)).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A row of another batch as a message names it, its file by the name finance gave it: `line 2 of "pay.csv" (batch B…, received …)`. */
export function placeIn(file: string, line: number, batchId: string, receivedAt: number | string): string {
  return `line ${line} of ${JSON.stringify(file)} (batch ${batchId}, received ${receivedText(receivedAt)})`;
}

/**
 * What finance and operators are told of a batch whose row details retention removed (src/daemon/retention.ts):
 * its amounts, fees, times and reasons are gone from the database, so every report, message and listing that
 * names it says so, when, and where the figures still are. The words live here so that they say the same.
 */

/** A batch whose row details retention removed. */
export interface DetailsRemoved {
  /** When (`batches.pruned_at`). */
  at: number;
  /** The name of its result file in the outbox (`<batch id>_<file>.result.csv`), removed then too. */
  resultFile: string;
}

/** `removed by retention (retention.days) on 2026-12-30 10:00 UTC`. */
export function removedByRetention(at: number): string {
  return `removed by retention (retention.days) on ${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** Where the figures of such a batch are: the result file finance downloaded before it went. */
export function downloadedResultFile(d: DetailsRemoved): string {
  return `${d.resultFile}, the result file downloaded from the outbox before`;
}

/** The reason cell of a row of such a batch in the reconciliation report: its money cells are empty, not zero. */
export function detailsRemovedReason(d: DetailsRemoved): string {
  return `details ${removedByRetention(d.at)}: this row's amounts, fees and times are not in this report or its totals; they are in ${downloadedResultFile(d)}`;
}

/**
 * What finance and operators are told of a batch whose row details retention removed (src/daemon/retention.ts):
 * its amounts, fees, times and reasons are gone from the database, so every report, message and listing that
 * names it says so, when, and where the figures still are; from the moment retention begins on it, as a prune cut
 * short leaves some gone. The words live here so that they say the same.
 */

/** A batch whose row details retention removed, or began to remove. */
export interface DetailsRemoved {
  /** When: `batches.pruned_at` once removed; while not, when retention began (`batches.prune_started_at`). */
  at: number;
  /** False while retention has begun and not finished (a prune cut short, or one under way): some rows may keep theirs. */
  complete: boolean;
  /** The name of its result file in the outbox (`<batch id>_<file>.result.csv`), removed then too. */
  resultFile: string;
}

const minute = (at: number): string => `${new Date(at).toISOString().slice(0, 16).replace('T', ' ')} UTC`;

/** `removed by retention (retention.days) on 2026-12-30 10:00 UTC`. */
export function removedByRetention(at: number): string {
  return `removed by retention (retention.days) on ${minute(at)}`;
}

/**
 * What retention did to them: `removed by retention (…) on …`, or, begun and not finished, `being removed by
 * retention (…) since …, not finished yet (the next prune finishes it)`.
 */
export function byRetention(d: Pick<DetailsRemoved, 'at' | 'complete'>): string {
  return d.complete
    ? removedByRetention(d.at)
    : `being removed by retention (retention.days) since ${minute(d.at)}, not finished yet (the next prune finishes it)`;
}

/** `its row details were removed by retention …` or `its row details are being removed by retention …`. */
export function itsRowDetails(d: Pick<DetailsRemoved, 'at' | 'complete'>): string {
  return `its row details ${d.complete ? 'were' : 'are'} ${byRetention(d)}`;
}

/** Where the figures of such a batch are: the result file finance downloaded before it went. */
export function downloadedResultFile(d: DetailsRemoved): string {
  return `${d.resultFile}, the result file downloaded from the outbox before`;
}

/** The reason cell of a row of such a batch in the reconciliation report: its money cells are empty, not zero. */
export function detailsRemovedReason(d: DetailsRemoved): string {
  return `details ${byRetention(d)}: this row's amounts, fees and times are not in this report or its totals; they are in ${downloadedResultFile(d)}`;
}

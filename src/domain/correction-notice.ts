/**
 * A `corrected` batch event in words for finance: the rows a corrected result file changed, as its event data
 * carries them (src/daemon/finisher.ts: correctedEventData), read back from stored JSON and told the same way by
 * the mail, `payoutd status --batch` and the console. Pure: no I/O.
 */
import type { BatchEventData } from './batch-events.js';
import { OTHER_PAYOUTS_OUTCOME, UNCONFIRMED_OUTCOME, isRecord, otherPayoutsOf, textOrNull, type OtherPayout } from './service-check.js';

/** One row a correction changed, as its event lists it. */
export interface CorrectedRow {
  line: number;
  merchantReferenceId: string;
  payoutId: string | null;
  /** Its status in the result file and every correction of it: a correction never changes it. */
  status: string;
  /** The outcome the superseded file told, and the one the corrected file tells (shownOutcome). */
  oldOutcome: string;
  newOutcome: string;
  /** Payouts the service holds under the row's reference besides the row's own, as the corrected file tells them. */
  otherPayouts: OtherPayout[];
  payoutAmount: string | null;
  payoutCurrency: string | null;
  deductionAmount: string | null;
  deductionCurrency: string | null;
}

/** A correction as its event tells it. */
export interface CorrectionNotice {
  correction: number;
  correctionFile: string;
  supersedes: string;
  /** The letters of the corrected file's `reason` and `correction` columns. */
  columns: { reason: string; correction: string };
  rowsChanged: number;
  rows: CorrectedRow[];
  /** Present when the correction changed which rows retry files offer: the version written, null when none is left. */
  retryFile?: string | null;
  /** RETRY_FILE_NOT_WRITTEN (retryFile null): the correction's retry file could not be written. */
  retryFileError?: string;
}

function columnsOf(v: unknown): CorrectionNotice['columns'] {
  const o = isRecord(v) ? v : {};
  return { reason: textOrNull(o['reason']) ?? '', correction: textOrNull(o['correction']) ?? '' };
}

/** The rows of a stored `corrected` event's data; a field it lacks reads as empty. */
export function correctionNoticeOf(data: BatchEventData): CorrectionNotice {
  const rows = Array.isArray(data['rows']) ? data['rows'] : [];
  return {
    correction: typeof data['correction'] === 'number' ? data['correction'] : 0,
    correctionFile: textOrNull(data['correctionFile']) ?? '',
    supersedes: textOrNull(data['supersedes']) ?? '',
    columns: columnsOf(data['columns']),
    rowsChanged: typeof data['rowsChanged'] === 'number' ? data['rowsChanged'] : rows.length,
    rows: rows.flatMap((r) => {
      if (!isRecord(r)) return [];
      return [
        {
          line: typeof r['line'] === 'number' ? r['line'] : 0,
          merchantReferenceId: textOrNull(r['merchantReferenceId']) ?? '',
          payoutId: textOrNull(r['payoutId']),
          status: textOrNull(r['status']) ?? '',
          oldOutcome: textOrNull(r['oldOutcome']) ?? '',
          newOutcome: textOrNull(r['newOutcome']) ?? '',
          otherPayouts: otherPayoutsOf(r['otherPayouts']),
          payoutAmount: textOrNull(r['payoutAmount']),
          payoutCurrency: textOrNull(r['payoutCurrency']),
          deductionAmount: textOrNull(r['deductionAmount']),
          deductionCurrency: textOrNull(r['deductionCurrency']),
        },
      ];
    }),
    ...('retryFile' in data ? { retryFile: textOrNull(data['retryFile']) } : {}),
    ...(typeof data['retryFileError'] === 'string' ? { retryFileError: data['retryFileError'] } : {}),
  };
}

const money = (amount: string | null, currency: string | null): string | null =>
  amount === null ? null : currency === null ? amount : `${amount} ${currency}`;

/**
 * The other payouts under a row's reference, and what finance does with them, in the words of the row's note in
 * the result file (do not send it again; check with the payout service before booking). Null when none.
 */
function otherPayoutsText(r: Pick<CorrectedRow, 'status' | 'newOutcome' | 'otherPayouts'>): string | null {
  const others = r.otherPayouts;
  if (others.length === 0) return null;
  const one = others.length === 1;
  const listed = others.map((o) => [`${o.payoutId} ${o.status}`, money(o.amount, o.currency)].filter((t) => t !== null).join(', '));
  // The row's own payout is paid when the service reports it PAID, or does not contradict a row recorded PAID.
  const ownPaid = r.newOutcome === 'PAID' || (r.newOutcome === OTHER_PAYOUTS_OUTCOME && r.status === 'PAID');
  const twice = ownPaid && others.some((o) => o.status === 'PAID') ? '; the reference is paid twice' : '';
  const it = one ? 'it' : 'them';
  return (
    `${one ? 'a second payout' : `${others.length} other payouts`} under this reference: ${listed.join('; ')}${twice}: ` +
    `do not book ${it} as this row's payment, and do not send this row again; check ${it} with the payout service before booking the row`
  );
}

/**
 * `line 3 INV-1003 (payout PO…): CANCELLED in the result file; now PAID (told before: CANCELLED); 2500.75 PHP`,
 * then the other payouts under its reference, when the service holds any.
 */
export function correctedRowText(r: CorrectedRow): string {
  const paid = money(r.payoutAmount, r.payoutCurrency);
  const deducted = money(r.deductionAmount, r.deductionCurrency);
  const amounts = [paid, deducted === null ? null : `deduction ${deducted}`].filter((a) => a !== null).join(', ');
  const others = otherPayoutsText(r);
  return (
    `line ${r.line} ${r.merchantReferenceId} (payout ${r.payoutId ?? '-'}): ${r.status} in the result file; ` +
    `now ${r.newOutcome} (told before: ${r.oldOutcome})${amounts === '' ? '' : `; ${amounts}`}${others === null ? '' : `; ${others}`}`
  );
}

/** What finance does with a correction, in one paragraph (mail, status). */
export function correctionAdvice(n: CorrectionNotice): string {
  const unconfirmed = n.rows.some((r) => r.newOutcome === UNCONFIRMED_OUTCOME)
    ? ` ${UNCONFIRMED_OUTCOME}: payoutd is asking the payout service about the row, or can no longer ask it.`
    : '';
  const others = n.rows.some((r) => r.newOutcome === OTHER_PAYOUTS_OUTCOME)
    ? ` ${OTHER_PAYOUTS_OUTCOME}: the payout service does not contradict the row's own payout, but holds another ` +
      "payout under the row's reference (named with the row): the reference may be paid twice, or by another payout than the row's."
    : '';
  const { reason, correction } = n.columns;
  return (
    `Book ${n.correctionFile} as a correction of ${n.supersedes}, not as a new result: each row's status and ` +
    `amounts stay as the result file has them; its column ${reason} "reason" says what the payout service says now ` +
    `and column ${correction} "correction" what changed. A row whose outcome now differs from its status: do not ` +
    `send it again, and check it with the payout service before booking it.${unconfirmed}${others}`
  );
}

/** What the correction did to the batch's retry files (of batch `batchId`), when it changed them or failed to. */
export function correctionRetryText(n: CorrectionNotice, batchId: string): string | null {
  if (n.retryFileError !== undefined) {
    return (
      `the retry file of this correction could not be written (payoutd's log says why; ${n.retryFileError}): retry ` +
      'files of this batch in the outbox, and copies taken before, may still offer a row this correction changed: do ' +
      `not retry from them; write one with payoutd retry-file --batch ${batchId} before retrying its CANCELLED rows`
    );
  }
  if (n.retryFile === undefined) return null;
  const before = 'earlier retry files of this batch were removed from the outbox: do not use a copy taken before';
  return n.retryFile === null ? `no retry file is left; ${before}` : `retry file now: ${n.retryFile}; ${before}`;
}

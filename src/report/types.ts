/** The shapes the outbox writers read. Amounts are decimal text throughout. */
import type { HoldCode } from '../domain/holds.js';
import type { AckCurrencyTotal } from './ack-totals.js';

/** Final or current state of one CSV row, as the store reports it. */
export type RowOutcomeStatus =
  | 'PAID'
  | 'CANCELLED'
  | 'PENDING' // the payout service's statuses (PENDING only in interim reports)
  | 'REJECTED' // invalid row or a final business rejection: not paid
  | 'NOT_SUBMITTED' // valid row not paid because the file was rejected (policy reject-file) or held
  | 'DUPLICATE'; // reference already used by an earlier batch: not paid here

/** Every status, in the order the summary lists them (paid money first). */
export const ROW_OUTCOME_STATUSES: readonly RowOutcomeStatus[] = ['PAID', 'CANCELLED', 'PENDING', 'REJECTED', 'NOT_SUBMITTED', 'DUPLICATE'];

export function isRowOutcomeStatus(value: string): value is RowOutcomeStatus {
  return (ROW_OUTCOME_STATUSES as readonly string[]).includes(value);
}

export interface RowOutcome {
  line: number;
  merchantReferenceId: string;
  payoutCurrency: string;
  payoutAmount: string;
  deductionCurrency: string;
  beneficiaryAccountName: string;
  beneficiaryAccountNumber: string;
  status: RowOutcomeStatus;
  payoutId: string | null;
  rate: string | null;
  deductionAmount: string | null;
  totalFee: string | null;
  feeCurrency: string | null;
  /** ISO 8601 UTC. */
  completeTime: string | null;
  /** Error code + message, business code + msg, failureReason, or "duplicate of batch X line N". */
  reason: string | null;
  /** Only in a corrected result file: what changed in the row since the file it supersedes (null: nothing). */
  correction?: string | null;
}

/**
 * A final status an accepted row may have reached before its ack was written (an ack written late). DISPUTED: recorded
 * final, but the payout service has since contradicted it, or is being asked about it: the ack states no outcome.
 */
export type EndedStatus = 'PAID' | 'CANCELLED' | 'REJECTED' | 'DISPUTED';

export interface AckRow {
  line: number;
  merchantReferenceId: string;
  verdict: 'ACCEPTED' | 'REJECTED';
  reason: string | null;
  /** An accepted row already final when the ack was written: counted apart in the totals lines. */
  ended?: EndedStatus;
  /** The row's money as written, for the totals lines (given rows without precomputed totals). */
  payoutCurrency?: string | null;
  payoutAmount?: string | null;
}

export interface BatchIdentity {
  batchId: string;
  /** Base name of the dropped file, as the sender named it. */
  fileName: string;
  /** Base name the outbox files are named after (default: fileName); the daemon prefixes the batch id. */
  outboxName?: string;
  sha256: string;
  receivedAt: string;
}

/**
 * What a summary line adds up. `rows` is the per-status (and grand) total line; `details_removed` (reconciliation
 * totals only) counts rows whose amounts retention removed, in no sum.
 */
export type SummaryMeasure = 'payout_amount' | 'deduction_amount' | 'total_fee' | 'details_removed' | 'rows';

export interface SummaryRow {
  /** A row status, or `ALL` on the grand total line. */
  status: RowOutcomeStatus | 'ALL';
  measure: SummaryMeasure;
  /** Currency of the amounts summed; empty on `rows` lines. */
  currency: string;
  rowCount: number;
  /** Exact sum in normal form; null on `rows` and `details_removed` lines. */
  amount: string | null;
  /** Rows of this group whose amount was not a plain decimal or is no longer kept (left out of `amount`); null on `rows` lines. */
  rowsNotSummed: number | null;
}

/** The summary as data, for the daemon to log. */
export interface BatchSummary {
  rowCount: number;
  statusCounts: Partial<Record<RowOutcomeStatus, number>>;
  rows: SummaryRow[];
}

/** Where and how a file is committed (see atomic.ts). */
export interface AtomicWriteOptions {
  /** Permission bits of the new file (default 0o640: finance files carry account numbers). */
  mode?: number;
  /** Aborts the write between chunks; nothing is left under the final name. */
  signal?: AbortSignal;
}

export interface OutboxOptions extends AtomicWriteOptions {
  /** Start the file with a UTF-8 BOM so Excel reads it as UTF-8 (config `outbox.bom`, default true). */
  bom?: boolean;
}

export interface AckWriteOptions extends OutboxOptions {
  /**
   * The totals lines the ack starts with, per payout currency (src/report/ack-totals.ts). Rows given as a
   * list are added up here; a caller streaming pages adds them up first (the lines come before the rows).
   */
  totals?: readonly AckCurrencyTotal[];
  /** Minor units overriding the built-in table, for the amounts of the totals lines. */
  minorUnits?: Readonly<Record<string, number>>;
  /** The whole file was rejected for this reason: a first row with empty line, verdict REJECTED. */
  fileRejection?: string;
  /** The batch is held until an operator decides, for this reason: a first row with empty line, verdict HELD. */
  fileHold?: string;
  /** The code of that hold: the verdict's words say who lifts it (approvers, or an operator). */
  fileHoldCode?: HoldCode;
  /** An operator cancelled the batch, as this says (why, and when): a first row with empty line, verdict CANCELLED. */
  fileCancel?: string;
  /** Something finance should know of how the file was read (its encoding): a row with empty line, verdict NOTE. */
  fileNote?: string;
}

/** Config default of `outbox.bom`. */
export const DEFAULT_OUTBOX_BOM = true;

/** Row state (src/domain/lifecycle) to the status vocabulary of the outbox files: anything not final is PENDING. */
const STATUS_OF_STATE: Readonly<Record<string, RowOutcomeStatus>> = {
  PAID: 'PAID',
  CANCELLED: 'CANCELLED',
  REJECTED: 'REJECTED',
  INVALID: 'REJECTED',
  NOT_SUBMITTED: 'NOT_SUBMITTED',
  DUPLICATE: 'DUPLICATE',
};

export function outcomeStatusOf(state: string): RowOutcomeStatus {
  return STATUS_OF_STATE[state] ?? 'PENDING';
}

/** Pure formatting of the outbox files: names, headers, and records of raw text cells (escaped in csv.ts). */
import { ReportError } from './errors.js';
import { isRowOutcomeStatus } from './types.js';
import type { AckRow, BatchIdentity, BatchSummary, RowOutcome, SummaryRow } from './types.js';

export const ACK_COLUMNS = ['batch_id', 'file', 'line', 'merchant_reference_id', 'verdict', 'reason'] as const;

export const RESULT_COLUMNS = [
  'line',
  'merchant_reference_id',
  'status',
  'payout_id',
  'payout_currency',
  'payout_amount',
  'deduction_currency',
  'deduction_amount',
  'rate',
  'total_fee',
  'fee_currency',
  'beneficiary_account_name',
  'beneficiary_account_number',
  'complete_time',
  'reason',
] as const;

export const SUMMARY_COLUMNS = ['status', 'measure', 'currency', 'row_count', 'amount', 'rows_not_summed'] as const;

/** The last column of the result, summary and reconciliation files (CSV and .xlsx) when approval is in the picture. */
export const APPROVAL_COLUMN = 'approval';

/** The batch's approval audit in words (src/approval), or null when it went through none. */
export interface ApprovalAudit {
  /** Written in an `approval` column; null or absent leaves the file as it is without approval. */
  approval?: string | null;
}

/** A file's columns, and `approval` last when the file carries the audit: the CSV and its .xlsx take them from here. */
export function withApprovalColumn(columns: readonly string[], audited: boolean): readonly string[] {
  return audited ? [...columns, APPROVAL_COLUMN] : columns;
}

/** The last column of a corrected result file (CSV and .xlsx): what changed in the row since the file it supersedes. */
export const CORRECTION_COLUMN = 'correction';

/** The columns of `<file>.result.csv` and of the first sheet of its .xlsx; a corrected one ends with `correction`. */
export function resultColumns(approval: string | null = null, corrected = false): readonly string[] {
  const columns = withApprovalColumn(RESULT_COLUMNS, approval !== null);
  return corrected ? [...columns, CORRECTION_COLUMN] : columns;
}

/** The columns of `<file>.summary.csv` and of the `Summary` sheet of the result and summary .xlsx. */
export function summaryColumns(approval: string | null = null): readonly string[] {
  return withApprovalColumn(SUMMARY_COLUMNS, approval !== null);
}

/** The summary lines as records, each ending with the audit when there is one (as summaryColumns says). */
export function summaryRecords(summary: BatchSummary, approval: string | null = null): string[][] {
  return summary.rows.map((row) => (approval === null ? summaryRecord(row) : [...summaryRecord(row), approval]));
}

/** Refuses outbox names that could leave the outbox, hide (a leading `.`), pass for an option, or break a listing. */
export function assertPlainFileName(fileName: string): void {
  const bad = fileName === '' || /^[.-]/.test(fileName) || /[/\\\p{Cc}\p{Zl}\p{Zp}]/u.test(fileName);
  if (bad) throw new ReportError('REPORT_BAD_FILE_NAME', `not a plain file name for the outbox: ${JSON.stringify(fileName)}`);
}

/** What the outbox holds for a batch: each `<outbox name>.<kind>.csv`, and its `.xlsx` twin. */
export type OutboxFileKind = 'ack' | 'result' | 'summary' | 'retry' | 'status' | 'upload-continued' | 'remainder';

/** The name of a batch's outbox file of that kind (`fileName` is the batch's outbox name). */
export function outboxFileName(fileName: string, kind: OutboxFileKind, ext: 'csv' | 'xlsx' = 'csv'): string {
  assertPlainFileName(fileName);
  return `${fileName}.${kind}.${ext}`;
}

/**
 * A batch's result file: `<name>.result.csv` (correction 0), or its n-th correction `<name>.result.corrected-<n>.csv`,
 * a name of its own so that nothing booking every `*.result.csv` books a batch twice.
 */
export function resultFileName(outboxName: string, correction: number, ext: 'csv' | 'xlsx' = 'csv'): string {
  return versionedFileName(outboxName, 'result', correction, ext);
}

/**
 * A batch's retry file: `<name>.retry.csv` (the first), or the one written with its n-th corrected result file,
 * `<name>.retry.corrected-<n>.csv`: each version under a name of its own, so finance can tell which one it took.
 */
export function retryFileName(outboxName: string, correction: number, ext: 'csv' | 'xlsx' = 'csv'): string {
  return versionedFileName(outboxName, 'retry', correction, ext);
}

function versionedFileName(outboxName: string, kind: 'result' | 'retry', correction: number, ext: 'csv' | 'xlsx'): string {
  if (correction === 0) return outboxFileName(outboxName, kind, ext);
  if (!Number.isSafeInteger(correction) || correction < 0)
    throw new ReportError('REPORT_BAD_FILE_NAME', `not a correction number: ${correction}`);
  assertPlainFileName(outboxName);
  return `${outboxName}.${kind}.corrected-${correction}.${ext}`;
}

const text = (value: string | null): string => value ?? '';

/** The reason finance reads, in every file: the code, then the words (unless the words already start with the code). */
export function reasonText(code: string | null, reason: string | null): string | null {
  if (!reason) return code;
  return code && !reason.startsWith(code) ? `${code}: ${reason}` : reason;
}

/**
 * A row's reason as finance reads it (result files, reconciliation report): its own, then what the payout service
 * said against it since (its service note, src/poll/checks.ts), which may contradict the row's state.
 */
export function withServiceNote(own: string | null, serviceNote: string | null | undefined): string | null {
  return serviceNote ? (own ? `${own}; ${serviceNote}` : serviceNote) : own;
}

export function ackRecord(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, row: AckRow): string[] {
  if (row.verdict !== 'ACCEPTED' && row.verdict !== 'REJECTED') {
    throw new ReportError('REPORT_BAD_ROW', `line ${row.line}: verdict must be ACCEPTED or REJECTED`);
  }
  return [identity.batchId, identity.fileName, String(row.line), row.merchantReferenceId, row.verdict, text(row.reason)];
}

/** The row that says the whole file was rejected: no line, no reference. */
export function fileRejectionRecord(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, reason: string): string[] {
  return [identity.batchId, identity.fileName, '', '', 'REJECTED', reason];
}

/** The row that says the batch is held until an operator decides: no line, no reference. */
export function fileHoldRecord(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, reason: string): string[] {
  return [identity.batchId, identity.fileName, '', '', 'HELD', reason];
}

/** The row that says an operator cancelled the batch, why and when: no line, no reference. */
export function fileCancelRecord(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, cancel: string): string[] {
  return [identity.batchId, identity.fileName, '', '', 'CANCELLED', cancel];
}

/** The row that says how the file was read (its encoding, when decided from its bytes): no line, no reference. */
export function fileNoteRecord(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, note: string): string[] {
  return [identity.batchId, identity.fileName, '', '', 'NOTE', note];
}

export function resultRecord(o: RowOutcome): string[] {
  if (!isRowOutcomeStatus(o.status)) throw new ReportError('REPORT_BAD_ROW', `line ${o.line}: unknown status`);
  return [
    String(o.line),
    o.merchantReferenceId,
    o.status,
    text(o.payoutId),
    o.payoutCurrency,
    o.payoutAmount,
    o.deductionCurrency,
    text(o.deductionAmount),
    text(o.rate),
    text(o.totalFee),
    text(o.feeCurrency),
    o.beneficiaryAccountName,
    o.beneficiaryAccountNumber,
    text(o.completeTime),
    text(o.reason),
  ];
}

export function summaryRecord(row: SummaryRow): string[] {
  return [
    row.status,
    row.measure,
    row.currency,
    String(row.rowCount),
    text(row.amount),
    row.rowsNotSummed === null ? '' : String(row.rowsNotSummed),
  ];
}

/**
 * The reconciliation report finance matches against the statement: every payout created in a period with its
 * state as last confirmed, and a totals file per status and currency. Also parsing `--since` / `--until`.
 */
import { PayoutdError } from '../domain/errors.js';
import { writeFileAtomic } from './atomic.js';
import { csvChunks } from './csv.js';
import { reasonText, summaryColumns, summaryRecords, withApprovalColumn, withServiceNote } from './format.js';
import { detailsRemovedReason, type DetailsRemoved } from './retention-notes.js';
import { SummaryAccumulator } from './summary.js';
import { DEFAULT_OUTBOX_BOM } from './types.js';
import type { BatchSummary, OutboxOptions, RowOutcome, RowOutcomeStatus } from './types.js';
import { besideCsv, summarySheet, writeXlsxFile, xlsxColumns, type XlsxOptions } from './xlsx.js';
import { outcomeStatusOf } from './types.js';

type Rows<T> = AsyncIterable<T> | Iterable<T>;

export type FinanceReportErrorCode =
  | 'REPORT_BAD_DATE' // --since / --until not a date or an ISO timestamp with a zone
  | 'REPORT_BAD_PERIOD' // since not before until
  | 'REPORT_PERIOD_NOT_OVER' // until later than now: payouts still to be created in the period would be in no report
  | 'RETRY_BAD_REQUEST' // a CANCELLED row whose stored request cannot be read back
  | 'RETRY_REFERENCE'; // no fresh reference can be made within the length limit

/** Errors of the finance reports; messages name lines and references, never personal data. */
export class FinanceReportError extends PayoutdError {
  override readonly name = 'FinanceReportError';
  declare readonly code: FinanceReportErrorCode;

  constructor(code: FinanceReportErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

// ---------------------------------------------------------------------------
// The period

export interface ReportPeriod {
  /** Inclusive, ms since the epoch. */
  sinceMs: number;
  /** Exclusive, ms since the epoch. */
  untilMs: number;
}

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** A zone is required: a timestamp without one would depend on the machine's time zone. */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

function isRealDay(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/** `YYYY-MM-DD` (midnight UTC) or an ISO 8601 timestamp with `Z` or an offset, to ms; `option` names the flag. */
export function parseReportInstant(text: string, option: string): number {
  const bad = (): FinanceReportError =>
    new FinanceReportError(
      'REPORT_BAD_DATE',
      `${option}: expected YYYY-MM-DD (UTC) or an ISO timestamp with a zone such as 2026-01-02T09:00:00Z, got ${JSON.stringify(text)}`,
    );
  const trimmed = text.trim();
  const parts = DATE_ONLY.exec(trimmed) ?? TIMESTAMP.exec(trimmed);
  if (!parts) throw bad();
  const [y, m, d] = [parts[1], parts[2], parts[3]].map((p) => Number.parseInt(p ?? '', 10)) as [number, number, number];
  if (!isRealDay(y, m, d)) throw bad();
  const [hh, mm, ss] = [parts[4], parts[5], parts[6]].map((p) => Number.parseInt(p ?? '0', 10)) as [number, number, number];
  if (hh > 23 || mm > 59 || ss > 59) throw bad();
  const ms = parts[4] === undefined ? Date.UTC(y, m - 1, d) : Date.parse(trimmed);
  if (!Number.isFinite(ms)) throw bad();
  return ms;
}

/** `--since` and `--until` as given, checked: `until` (null: not given) is later than `since`. */
export interface RequestedPeriod {
  sinceMs: number;
  untilMs: number | null;
}

/** The period asked for, read before the store is opened: a date as `until` means midnight starting that day, excluded. */
export function requestedPeriod(since: string, until: string | undefined): RequestedPeriod {
  const sinceMs = parseReportInstant(since, '--since');
  const untilMs = until === undefined ? null : parseReportInstant(until, '--until');
  if (untilMs !== null) assertNotEmpty(sinceMs, untilMs);
  return { sinceMs, untilMs };
}

function assertNotEmpty(sinceMs: number, untilMs: number): void {
  if (sinceMs >= untilMs) {
    throw new FinanceReportError(
      'REPORT_BAD_PERIOD',
      `the period is empty: --since ${new Date(sinceMs).toISOString()} is not before --until ${new Date(untilMs).toISOString()}`,
    );
  }
}

/**
 * [since, until) of a report whose end was fixed at `endMs` (fixPeriodEnd): `until` defaults to it. A later
 * `until` is refused rather than cut to `endMs`: the file would be named, and booked, for a period that is not
 * over, missing the payouts still to be created in it, which the next period (from `until`) would not hold either.
 */
export function reportPeriod(requested: RequestedPeriod, endMs: number): ReportPeriod {
  const { sinceMs } = requested;
  // Now to the second, down: named to the second, the period is the file's name; an earlier end is as complete.
  const untilMs = requested.untilMs ?? endMs - (endMs % 1000);
  if (untilMs > endMs) {
    const until = new Date(untilMs).toISOString();
    throw new FinanceReportError(
      'REPORT_PERIOD_NOT_OVER',
      `--until ${until} is later than now (${new Date(endMs).toISOString()}): the period is not over, and the payouts still to be created in it ` +
        `would be in no report. No report written: run it again once ${until} has passed, or leave --until out for a report up to now ` +
        '(its end is in its file name and first line: start the next report --since that end)',
    );
  }
  assertNotEmpty(sinceMs, untilMs);
  return { sinceMs, untilMs };
}

/** `20260101T000000Z`; with its milliseconds where it has any (`20260101T000000.250Z`), so a name never rounds its period. */
const compactIso = (ms: number): string =>
  new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.000Z$/, 'Z');

/** Default report name: `reconciliation-20260101T000000Z-20260201T000000Z.csv`. */
export function reconciliationFileName(period: ReportPeriod): string {
  return `reconciliation-${compactIso(period.sinceMs)}-${compactIso(period.untilMs)}.csv`;
}

/** `rec.csv` -> `rec.totals.csv`. */
export const reconciliationTotalsPath = (path: string): string => besideCsv(path, '.totals.csv');

// ---------------------------------------------------------------------------
// Rows

/** One created payout as the store reads it (`ReportedPayoutRow`); `state` is payoutd's row state. */
export interface ReconciliationRow {
  batchId: string;
  fileName: string;
  line: number;
  merchantReferenceId: string;
  state: string;
  serviceStatus: string | null;
  payoutId: string | null;
  payoutCurrency: string | null;
  payoutAmount: string | null;
  deductionCurrency: string | null;
  deductionAmount: string | null;
  rate: string | null;
  totalFee: string | null;
  feeCurrency: string | null;
  /** When payoutd recorded the create (its clock): the period is selected on this. */
  createdAtMs: number | null;
  /** The service's times (ISO 8601 UTC) as the last query returned them. */
  createTime: string | null;
  completeTime: string | null;
  reasonCode: string | null;
  reason: string | null;
  /** What the payout service said against the row since (a contradiction, a check under way), or null. */
  serviceNote?: string | null;
  /** Set when retention removed the row details of its batch: its money cells are empty, not zero. */
  detailsRemoved?: DetailsRemoved | null;
}

export const RECONCILIATION_COLUMNS = [
  'batch_id',
  'file',
  'line',
  'merchant_reference_id',
  'payout_id',
  'status',
  'service_status',
  'payout_currency',
  'payout_amount',
  'deduction_currency',
  'deduction_amount',
  'rate',
  'total_fee',
  'fee_currency',
  'created_at',
  'create_time',
  'complete_time',
  'reason',
] as const;

export function reconciliationStatus(state: string): RowOutcomeStatus {
  return outcomeStatusOf(state);
}

const text = (value: string | null): string => value ?? '';

/** The CSV record of one row (raw text; escaping happens in csv.ts). */
export function reconciliationRecord(row: ReconciliationRow): string[] {
  return [
    row.batchId,
    row.fileName,
    String(row.line),
    row.merchantReferenceId,
    text(row.payoutId),
    reconciliationStatus(row.state),
    text(row.serviceStatus),
    text(row.payoutCurrency),
    text(row.payoutAmount),
    text(row.deductionCurrency),
    text(row.deductionAmount),
    text(row.rate),
    text(row.totalFee),
    text(row.feeCurrency),
    row.createdAtMs === null ? '' : new Date(row.createdAtMs).toISOString(),
    text(row.createTime),
    text(row.completeTime),
    text(
      withServiceNote(
        row.detailsRemoved ? detailsRemovedReason(row.detailsRemoved) : reasonText(row.reasonCode, row.reason),
        row.serviceNote,
      ),
    ),
  ];
}

/** The shape SummaryAccumulator sums (line is not checked there). */
function asOutcome(row: ReconciliationRow): RowOutcome {
  return {
    line: row.line,
    merchantReferenceId: row.merchantReferenceId,
    payoutCurrency: text(row.payoutCurrency),
    payoutAmount: text(row.payoutAmount),
    deductionCurrency: text(row.deductionCurrency),
    beneficiaryAccountName: '',
    beneficiaryAccountNumber: '',
    status: reconciliationStatus(row.state),
    payoutId: row.payoutId,
    rate: row.rate,
    deductionAmount: row.deductionAmount,
    totalFee: row.totalFee,
    feeCurrency: row.feeCurrency,
    completeTime: row.completeTime,
    reason: null,
  };
}

/** The approval audit of a batch in words, or null when it went through none (src/approval). */
export type ApprovalOfBatch = (batchId: string) => Promise<string | null>;

/** A batch of the period whose row details retention removed, with how many of its payouts the report lists. */
export interface ReportedPrunedBatch extends DetailsRemoved {
  batchId: string;
  fileName: string;
  payouts: number;
}

async function* reconciliationRecords(
  rows: Rows<ReconciliationRow>,
  acc: SummaryAccumulator,
  approvalOf?: ApprovalOfBatch,
  pruned = new Map<string, ReportedPrunedBatch>(),
): AsyncGenerator<string[]> {
  // A period holds few batches and many rows: each batch's audit is read once.
  const audits = new Map<string, string>();
  for await (const row of rows) {
    const record = reconciliationRecord(row);
    if (row.detailsRemoved) {
      acc.addDetailsRemoved(reconciliationStatus(row.state), row.line);
      const seen = pruned.get(row.batchId);
      if (seen) seen.payouts += 1;
      else pruned.set(row.batchId, { batchId: row.batchId, fileName: row.fileName, ...row.detailsRemoved, payouts: 1 });
    } else acc.add(asOutcome(row));
    if (approvalOf) {
      let audit = audits.get(row.batchId);
      if (audit === undefined) audits.set(row.batchId, (audit = (await approvalOf(row.batchId)) ?? ''));
      record.push(audit);
    }
    yield record;
  }
}

export interface ReconciliationAudits {
  /** With approval in use: an `approval` column holding each row's batch's approval audit (CSV and .xlsx alike). */
  approvalOf?: ApprovalOfBatch;
}

export interface ReconciliationOptions extends OutboxOptions, ReconciliationAudits {}

/** The columns of the report and of the first sheet of its .xlsx. */
function reconciliationColumns(opts: ReconciliationAudits): readonly string[] {
  return withApprovalColumn(RECONCILIATION_COLUMNS, opts.approvalOf !== undefined);
}

// ---------------------------------------------------------------------------
// Writers

export interface ReconciliationFiles {
  path: string;
  totalsPath: string;
  summary: BatchSummary;
  /** Batches whose payouts are listed without amounts (and left out of the sums): retention removed them. */
  prunedBatches: ReportedPrunedBatch[];
}

/** The report at `path`, then its totals, in one pass; the totals file is committed second, so when it exists both are complete. */
export async function writeReconciliationReport(
  path: string,
  rows: Rows<ReconciliationRow>,
  opts: ReconciliationOptions = {},
): Promise<ReconciliationFiles> {
  const bom = opts.bom ?? DEFAULT_OUTBOX_BOM;
  const acc = new SummaryAccumulator();
  const pruned = new Map<string, ReportedPrunedBatch>();
  const records = reconciliationRecords(rows, acc, opts.approvalOf, pruned);
  await writeFileAtomic(path, csvChunks(reconciliationColumns(opts), records, { bom }), opts);
  const summary = acc.summary();
  const totalsPath = reconciliationTotalsPath(path);
  // The totals span many batches, so they carry no audit.
  await writeFileAtomic(totalsPath, csvChunks(summaryColumns(), summaryRecords(summary), { bom }), opts);
  return { path, totalsPath, summary, prunedBatches: [...pruned.values()] };
}

/** The report as .xlsx (sheets "Reconciliation" and "Summary"): a second pass over the rows, with a fresh cursor. */
export async function writeReconciliationXlsx(
  path: string,
  rows: Rows<ReconciliationRow>,
  opts: XlsxOptions & ReconciliationAudits = {},
): Promise<{ path: string; summary: BatchSummary }> {
  const acc = new SummaryAccumulator();
  const records = reconciliationRecords(rows, acc, opts.approvalOf);
  await writeXlsxFile(
    path,
    [{ name: 'Reconciliation', columns: xlsxColumns(reconciliationColumns(opts)), records }, summarySheet(() => acc.summary())],
    opts,
  );
  return { path, summary: acc.summary() };
}

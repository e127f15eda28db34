/**
 * Retry files: for a batch with CANCELLED rows, `<name>.retry.csv` in the input format holding only those rows,
 * each with a fresh merchantReferenceId, so finance can fix an account and drop the file back in one step.
 * Fresh references are derived from the database, never random (`INV-7` -> `INV-7-R1`; too long:
 * `<truncated base>-H<10 hex of sha256(base)>-R<n>`, src/domain/retry-reference.ts), so two retry files of
 * one cancellation carry the same reference and at most one is paid. Cells are written as stored (the file is
 * read back as input); only formula-like text gets the `'`, and the intake refuses it. `<name>.retry.xlsx`
 * holds the same rows in typed cells (writeRetryXlsx): the file to edit in a spreadsheet, which keeps an
 * account's leading zeros. A row the payout service has since contradicted (or is being asked about:
 * src/poll/checks.ts) is left out and listed.
 */
import { join } from 'node:path';
import { escapeFormulaLike } from '../domain/formula-text.js';
import {
  candidateUse,
  CONTRADICTED_ROUND,
  DEFAULT_REFERENCE_MAX_LENGTH,
  planRetries,
  retryBase,
  roundReference,
  type RoundPlan,
  type RoundLookup,
  type RoundUse,
} from '../domain/retry-reference.js';
import { PAYOUT_REQUEST_FIELDS, decodeRequestValues, type PayoutRequestField } from '../domain/request-values.js';
import { writeFileAtomic } from './atomic.js';
import { csvLines, UTF8_BOM } from './csv.js';
import { outboxFileName } from './format.js';
import { FinanceReportError } from './reconciliation.js';
import { DEFAULT_OUTBOX_BOM } from './types.js';
import type { BatchIdentity, OutboxOptions } from './types.js';
import { writeCsvTwin, type XlsxColumn, type XlsxOptions } from './xlsx.js';

type Rows<T> = AsyncIterable<T> | Iterable<T>;

/** The header of a retry file: the input format's default column names (the request's fields, in its order). */
export const RETRY_COLUMNS: readonly PayoutRequestField[] = PAYOUT_REQUEST_FIELDS;

/** Cancelled rows resolved per round of lookups. */
const PAGE_ROWS = 500;

/**
 * The columns of the retry .xlsx: the retry CSV's, each a text cell (an
 * account keeps its leading zeros through a spreadsheet) but the amount, a
 * number with the currency's decimals and no thousands separators, so what
 * a spreadsheet shows and saves of it reads back as the same decimal.
 */
export const RETRY_XLSX_COLUMNS: readonly XlsxColumn[] = RETRY_COLUMNS.map((header) =>
  header === 'payoutAmount'
    ? { header, type: 'amount', width: 12, currencyColumn: 'payoutCurrency', grouping: false }
    : { header, type: 'text', width: 10 },
);

export { candidateUse, DEFAULT_REFERENCE_MAX_LENGTH, retryBase };

/** Round `round` of `base`, in at most `maxLength` code points (the validation rules count code points). */
export function retryReference(base: string, round: number, maxLength = DEFAULT_REFERENCE_MAX_LENGTH): string {
  const reference = roundReference(base, round, maxLength);
  if (reference === null) {
    throw new FinanceReportError('RETRY_REFERENCE', `no retry reference fits in ${maxLength} characters (round ${round})`);
  }
  return reference;
}

/** The values of the create request stored for a row, in RETRY_COLUMNS order (the request's own). */
export function retryValues(requestValues: string | null, line: number): readonly string[] {
  if (requestValues === null) throw new FinanceReportError('RETRY_BAD_REQUEST', `line ${line}: the stored request is missing`);
  try {
    return decodeRequestValues(requestValues);
  } catch (err) {
    throw new FinanceReportError('RETRY_BAD_REQUEST', `line ${line}: ${(err as Error).message}`, { cause: err });
  }
}

/** One retry row: the stored request with its fresh reference, in RETRY_COLUMNS order, formula-like text escaped. */
export function retryRecord(values: readonly string[], reference: string): string[] {
  return RETRY_COLUMNS.map((field, i) => escapeFormulaLike(field === 'merchantReferenceId' ? reference : (values[i] as string)));
}

/** What the retry file needs from the store (store/reports.ts provides it): its rows, and the rounds the planner reads. */
export interface RetrySource extends RoundLookup<RoundUse> {
  cancelledRows(): Rows<RetrySourceRow>;
}

export interface RetrySourceRow {
  line: number;
  merchantReferenceId: string;
  /** The request's values as the row keeps them (PayoutRow.requestValues). */
  requestValues: string | null;
  /** What the payout service said against the row, or that it is being asked (PayoutRow.serviceNote): the row is left out. */
  serviceNote?: string | null;
}

export interface RetryOptions extends OutboxOptions {
  /** Longest reference the validation rules accept (`merchantReferenceId.maxLength`, default 64). */
  referenceMaxLength?: number;
}

/** A cancelled row left out because it is already being retried, or was paid under a retry reference. */
export interface RetrySkip {
  line: number;
  merchantReferenceId: string;
  retriedAs: string;
  state: string;
  /** `retriedAs` is a round above the one its retry would take (sent directly, not from a retry file). */
  later?: true;
}

/** A cancelled row left out because the payout service contradicts it (it may be paid), or is being asked about it. */
export interface RetryWithheld {
  line: number;
  merchantReferenceId: string;
  note: string;
}

export interface RetryFile {
  /** Null when no row needed a retry (no file is written then). */
  path: string | null;
  rowCount: number;
  skippedCount: number;
  /** The first skipped rows (at most MAX_REPORTED_SKIPS). */
  skipped: RetrySkip[];
  withheldCount: number;
  /** The first rows left out for what the payout service said (at most MAX_REPORTED_SKIPS). */
  withheld: RetryWithheld[];
}

export const MAX_REPORTED_SKIPS = 1000;

interface Planned {
  row: RetrySourceRow;
  reference: string;
}

class SkipLog<T = RetrySkip> {
  count = 0;
  readonly first: T[] = [];

  add(skip: T): void {
    this.count += 1;
    if (this.first.length < MAX_REPORTED_SKIPS) this.first.push(skip);
  }
}

async function* plannedRows(
  source: RetrySource,
  maxLength: number,
  skips: SkipLog,
  withheld: SkipLog<RetryWithheld>,
): AsyncGenerator<Planned> {
  const taken = new Set<string>();
  let page: RetrySourceRow[] = [];
  const flush = async function* (): AsyncGenerator<Planned> {
    const plans = await planRetries(
      page.map((row) => row.merchantReferenceId),
      source,
      maxLength,
      taken,
    );
    for (const [i, row] of page.entries()) {
      const plan = plans[i] as RoundPlan<RoundUse>;
      if (plan.kind === 'free') yield { row, reference: plan.reference };
      else if (plan.kind === 'retrying') {
        const state = plan.row.contradicted ? CONTRADICTED_ROUND : plan.row.state;
        skips.add({
          line: row.line,
          merchantReferenceId: row.merchantReferenceId,
          retriedAs: plan.reference,
          state,
          ...(plan.later && { later: true }),
        });
      } else throw new FinanceReportError('RETRY_REFERENCE', `line ${row.line}: ${plan.why}`);
    }
    page = [];
  };
  for await (const row of source.cancelledRows()) {
    // A payout the service may have paid after all: a retry could pay the row twice.
    if (row.serviceNote) {
      withheld.add({ line: row.line, merchantReferenceId: row.merchantReferenceId, note: row.serviceNote });
      continue;
    }
    page.push(row);
    if (page.length >= PAGE_ROWS) yield* flush();
  }
  if (page.length > 0) yield* flush();
}

const RECORDS_PER_CHUNK = 1000;

async function* retryChunks(first: string[], rest: AsyncIterator<Planned>, bom: boolean, count: { rows: number }): AsyncGenerator<string> {
  yield (bom ? UTF8_BOM : '') + csvLines([RETRY_COLUMNS, first]);
  count.rows = 1;
  let batch: string[][] = [];
  for (let r = await rest.next(); !r.done; r = await rest.next()) {
    batch.push(retryRecord(retryValues(r.value.row.requestValues, r.value.row.line), r.value.reference));
    count.rows += 1;
    if (batch.length >= RECORDS_PER_CHUNK) {
      yield csvLines(batch);
      batch = [];
    }
  }
  if (batch.length > 0) yield csvLines(batch);
}

/** The retry file at `path`, rows streamed; nothing written when no cancelled row needs a retry (path null). */
export async function writeRetryFileAt(path: string, source: RetrySource, opts: RetryOptions = {}): Promise<RetryFile> {
  const skips = new SkipLog();
  const withheld = new SkipLog<RetryWithheld>();
  const rows = plannedRows(source, opts.referenceMaxLength ?? DEFAULT_REFERENCE_MAX_LENGTH, skips, withheld);
  const left = (): Pick<RetryFile, 'skippedCount' | 'skipped' | 'withheldCount' | 'withheld'> => ({
    skippedCount: skips.count,
    skipped: skips.first,
    withheldCount: withheld.count,
    withheld: withheld.first,
  });
  const head = await rows.next();
  if (head.done) return { path: null, rowCount: 0, ...left() };
  const first = retryRecord(retryValues(head.value.row.requestValues, head.value.row.line), head.value.reference);
  const count = { rows: 0 };
  await writeFileAtomic(path, retryChunks(first, rows, opts.bom ?? DEFAULT_OUTBOX_BOM, count), opts);
  return { path, rowCount: count.rows, ...left() };
}

/**
 * The .xlsx twin of a retry CSV (`x.retry.csv` -> `x.retry.xlsx`), made
 * from the CSV as written, so both hold the same rows and references. One
 * sheet, no other: dropped back into the inbox it is a batch like the CSV.
 */
export function writeRetryXlsx(csvPath: string, rows: number, opts: XlsxOptions = {}): Promise<string> {
  // Its header is RETRY_COLUMNS.
  return writeCsvTwin(csvPath, rows, { sheet: 'Retry', columns: () => RETRY_XLSX_COLUMNS }, opts);
}

/** `<outboxName>.retry.csv` in the outbox, for a batch whose rows are final. */
export function writeRetryFile(dir: string, identity: BatchIdentity, source: RetrySource, opts: RetryOptions = {}): Promise<RetryFile> {
  return writeRetryFileAt(join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'retry')), source, opts);
}

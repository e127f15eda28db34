/** The outbox writers: acknowledgement, result + summary, interim report; rows checked on the way, files committed atomically. */
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AckTotalsAccumulator, ackTotalsRecords, batchVerdict, type AckCurrencyTotal } from './ack-totals.js';
import { writeFileAtomic, writeWorkFile } from './atomic.js';
import { csvChunks, csvChunksOf, csvChunksOfPages, csvHead, csvRecordChunks, type CsvChunkOptions } from './csv.js';
import { ReportError } from './errors.js';
import {
  outboxFileName,
  ACK_COLUMNS,
  ackRecord,
  fileCancelRecord,
  fileHoldRecord,
  fileNoteRecord,
  fileRejectionRecord,
  resultColumns,
  resultFileName,
  resultRecord,
  summaryColumns,
  summaryRecords,
  type ApprovalAudit,
} from './format.js';
import { SummaryAccumulator } from './summary.js';
import { DEFAULT_OUTBOX_BOM } from './types.js';
import type { AckRow, AckWriteOptions, BatchIdentity, BatchSummary, OutboxOptions, RowOutcome } from './types.js';

export type Rows<T> = AsyncIterable<T> | Iterable<T>;

/** Rows as a reader pages them (the store reads thousands at a time): handed over without an await per row. */
export interface RowPages<T> {
  pages: AsyncIterable<readonly T[]>;
}

export interface ResultFiles {
  resultPath: string;
  summaryPath: string;
  summary: BatchSummary;
}

export interface InterimReport {
  path: string;
  summary: BatchSummary;
}

/** Rows must arrive ordered by line (a stream cannot be sorted without holding it), so disorder is an error. */
class LineOrder {
  private last = 0;

  check(line: number): void {
    if (!Number.isSafeInteger(line) || line <= this.last) {
      throw new ReportError('REPORT_ROW_ORDER', `rows must come in increasing line order: line ${line} after line ${this.last}`);
    }
    this.last = line;
  }
}

/** The ack's record of each row, its rows checked to come in line order. */
export function ackRecordsInOrder(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>): (row: AckRow) => string[] {
  const order = new LineOrder();
  return (row) => {
    order.check(row.line);
    return ackRecord(identity, row);
  };
}

export interface ResultPass {
  requireTerminal: boolean;
  summary: SummaryAccumulator;
  /** The audit ending every record, as resultColumns(approval) says; null for none. */
  approval: string | null;
  /** A corrected result file: each record ends with the row's correction, as resultColumns(approval, true) says. */
  corrected?: boolean;
}

/**
 * The record of each outcome in turn, checked (line order, terminal if required) and summed on the way:
 * the result CSV and its .xlsx both take their rows from here.
 */
export function resultRecords(pass: ResultPass): (o: RowOutcome) => string[] {
  const order = new LineOrder();
  const audit = pass.approval;
  return (o) => {
    order.check(o.line);
    if (pass.requireTerminal && o.status === 'PENDING') {
      throw new ReportError('REPORT_NOT_TERMINAL', `line ${o.line} is still PENDING; a result file needs every row terminal`);
    }
    const record = resultRecord(o);
    pass.summary.add(o);
    if (audit !== null) record.push(audit);
    if (pass.corrected === true) record.push(o.correction ?? '');
    return record;
  };
}

/**
 * An ack's row records written ahead to a hidden file beside it: an ack's totals come first, and are known only
 * once every row has been read, so its rows are read once, written here, and copied in after the totals.
 */
export interface AckRowsAhead {
  readonly path: string;
  /** Removes the file (after the ack is written, or when it will not be). */
  discard(): Promise<void>;
}

/** An ack's rows: given, or their records written ahead (their totals then come in the options). */
export type AckRowSource = Rows<AckRow> | RowPages<AckRow> | { ahead: AckRowsAhead };

export async function writeAckRowsAhead(
  dir: string,
  identity: BatchIdentity,
  rows: RowPages<AckRow>,
  opts: { signal?: AbortSignal } = {},
): Promise<AckRowsAhead> {
  const record = ackRecordsInOrder(identity);
  const path = await writeWorkFile(ackPath(dir, identity), csvRecordChunks(rows.pages, record), { signal: opts.signal });
  return { path, discard: () => rm(path, { force: true }) };
}

function ackPath(dir: string, identity: BatchIdentity): string {
  return join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'ack'));
}

/**
 * `<fileName>.ack.csv`: one verdict per row; with `fileRejection`, a first row saying why the whole file was
 * refused, with `fileHold`, one saying why the batch is held. Rows written ahead need their totals in `opts`.
 */
export async function writeAckFile(dir: string, identity: BatchIdentity, rows: AckRowSource, opts: AckWriteOptions = {}): Promise<string> {
  const path = ackPath(dir, identity);
  const bom = opts.bom ?? DEFAULT_OUTBOX_BOM;
  if ('ahead' in rows) {
    if (!opts.totals) throw new ReportError('REPORT_ACK_TOTALS', 'an ack whose rows were written ahead needs their totals');
    const head = csvHead(ACK_COLUMNS, { bom, lead: ackLead(identity, [], opts) });
    await writeFileAtomic(path, chunksThen(head, createReadStream(rows.ahead.path)), opts);
    return path;
  }
  const record = ackRecordsInOrder(identity);
  const csv: CsvChunkOptions = { bom, lead: ackLead(identity, rows, opts) };
  const chunks = 'pages' in rows ? csvChunksOfPages(ACK_COLUMNS, rows.pages, record, csv) : csvChunksOf(ACK_COLUMNS, rows, record, csv);
  await writeFileAtomic(path, chunks, opts);
  return path;
}

async function* chunksThen(first: string, rest: AsyncIterable<Buffer>): AsyncGenerator<string | Buffer> {
  yield first;
  yield* rest;
}

/** The totals of an ack: given, or added up from rows given as a list (null for a stream without them). */
export function ackCurrencyTotals(rows: AckRowSource, opts: AckWriteOptions): readonly AckCurrencyTotal[] | null {
  if (opts.totals) return opts.totals;
  if (!Array.isArray(rows)) return null;
  const acc = new AckTotalsAccumulator();
  for (const row of rows as readonly AckRow[])
    acc.add({ verdict: row.verdict, payoutCurrency: row.payoutCurrency ?? null, payoutAmount: row.payoutAmount ?? null, ended: row.ended });
  return acc.currencies();
}

/** What the ack says of the whole file, for its verdict: refused, cancelled, held. */
export function fileVerdicts(opts: AckWriteOptions): { rejected: boolean; cancelled: boolean; held: boolean } {
  return { rejected: opts.fileRejection !== undefined, cancelled: opts.fileCancel !== undefined, held: opts.fileHold !== undefined };
}

/**
 * The records an ack has before its rows: the totals lines (one per currency, with the batch's verdict),
 * then the file-level refusal or hold, if any, and a note of how the file was read.
 */
export function ackLead(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, rows: AckRowSource, opts: AckWriteOptions): string[][] {
  const currencies = ackCurrencyTotals(rows, opts);
  const verdict = currencies && batchVerdict(currencies, fileVerdicts(opts));
  const totals =
    currencies && verdict ? ackTotalsRecords(identity, { currencies, verdict, holdCode: opts.fileHoldCode }, opts.minorUnits) : [];
  const file =
    opts.fileRejection !== undefined
      ? [fileRejectionRecord(identity, opts.fileRejection)]
      : opts.fileCancel !== undefined
        ? [fileCancelRecord(identity, opts.fileCancel)]
        : opts.fileHold !== undefined
          ? [fileHoldRecord(identity, opts.fileHold)]
          : [];
  const note = opts.fileNote !== undefined ? [fileNoteRecord(identity, opts.fileNote)] : [];
  return [...totals, ...file, ...note];
}

/** A file-level rejection (bad header, control totals, duplicate file): an ack with no rows, only the reason. */
export async function writeRejectionAckFile(
  dir: string,
  identity: BatchIdentity,
  reason: string,
  opts: Omit<AckWriteOptions, 'fileRejection' | 'fileHold' | 'totals'> = {},
): Promise<string> {
  return writeAckFile(dir, identity, [], { ...opts, fileRejection: reason });
}

/** `<fileName>.result.csv` then `<fileName>.summary.csv`, in one pass; a non-terminal row aborts before the result exists. */
export async function writeResultFiles(
  dir: string,
  identity: BatchIdentity,
  outcomes: Rows<RowOutcome>,
  opts: ResultWriteOptions = {},
): Promise<ResultFiles> {
  const resultPath = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'result'));
  const summaryPath = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'summary'));
  const bom = opts.bom ?? DEFAULT_OUTBOX_BOM;
  const acc = new SummaryAccumulator();
  // A batch that went through approval carries its audit in a last column of both files; others stay as they were.
  const audit = opts.approval ?? null;
  const records = resultRecords({ requireTerminal: true, summary: acc, approval: audit });
  await writeFileAtomic(resultPath, csvChunksOf(resultColumns(audit), outcomes, records, { bom }), opts);
  const summary = acc.summary();
  await writeFileAtomic(summaryPath, csvChunks(summaryColumns(audit), summaryRecords(summary, audit), { bom }), opts);
  return { resultPath, summaryPath, summary };
}

/**
 * `<fileName>.result.corrected-<n>.csv`: the result file of a finished batch written again because a row's note
 * changed, each row ending with what changed in it (`correction`). No summary: a note changes no status or amount.
 */
export async function writeCorrectedResultFile(
  dir: string,
  identity: BatchIdentity,
  correction: number,
  outcomes: Rows<RowOutcome>,
  opts: ResultWriteOptions = {},
): Promise<InterimReport> {
  const path = join(dir, resultFileName(identity.outboxName ?? identity.fileName, correction));
  const acc = new SummaryAccumulator();
  const audit = opts.approval ?? null;
  const records = resultRecords({ requireTerminal: true, summary: acc, approval: audit, corrected: true });
  await writeFileAtomic(path, csvChunksOf(resultColumns(audit, true), outcomes, records, { bom: opts.bom ?? DEFAULT_OUTBOX_BOM }), opts);
  return { path, summary: acc.summary() };
}

/** With `approval`: an `approval` column of the result and summary files holding the batch's audit. */
export interface ResultWriteOptions extends OutboxOptions, ApprovalAudit {}

/** The result format for a batch still in progress (PENDING rows allowed), at a path the caller chooses. */
export async function writeInterimReport(path: string, outcomes: Rows<RowOutcome>, opts: OutboxOptions = {}): Promise<InterimReport> {
  const acc = new SummaryAccumulator();
  const records = resultRecords({ requireTerminal: false, summary: acc, approval: null });
  await writeFileAtomic(path, csvChunksOf(resultColumns(), outcomes, records, { bom: opts.bom ?? DEFAULT_OUTBOX_BOM }), opts);
  return { path, summary: acc.summary() };
}

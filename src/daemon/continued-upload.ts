/**
 * The outbox's answer to an upload that went on after its file was taken: `<name>.remainder.csv` (the complete
 * rows never read) and `<name>.upload-continued.csv`, each with its .xlsx twin, and a one-line gist the batch
 * record keeps for status.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { waitsForOperator } from '../domain/holds.js';
import { batchFileKind, continuationOf, headerRecord, restRecords, sniffFileDelimiter, type RestTally } from '../ingest/csv/index.js';
import {
  outboxFileName,
  SummaryAccumulator,
  reasonText,
  writeRemainderFile,
  writeRemainderXlsx,
  writeUploadContinuedFile,
  writeUploadContinuedXlsx,
  xlsxPathFor,
  notSentStatus,
  type NotSentStatus,
  type RowOutcomeStatus,
  type XlsxOptions,
  type ReadOutcome,
  type RemainderFile,
  type UploadContinuedNotice,
} from '../report/index.js';
import { type BatchRecord, type Database, resultRowPages } from '../store/index.js';
import { identityOf, outboxName, rowOutcome } from './outbox.js';

export interface ContinuedUploadContext {
  db: Database;
  dir: string;
  bom: boolean;
  /** config batch.format.maxRecordBytes: the largest record read from the file. */
  maxRecordBytes: number;
  /** config batch.format.encoding: what a file is read as when its batch does not say (`auto` chose nothing). */
  encoding: string;
}

/** An .xlsx twin, written when `outbox.xlsx` is on with the outbox's options (BatchOutbox.writeTwin). */
export type TwinWriter = (kind: string, write: (opts: XlsxOptions) => Promise<unknown>) => Promise<void>;

/** The encoding the batch's file was read in (WHATWG name): the one `auto` chose, else the one configured. */
function fileEncoding(batch: BatchRecord, configured: string): string {
  return new TextDecoder(batch.encoding ?? (configured === 'auto' ? 'utf-8' : configured)).encoding;
}

export interface ContinuedUploadFiles {
  noticePath: string;
  remainderPath: string | null;
  /** What was found, in one line (status, log). */
  note: string;
}

/** The notice and remainder of a batch whose taken file is now `sizeNow` bytes, stable. */
export async function writeUploadContinued(
  ctx: ContinuedUploadContext,
  batch: BatchRecord,
  sizeNow: number,
  twin: TwinWriter = async () => undefined,
): Promise<ContinuedUploadFiles> {
  const path = batch.storedPath;
  const delimiter = batch.delimiter ?? (await sniffFileDelimiter(path, ctx.maxRecordBytes));
  const read = { delimiter, maxRecordBytes: ctx.maxRecordBytes };
  // A batch refused whole paid nothing of the file: every complete row of it is still to be paid.
  const wholeFile = batch.state === 'REJECTED';
  // A workbook or a gzip file has no rows to cut at a byte: any change to it is a new file, with no remainder.
  const continuation =
    batchFileKind(batch.fileName) === 'text'
      ? await continuationOf(path, batch, sizeNow, { ...read, wholeFile })
      : { rewritten: true, cutLine: null, restFrom: sizeNow, restLine: 0 };
  const identity = identityOf(batch);
  const remainderName = outboxFileName(outboxName(batch), 'remainder');
  const encoding = fileEncoding(batch, ctx.encoding);
  let rest: UploadContinuedNotice['rest'] = null;
  let remainder: RemainderFile | null = null;
  if (!continuation.rewritten) {
    const tally: RestTally = { controlLines: 0, partial: null };
    const header = await headerRecord(path, sizeNow, read);
    if (header !== null) {
      // The remainder is the sender's own bytes: a UTF-8 byte order mark before Windows-1252 bytes would have
      // it read as UTF-8 when dropped back, and refused.
      const written = await writeRemainderFile(ctx.dir, identity, header, restRecords(path, continuation, sizeNow, read, tally), {
        delimiter,
        bom: ctx.bom && encoding === 'utf-8',
      });
      if (written !== null)
        await twin('remainder', (opts) => writeRemainderXlsx(written.path, written.rows, { delimiter, encoding }, opts));
      remainder = written;
    }
    rest = { fromByte: continuation.restFrom, wholeFile, file: remainder, fileName: remainderName, ...tally };
  }
  // A remainder written for what the file was before is no remainder of what it is now.
  if (remainder === null) for (const name of [remainderName, xlsxPathFor(remainderName)]) await rm(join(ctx.dir, name), { force: true });
  const notice: UploadContinuedNotice = {
    takenBytes: batch.size,
    sizeNow,
    takenAt: new Date(batch.receivedAt).toISOString(),
    batchState: batch.state,
    batchNote: batchNote(batch),
    read: await readPart(ctx.db, batch),
    rewritten: continuation.rewritten,
    cutLine: continuation.cutLine,
    rest,
  };
  const noticeFile = await writeUploadContinuedFile(ctx.dir, identity, notice, { bom: ctx.bom });
  await twin('upload-continued', (opts) => writeUploadContinuedXlsx(noticeFile.path, noticeFile.rows, opts));
  return {
    noticePath: noticeFile.path,
    remainderPath: remainder?.path ?? null,
    note: noteOf(notice, outboxFileName(outboxName(batch), 'upload-continued')),
  };
}

/** What the batch is, and so what became of the rows read. */
function batchNote(b: BatchRecord): string {
  switch (b.state) {
    case 'COMPLETE':
      return `This batch is the rows read; each row's outcome is in ${outboxFileName(outboxName(b), 'result')}.`;
    case 'REJECTED':
      return `This batch was refused whole (${reasonText(b.rejectCode, b.rejectReason) ?? 'refused'}): nothing of the file was paid.`;
    case 'DUPLICATE':
      return `Its first ${b.size} bytes were already batch ${b.duplicateOf ?? '?'}: this batch paid nothing; what that batch paid is in its result file.`;
    default:
      return waitsForOperator(b.holdCode)
        ? `This batch is the rows read and is held (${reasonText(b.holdCode, b.holdReason) ?? ''}); its result file follows once an operator decides.`
        : 'This batch is the rows read, being paid; its result file follows once every row is final.';
  }
}

/** A summary's payout lines as the notice's READ lines, `status` given for all of them when they are rows not sent. */
function readOutcomes(summary: SummaryAccumulator, status?: NotSentStatus): ReadOutcome[] {
  return summary
    .rows()
    .filter((r) => r.measure === 'payout_amount' && r.status !== 'ALL')
    .map((r) => ({ status: status ?? (r.status as RowOutcomeStatus), currency: r.currency, rows: r.rowCount, amount: r.amount }));
}

/**
 * The rows stored from the part read: their lines, and per status and currency their count and payout total. Rows
 * never sent (READY) are counted apart, as held or not sent: PENDING would say the service holds their payouts.
 * Those of a cancelled batch are never sent: counted NOT_SUBMITTED with the rows its cancel already stopped.
 */
async function readPart(db: Database, batch: BatchRecord): Promise<UploadContinuedNotice['read']> {
  const summary = new SummaryAccumulator();
  const notSent = new SummaryAccumulator();
  const ready = notSentStatus({ held: batch.holdCode != null, cancelled: batch.cancelledAt != null });
  let firstLine = Infinity;
  let lastLine = 0;
  let rows = 0;
  for await (const page of resultRowPages(db, batch.id)) {
    for (const row of page) {
      if (row.state !== 'READY') summary.add(rowOutcome(row));
      else if (ready === 'NOT_SUBMITTED') summary.add({ ...rowOutcome(row), status: 'NOT_SUBMITTED' });
      else notSent.add(rowOutcome(row));
      firstLine = Math.min(firstLine, row.line);
      lastLine = Math.max(lastLine, row.line);
      rows++;
    }
  }
  if (rows === 0) return null;
  const sent = readOutcomes(summary);
  // After the rows sent and still open (PENDING), before those not paid.
  const at = sent.filter((o) => o.status === 'PAID' || o.status === 'CANCELLED' || o.status === 'PENDING').length;
  const outcomes = [...sent.slice(0, at), ...(ready === 'NOT_SUBMITTED' ? [] : readOutcomes(notSent, ready)), ...sent.slice(at)];
  return { firstLine, lastLine, rows, outcomes };
}

function noteOf(n: UploadContinuedNotice, noticeName: string): string {
  if (n.rewritten) {
    return `rewritten after it was taken (now ${n.sizeNow} bytes; its first ${n.takenBytes} bytes are not those read): compare it with the result file (${noticeName})`;
  }
  const cut = n.cutLine === null ? '' : `; line ${n.cutLine}, read cut at byte ${n.takenBytes}, went on after it`;
  const file = n.rest?.file;
  const rows = file
    ? `${file.rows} complete row(s) not paid, lines ${file.firstLine}-${file.lastLine}, in ${n.rest?.fileName ?? ''}`
    : 'no complete row after the part read';
  return `grew from ${n.takenBytes} to ${n.sizeNow} bytes after it was taken (nothing after byte ${n.takenBytes} was read): ${rows}${cut} (${noticeName})`;
}

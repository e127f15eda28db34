/**
 * When the upload of a taken file went on: `<name>.upload-continued.csv`, a notice of which rows were read,
 * what became of them and that nothing after byte N was read; and `<name>.remainder.csv`, the complete rows
 * that came later in the input format, ready to drop into the inbox. A remainder line holding formula-like
 * text is written again from its cells with a leading `'` (the intake refuses it either way); other lines
 * keep their bytes.
 */
import { join } from 'node:path';
import { stringify } from 'csv-stringify/sync';
import { escapeFormulaLike, formulaTrigger } from '../domain/formula-text.js';
import { writeFileAtomic } from './atomic.js';
import { csvChunks, UTF8_BOM } from './csv.js';
import { outboxFileName } from './format.js';
import type { BatchIdentity, OutboxOptions, RowOutcomeStatus } from './types.js';
import { writeCsvTwin, xlsxColumns, type XlsxColumn, type XlsxOptions } from './xlsx.js';

/** A line of the input as read: its bytes (line break included) and its values. */
export interface InputLine {
  line: number;
  bytes: Uint8Array;
  fields: readonly string[];
  /** Its end in the input file (byte offset just after it). */
  end: number;
}

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;

function formulaLike(cell: string): boolean {
  return formulaTrigger(cell) !== null && !PLAIN_NUMBER.test(cell);
}

const CRLF = '\r\n';
const UTF8_BOM_BYTES = Buffer.from(UTF8_BOM, 'utf8');

/** The line as the remainder writes it: its own bytes, or its cells again with formula-like ones escaped. */
export function remainderLine(input: InputLine, delimiter: string): { bytes: Uint8Array; escaped: boolean } {
  if (!input.fields.some(formulaLike)) return { bytes: input.bytes, escaped: false };
  const text = Buffer.from(input.bytes).toString('utf8');
  const lineBreak = text.endsWith(CRLF) ? CRLF : text.endsWith('\r') ? '\r' : '\n';
  const cells = input.fields.map((cell) => (formulaLike(cell) ? escapeFormulaLike(cell) : cell));
  const written = stringify([cells], { delimiter, record_delimiter: lineBreak, quoted_match: /[\r\n]/ });
  return { bytes: Buffer.from(written, 'utf8'), escaped: true };
}

export interface RemainderFile {
  path: string;
  rows: number;
  /** Rows written again with formula-like cells escaped. */
  escapedRows: number;
  firstLine: number;
  lastLine: number;
  /** Where the last row ends in the input file (byte offset just after it). */
  toByte: number;
}

/** `<name>.remainder.csv`: the header line, then the lines, streamed; null and nothing written without a line. */
export async function writeRemainderFile(
  dir: string,
  identity: Pick<BatchIdentity, 'fileName' | 'outboxName'>,
  header: InputLine,
  lines: AsyncIterable<InputLine>,
  opts: OutboxOptions & { delimiter: string },
): Promise<RemainderFile | null> {
  const path = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'remainder'));
  const iterator = lines[Symbol.asyncIterator]();
  const first = await iterator.next();
  if (first.done === true) return null;
  const file: RemainderFile = {
    path,
    rows: 0,
    escapedRows: 0,
    firstLine: first.value.line,
    lastLine: first.value.line,
    toByte: first.value.end,
  };
  const delimiter = opts.delimiter;
  const bom = opts.bom === true && !Buffer.from(header.bytes).subarray(0, UTF8_BOM_BYTES.length).equals(UTF8_BOM_BYTES);
  async function* chunks(): AsyncGenerator<Uint8Array> {
    if (bom) yield UTF8_BOM_BYTES;
    yield remainderLine(header, delimiter).bytes;
    for (let next = first; next.done !== true; next = await iterator.next()) {
      const line = remainderLine(next.value, delimiter);
      file.rows += 1;
      if (line.escaped) file.escapedRows += 1;
      file.lastLine = next.value.line;
      file.toByte = next.value.end;
      yield line.bytes;
    }
  }
  await writeFileAtomic(path, chunks(), opts);
  return file;
}

/**
 * What the notice calls rows never sent (READY): HELD with their batch, or NOT_SENT yet while it is paid. Never
 * PENDING, which says the payout service holds a payout for the row.
 */
export type NotSentStatus = 'HELD' | 'NOT_SENT';

/** The words of a READ line of rows never sent. */
const NOT_SENT_NOTES: Readonly<Record<NotSentStatus, string>> = {
  HELD: 'not sent: held with the batch (see TAKEN); not paid unless its hold is lifted, none if it is cancelled',
  NOT_SENT: 'not sent yet: waiting their turn to be sent',
};

/**
 * The status of a READY row in the notice: of a batch an operator cancelled it is never sent (NOT_SUBMITTED, as
 * its result file will say), whether a hold was on it or not; else its batch's hold keeps it back, or it waits its turn.
 */
export function notSentStatus(batch: { held: boolean; cancelled: boolean }): NotSentStatus | 'NOT_SUBMITTED' {
  if (batch.cancelled) return 'NOT_SUBMITTED';
  return batch.held ? 'HELD' : 'NOT_SENT';
}

/** The outcome of the rows read, per status and payout currency. */
export interface ReadOutcome {
  status: RowOutcomeStatus | NotSentStatus;
  currency: string;
  rows: number;
  /** Exact sum of their payout amounts (null when none could be summed). */
  amount: string | null;
}

/** Everything the notice says. Byte offsets count from 0; `takenBytes` is N. */
export interface UploadContinuedNotice {
  takenBytes: number;
  sizeNow: number;
  /** ISO 8601 UTC. */
  takenAt: string;
  /** What the batch is and what that means for the rows read, in words (the batch's state, hold or refusal). */
  batchState: string;
  batchNote: string;
  /** The rows read (null: none was stored, the file was refused whole or was a duplicate). */
  read: { firstLine: number; lastLine: number; rows: number; outcomes: ReadOutcome[] } | null;
  /** The first N bytes are no longer those read: no remainder. */
  rewritten: boolean;
  /** The line read last went on after byte N. */
  cutLine: number | null;
  /** The complete rows not read (null when rewritten). */
  rest: {
    fromByte: number;
    /** Every complete row of the file (nothing of it was paid), not only those after byte N. */
    wholeFile: boolean;
    /** Null: no complete row arrived. */
    file: RemainderFile | null;
    /** The remainder file's name, for the words. */
    fileName: string;
    controlLines: number;
    partial: { line: number; fromByte: number; toByte: number } | null;
  } | null;
}

export const UPLOAD_CONTINUED_COLUMNS = [
  'batch_id',
  'file',
  'part',
  'first_line',
  'last_line',
  'rows',
  'from_byte',
  'to_byte',
  'status',
  'currency',
  'amount',
  'note',
] as const;

const cell = (n: number | null | undefined): string => (n === null || n === undefined ? '' : String(n));

/** The notice's records, in order: the part taken, what became of its rows, then what came after it (pure). */
export function uploadContinuedRecords(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, n: UploadContinuedNotice): string[][] {
  const id = [identity.batchId, identity.fileName];
  const record = (
    part: string,
    lines: [number | null, number | null],
    rows: number | null,
    bytes: [number | null, number | null],
    status: string,
    currency: string,
    amount: string | null,
    note: string,
  ): string[] => [
    ...id,
    part,
    cell(lines[0]),
    cell(lines[1]),
    cell(rows),
    cell(bytes[0]),
    cell(bytes[1]),
    status,
    currency,
    amount ?? '',
    note,
  ];
  const out: string[][] = [];
  const read = n.read;
  out.push(
    record(
      'TAKEN',
      [read?.firstLine ?? null, read?.lastLine ?? null],
      read?.rows ?? 0,
      [0, n.takenBytes],
      n.batchState,
      '',
      null,
      `the file was taken at ${n.takenAt} with ${n.takenBytes} bytes and nothing after byte ${n.takenBytes} was read; it is now ${n.sizeNow} bytes. ${n.batchNote}`,
    ),
  );
  for (const o of read?.outcomes ?? []) {
    const note = o.status === 'HELD' || o.status === 'NOT_SENT' ? NOT_SENT_NOTES[o.status] : '';
    out.push(record('READ', [null, null], o.rows, [null, null], o.status, o.currency, o.amount, note));
  }
  if (n.cutLine !== null && !n.rewritten) {
    out.push(
      record(
        'CUT_LINE',
        [n.cutLine, n.cutLine],
        null,
        [null, n.takenBytes],
        '',
        '',
        null,
        `line ${n.cutLine} did not end at byte ${n.takenBytes}: it was read cut there, and what was read of it is what this batch holds; compare that row in the result file with the file. The rest of the line is not in the remainder`,
      ),
    );
  }
  if (n.rewritten) {
    out.push(
      record(
        'REWRITTEN',
        [null, null],
        null,
        [0, n.takenBytes],
        '',
        '',
        null,
        `the file was rewritten after it was taken, not only added to: its first ${n.takenBytes} bytes are no longer those read. No remainder is written: compare the file with this batch's result file, and drop what is missing as a new file`,
      ),
    );
  }
  const rest = n.rest;
  if (rest !== null) {
    const file = rest.file;
    const which = rest.wholeFile
      ? 'every complete row of the file as it is now (nothing of it was paid)'
      : `the complete rows after byte ${rest.fromByte}`;
    const note =
      file === null
        ? `no complete row after byte ${rest.fromByte}: no remainder file`
        : `${which}: NOT paid; they are in ${rest.fileName}, the input format with their own references, ready to drop into the inbox (the intake checks them then)${file.escapedRows > 0 ? `; ${file.escapedRows} of them hold text a spreadsheet would run as a formula, written with a leading ' (the intake refuses such a row, as it would the row as written)` : ''}`;
    out.push(
      record(
        'NOT_READ',
        [file?.firstLine ?? null, file?.lastLine ?? null],
        file?.rows ?? 0,
        [rest.fromByte, file?.toByte ?? null],
        'NOT_PAID',
        '',
        null,
        note,
      ),
    );
    if (rest.controlLines > 0) {
      out.push(
        record(
          'CONTROL_LINES',
          [null, null],
          rest.controlLines,
          [null, null],
          '',
          '',
          null,
          `${rest.controlLines} #CONTROL line(s) left out of the remainder: they count the whole file, not the remainder`,
        ),
      );
    }
    const partial = rest.partial;
    if (partial !== null) {
      out.push(
        record(
          'PARTIAL_LINE',
          [partial.line, null],
          null,
          [partial.fromByte, partial.toByte],
          'NOT_PAID',
          '',
          null,
          'an incomplete last line (no line break yet, or an unclosed quote): not in the remainder; if the upload goes on, this notice and the remainder are written again',
        ),
      );
    }
  }
  return out;
}

/** `<name>.upload-continued.csv` (spreadsheet-safe like every notice of the outbox), and how many records it holds. */
export async function writeUploadContinuedFile(
  dir: string,
  identity: Pick<BatchIdentity, 'batchId' | 'fileName' | 'outboxName'>,
  notice: UploadContinuedNotice,
  opts: OutboxOptions & { bom: boolean },
): Promise<{ path: string; rows: number }> {
  const path = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'upload-continued'));
  const records = uploadContinuedRecords(identity, notice);
  await writeFileAtomic(path, csvChunks(UPLOAD_CONTINUED_COLUMNS, records, { bom: opts.bom }), opts);
  return { path, rows: records.length };
}

/** The .xlsx twin of an upload-continued notice (`x.upload-continued.csv` -> `.xlsx`), from the CSV as written. */
export function writeUploadContinuedXlsx(csvPath: string, rows: number, opts: XlsxOptions = {}): Promise<string> {
  // Its header is UPLOAD_CONTINUED_COLUMNS.
  return writeCsvTwin(csvPath, rows, { sheet: 'Upload continued', columns: () => xlsxColumns(UPLOAD_CONTINUED_COLUMNS) }, opts);
}

/**
 * The .xlsx twin of a remainder (`x.remainder.csv` -> `.xlsx`), read back from the CSV as written in the
 * file's own delimiter and encoding: the same header and rows, every cell text, so an account keeps its
 * leading zeros through a spreadsheet. Dropped back it is a batch like the CSV.
 */
export function writeRemainderXlsx(
  csvPath: string,
  rows: number,
  read: { delimiter: string; encoding: string },
  opts: XlsxOptions = {},
): Promise<string> {
  const columns = (header: readonly string[]): XlsxColumn[] => header.map((name) => ({ header: name, type: 'text', width: 12 }));
  return writeCsvTwin(csvPath, rows, { sheet: 'Remainder', columns, read }, opts);
}

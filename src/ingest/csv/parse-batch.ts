/**
 * Streams one CSV batch file through UTF-8 check, csv-parse and row
 * validation, handing rows to the caller in chunks. The caller's `onRows` is
 * awaited before more is read (pipeline backpressure), so a file of a
 * million rows never sits in memory.
 *
 * A file is read as parts (byte ranges cut after a line break, each read on
 * its own by `readBatchPart`, the one after the first given the file's
 * header and the number of line breaks before it) whose summaries
 * `finishBatchParse` adds up and checks against the control totals.
 * `parseBatchFile` reads the whole file as one part; src/ingest/read reads
 * large files as two, on worker threads.
 *
 * Contract with the caller: rows handed to `onRows` are provisional. Some
 * file errors (control totals, a row cap, bad bytes late in the file) are
 * only known after earlier chunks went out; when the result has any
 * `fileErrors`, the whole file is rejected and every row handed over must
 * be discarded (stage them in a transaction or a batch marked pending).
 */
import { createReadStream } from 'node:fs';
import type { TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, Parser, type Options as CsvOptions } from 'csv-parse';
import { PayoutdError } from '../../domain/errors.js';
import { Decimal, decimalText, isPlainDecimal } from '../../domain/money.js';
import type { PayoutRequest } from '../../domain/payout.js';
import { REQUEST_VALUE_INDEX, requestOfValues } from '../../domain/request-values.js';
import { FIELD_PATHS } from '../rules/fields.js';
import { compileRules, type CompiledRules } from '../rules/compiled.js';
import type { ValidationRules } from '../rules/options.js';
import { fileErrorOf, type RowError } from '../rules/row-error.js';
import { trimSpaces, upperCased } from '../rules/text.js';
import { validateCells, type RowCells } from '../rules/validate-row.js';
import { compareControls, ControlBlock, isControlRecord, readSidecar, type ControlTotals, type FoundTotals } from './control.js';
import { sniffFileDelimiter, type Delimiter } from './delimiter.js';
import { resolveHeader, type ResolvedHeader } from './header.js';
import { LineTracker } from './lines.js';
import { ExactTotal } from '../../domain/exact-total.js';
import type { BatchFormatOptions } from './options.js';
import { InvalidUtf8Error, Utf8Guard } from './utf8.js';

/** The batch file could not be read at all (missing, unreadable): not a problem of its content. */
export class BatchReadError extends PayoutdError {
  override readonly name = 'BatchReadError';
}

export interface ParsedBatchRow {
  /** Physical line where the record starts (1-based; the header is usually line 1). */
  readonly line: number;
  /** 1-based position among the file's data rows. */
  readonly rowNumber: number;
  /** The reference as written (trimmed); best effort when the row is invalid, '' if absent. */
  readonly merchantReferenceId: string;
  /** The normalized request when the row is valid (made when asked for, from requestValues). */
  readonly request: PayoutRequest | null;
  /** The same request's values in FIELD_PATHS order (what the store keeps), when the row is valid. */
  readonly requestValues: readonly string[] | null;
  /** Every problem of this row (never capped). */
  readonly errors: RowError[];
  /** Money cells as written (trimmed), valid or not, for result files that match the sender's file. */
  readonly written: WrittenMoney;
}

/**
 * A row as read. Its nested request is made only when asked for: the intake
 * stores the values and never asks, and three objects a row would be made
 * for nothing a million times a file.
 */
class ParsedRow implements ParsedBatchRow {
  constructor(
    readonly line: number,
    readonly rowNumber: number,
    readonly merchantReferenceId: string,
    readonly requestValues: readonly string[] | null,
    readonly errors: RowError[],
    readonly written: WrittenMoney,
  ) {}

  get request(): PayoutRequest | null {
    return this.requestValues === null ? null : requestOfValues(this.requestValues);
  }
}

export interface WrittenMoney {
  payoutCurrency: string;
  payoutAmount: string;
  deductionCurrency: string;
}

const PAYOUT_CURRENCY = REQUEST_VALUE_INDEX.payoutCurrency;
const PAYOUT_AMOUNT = REQUEST_VALUE_INDEX.payoutAmount;
const DEDUCTION_CURRENCY = REQUEST_VALUE_INDEX.deductionCurrency;

const NOTHING_WRITTEN: WrittenMoney = { payoutCurrency: '', payoutAmount: '', deductionCurrency: '' };
/** The errors of every valid row: one shared empty list instead of one per row (frozen: nobody adds to it). */
const NO_ERRORS = Object.freeze([]) as unknown as RowError[];

export interface BatchParseResult {
  /** Display name the errors carry. */
  file: string;
  delimiter: Delimiter;
  /** Problems that reject the whole file; non-empty = discard every row handed to onRows. */
  fileErrors: RowError[];
  /** Data rows read (blank lines, the header and control lines excluded). */
  rowCount: number;
  validCount: number;
  invalidCount: number;
  /** Row errors found, including those not kept in storedErrors. */
  errorCount: number;
  /** The first `maxStoredErrors` row errors. */
  storedErrors: RowError[];
  /** Control blocks found (trailer and/or sidecar), as declared. */
  controlTotals: ControlTotals[];
  /** Sum of payoutAmount per payoutCurrency over all data rows, valid or not, whose currency and amount can be read. */
  totals: Record<string, string>;
  /** Data rows left out of `totals` (unreadable currency or amount, or a wrong field count). */
  unsummedRows: number;
}

export interface ParseBatchOptions {
  format: BatchFormatOptions;
  /** Validated rules (validationRulesSchema output) or already compiled ones. */
  rules: ValidationRules | CompiledRules;
  /** Rows per onRows call; default 500. */
  chunkSize?: number;
  /** Sidecar control file; default `<path>.ctl`; null = do not look for one. */
  sidecarPath?: string | null;
  /** Bytes per file read; default READ_CHUNK_BYTES. Tiny values exist for tests of chunk boundaries. */
  readChunkBytes?: number;
  /** Aborts reading (daemon shutdown); the promise then rejects with the abort error. */
  signal?: AbortSignal;
  onRows: (rows: ParsedBatchRow[]) => Promise<void>;
}

/** A byte range of a batch file, read on its own by readBatchPart. */
export interface BatchFilePart {
  /** First byte; a part at 0 holds the file's BOM and header and reads them itself. */
  start: number;
  /** The byte after the part's last; null: the end of the file. A part ends right after a line break. */
  end: number | null;
  /** Line breaks before `start`: the part's lines are numbered on from there. */
  lineOffset: number;
  /** The file's header as read from its start, for a part that does not hold it (start > 0). */
  header: { header: ResolvedHeader; line: number } | null;
}

/**
 * Bytes per file read, and per piece given to the parser at a time. The parser makes a piece's records at
 * once, and a batch of a hundred or more lets V8 judge them long-lived for the rest of the file (see
 * PARSED_ROWS_AT_A_TIME in src/ingest/read/rows.ts), so pieces stay small; a read costs a trip to libuv's
 * thread pool and back through the stream, so reads are larger (a reader took 4% less CPU than with
 * reads of one piece).
 */
const READ_CHUNK_BYTES = 64 * 1024;
const PARSE_PIECE_BYTES = 8 * 1024;

export const WHOLE_FILE: BatchFilePart = { start: 0, end: null, lineOffset: 0, header: null };

/** How to read a part (a file's delimiter is decided once, before its parts are read). */
export interface PartReadOptions {
  format: BatchFormatOptions;
  rules: CompiledRules;
  delimiter: Delimiter;
  chunkSize: number;
  readChunkBytes?: number;
  signal?: AbortSignal;
  /** Stop once the header is read (to hand it to the parts after the first). */
  headerOnly?: boolean;
  onRows: (rows: ParsedBatchRow[]) => Promise<void>;
}

/**
 * What reading one part found: whatever of a BatchParseResult adds up over
 * parts (those fields mean the same, for the part's rows alone), and what
 * finishing the file needs of it. Plain data, so a part read on a worker
 * thread sends it back whole.
 */
export interface PartSummary extends Pick<
  BatchParseResult,
  'fileErrors' | 'rowCount' | 'validCount' | 'invalidCount' | 'errorCount' | 'storedErrors' | 'totals' | 'unsummedRows'
> {
  /** Read here (the part at 0), or as given. */
  header: ResolvedHeader | null;
  headerLine: number | null;
  /** Control lines were seen in this part. */
  controlLines: boolean;
  /** The control trailer as of the part's end (the file's when this is its last part). */
  trailer: { controls: ControlTotals | null; error: RowError | null };
  /** Line of the last record read (null: none). */
  lastLine: number | null;
  /** Reading stopped at a file error before the part's end. */
  stopped: boolean;
}

/** Thrown inside the pipeline to stop reading after a file error was recorded. */
class StopParsing extends Error {}

/** Thrown inside the pipeline once the header is read, when only the header is wanted. */
class HeaderRead extends Error {}

interface LinedRecord {
  fields: string[];
  line: number;
}

/**
 * csv-parse's Parser, each record taken by `takeRecord` with the physical line it starts on. csv-parse pushes
 * a record the moment it completes, while `info.bytes` is that record's end, so the line is taken there,
 * in byte order. (Its `on_record` hook gives the same position, but builds a context object of every
 * statistic per record: 12% of reading a batch.)
 *
 * The records of each piece of the file parsed are taken once the piece is parsed, and the parser is
 * given the next piece only when `takeRecord` is done with them (its promises awaited): the back-pressure an
 * object stream after the parser gave, without that stream's work for every record (its buffer, its
 * events, a callback and a tick a record: about a twentieth of reading a row).
 */
class LinedParser extends Parser {
  private records: LinedRecord[] = [];

  constructor(
    options: CsvOptions,
    private readonly lineOf: (recordEnd: number) => number,
    private readonly takeRecord: (rec: LinedRecord) => Promise<void> | undefined,
  ) {
    super(options);
    // Nothing is pushed on but the end: let it flow, so the stream ends.
    this.resume();
  }

  override push(record: unknown): boolean {
    if (record === null) return super.push(null);
    this.records.push({ fields: record as string[], line: this.lineOf(this.info.bytes) });
    return true;
  }

  /** Parses a read PARSE_PIECE_BYTES at a time, each piece's records taken before the next is parsed. */
  override _transform(chunk: Buffer, encoding: BufferEncoding, callback: TransformCallback): void {
    let at = 0;
    const nextPiece = (err?: Error | null): void => {
      if (err || at >= chunk.length) {
        callback(err ?? null);
        return;
      }
      const piece = chunk.subarray(at, at + PARSE_PIECE_BYTES);
      at += piece.length;
      super._transform(piece, encoding, (parseError?: Error | null) => this.takeParsed(parseError ?? null, nextPiece));
    };
    nextPiece();
  }

  override _flush(callback: TransformCallback): void {
    super._flush((err?: Error | null) => this.takeParsed(err ?? null, callback));
  }

  /**
   * Takes the records parsed, then calls back with the parser's error if it had one (the records before
   * it are taken first, as a stream after the parser took them as they came); an error in `takeRecord` is the
   * error called back, and the records after it are not taken.
   */
  private takeParsed(parseError: Error | null, callback: TransformCallback): void {
    const records = this.records;
    this.records = [];
    let at = 0;
    const next = (): void => {
      try {
        while (at < records.length) {
          // A stream stopped (aborted, or failed elsewhere in the pipeline) takes nothing more.
          if (this.destroyed) return;
          const pending = this.takeRecord(records[at++] as LinedRecord);
          if (pending) {
            pending.then(next, callback);
            return;
          }
        }
      } catch (err) {
        callback(err as Error);
        return;
      }
      callback(parseError);
    };
    next();
  }
}

function isCompiled(rules: ValidationRules | CompiledRules): rules is CompiledRules {
  return typeof (rules as CompiledRules).accountRule === 'function';
}

function isBlankRecord(fields: readonly string[]): boolean {
  return fields.every((f) => trimSpaces(f) === '');
}

/** Accumulates everything learned from the records of one part. */
class BatchState {
  header: ResolvedHeader | null = null;
  headerLine: number | null = null;
  readonly fileErrors: RowError[] = [];
  readonly storedErrors: RowError[] = [];
  rowCount = 0;
  validCount = 0;
  invalidCount = 0;
  errorCount = 0;
  unsummedRows = 0;
  /** Running sums per payout currency (see totalsByCurrency). */
  readonly totals = new Map<string, ExactTotal>();
  readonly trailer: ControlBlock;
  lastLine: number | null = null;
  private notAtEndReported = false;
  /** The file's column of each field, in FIELD_PATHS order (-1: the file lacks it), built once from the header. */
  private columnOf: number[] = [];
  /**
   * The row being validated, refilled for every row: validateCells keeps nothing of it, and two objects a
   * row less is a twentieth of what reading a row makes.
   */
  private readonly input: RowCells & { cells: string[] };
  private chunk: ParsedBatchRow[] = [];

  constructor(
    readonly file: string,
    private readonly format: BatchFormatOptions,
    private readonly rules: CompiledRules,
    private readonly chunkSize: number,
    private readonly onRows: (rows: ParsedBatchRow[]) => Promise<void>,
    given: BatchFilePart['header'],
    private readonly headerOnly = false,
  ) {
    this.trailer = new ControlBlock('trailer', file);
    this.input = { file, line: 0, cells: FIELD_PATHS.map(() => ''), columns: {} };
    if (given) this.useHeader(given.header, given.line);
  }

  fileError(error: RowError): void {
    if (this.fileErrors.length < fileErrorsKept(this.format)) this.fileErrors.push(error);
  }

  fileErrorAt(line: number | null, code: RowError['code'], message: string): void {
    this.fileError(fileErrorOf(this.file, line, code, message));
  }

  /** Takes one record; returns a promise only when a chunk is handed to the caller. */
  accept(rec: LinedRecord): Promise<void> | undefined {
    this.lastLine = rec.line;
    if (this.header === null) {
      this.acceptHeader(rec);
      return undefined;
    }
    if (isBlankRecord(rec.fields)) return undefined;
    if (isControlRecord(rec.fields)) {
      const error = this.trailer.add(rec.fields, rec.line);
      if (error) this.fileError(error);
      return undefined;
    }
    if (this.trailer.seen && !this.notAtEndReported) {
      this.notAtEndReported = true;
      this.fileErrorAt(rec.line, 'CONTROL_NOT_AT_END', `data row after the ${'#CONTROL'} trailer; control lines must come last`);
    }
    if (this.rowCount >= this.format.maxRows) {
      this.fileErrorAt(rec.line, 'TOO_MANY_ROWS', `file has more than ${this.format.maxRows} data rows`);
      throw new StopParsing();
    }
    this.rowCount++;
    const row = this.buildRow(rec, this.header);
    if (row.requestValues) this.validCount++;
    else this.invalidCount++;
    for (const error of row.errors) {
      this.errorCount++;
      if (this.storedErrors.length < this.format.maxStoredErrors) this.storedErrors.push(error);
    }
    this.chunk.push(row);
    return this.chunk.length >= this.chunkSize ? this.flush() : undefined;
  }

  /** Hands the pending rows to the caller. */
  flush(): Promise<void> {
    const rows = this.chunk;
    this.chunk = [];
    return rows.length > 0 ? this.onRows(rows) : Promise.resolve();
  }

  /** What this part found, its trailer finished at its last line. */
  summary(stopped: boolean): PartSummary {
    return {
      header: this.header,
      headerLine: this.headerLine,
      fileErrors: this.fileErrors,
      rowCount: this.rowCount,
      validCount: this.validCount,
      invalidCount: this.invalidCount,
      errorCount: this.errorCount,
      storedErrors: this.storedErrors,
      totals: Object.fromEntries([...this.totals].map(([currency, total]) => [currency, decimalText(total.toDecimal())])),
      unsummedRows: this.unsummedRows,
      controlLines: this.trailer.seen,
      trailer: this.trailer.finish(this.lastLine),
      lastLine: this.lastLine,
      stopped,
    };
  }

  private acceptHeader(rec: LinedRecord): void {
    if (isBlankRecord(rec.fields)) return;
    const resolved = resolveHeader(rec.fields, {
      file: this.file,
      line: rec.line,
      aliases: this.format.columnAliases,
      required: this.rules.required,
    });
    if ('errors' in resolved) {
      this.headerLine = rec.line;
      for (const error of resolved.errors) this.fileError(error);
      throw new StopParsing();
    }
    this.useHeader(resolved.header, rec.line);
    if (this.headerOnly) throw new HeaderRead();
  }

  private useHeader(header: ResolvedHeader, line: number): void {
    this.header = header;
    this.headerLine = line;
    this.input.columns = header.columns;
    this.columnOf = FIELD_PATHS.map((field) => header.indexOf[field] ?? -1);
  }

  private buildRow(rec: LinedRecord, header: ResolvedHeader): ParsedBatchRow {
    const refIndex = header.indexOf.merchantReferenceId;
    const reference = refIndex === undefined ? '' : trimSpaces(rec.fields[refIndex] ?? '');
    const rowNumber = this.rowCount;
    if (rec.fields.length !== header.width) {
      this.unsummedRows++;
      const error: RowError = {
        file: this.file,
        line: rec.line,
        column: null,
        field: null,
        code: 'COLUMN_COUNT_MISMATCH',
        message: `row has ${rec.fields.length} fields but the header has ${header.width} (an unquoted delimiter inside a value, or a missing one?)`,
      };
      return new ParsedRow(rec.line, rowNumber, reference, null, [error], NOTHING_WRITTEN);
    }
    const input = this.input;
    const cells = input.cells;
    for (let i = 0; i < cells.length; i++) {
      const column = this.columnOf[i] as number;
      cells[i] = column < 0 ? '' : (rec.fields[column] ?? '');
    }
    input.line = rec.line;
    const written: WrittenMoney = {
      payoutCurrency: trimSpaces(cells[PAYOUT_CURRENCY] as string),
      payoutAmount: trimSpaces(cells[PAYOUT_AMOUNT] as string),
      deductionCurrency: trimSpaces(cells[DEDUCTION_CURRENCY] as string),
    };
    this.addToTotals(upperCased(written.payoutCurrency), written.payoutAmount);
    const result = validateCells(input, this.rules);
    return 'values' in result
      ? new ParsedRow(
          rec.line,
          rowNumber,
          result.values[REQUEST_VALUE_INDEX.merchantReferenceId] as string,
          result.values,
          NO_ERRORS,
          written,
        )
      : new ParsedRow(rec.line, rowNumber, reference, null, result.errors, written);
  }

  /** Adds a row's amount (trimmed) to its currency's total (trimmed, upper-cased). */
  private addToTotals(currency: string, amount: string): void {
    // Only 3-letter codes, so a hostile file cannot grow the map without bound.
    if (!/^[A-Z]{3}$/.test(currency) || !isPlainDecimal(amount)) {
      this.unsummedRows++;
      return;
    }
    let total = this.totals.get(currency);
    if (!total) {
      total = new ExactTotal();
      this.totals.set(currency, total);
    }
    total.add(amount);
  }
}

function csvErrorToFileError(err: CsvError, line: number): { code: RowError['code']; message: string } {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      return { code: 'UNBALANCED_QUOTES', message: `the record starting on line ${line} opens a quote that is never closed` };
    case 'CSV_INVALID_CLOSING_QUOTE':
      return {
        code: 'MALFORMED_QUOTES',
        message: `the record starting on line ${line} has text right after a closing quote (a quote inside a quoted value must be doubled: "")`,
      };
    case 'INVALID_OPENING_QUOTE':
      return {
        code: 'MALFORMED_QUOTES',
        message: `the record starting on line ${line} has a quote inside an unquoted value (quote the whole value and double the inner quote)`,
      };
    case 'CSV_MAX_RECORD_SIZE':
      return { code: 'RECORD_TOO_LARGE', message: `the record starting on line ${line} is larger than the maximum record size` };
    default:
      return { code: 'CSV_SYNTAX', message: `CSV syntax error in the record starting on line ${line} (${err.code})` };
  }
}

function isFsError(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && typeof (err as NodeJS.ErrnoException).syscall === 'string';
}

/** Reads, checks and validates one batch file. Rejects only when the file cannot be read or onRows fails. */
export async function parseBatchFile(path: string, displayName: string, opts: ParseBatchOptions): Promise<BatchParseResult> {
  const { format } = opts;
  const rules = isCompiled(opts.rules) ? opts.rules : compileRules(opts.rules);
  const delimiter = await batchDelimiter(path, displayName, format);
  const summary = await readBatchPart(path, displayName, WHOLE_FILE, {
    format,
    rules,
    delimiter,
    chunkSize: Math.max(1, opts.chunkSize ?? 500),
    readChunkBytes: opts.readChunkBytes,
    signal: opts.signal,
    onRows: opts.onRows,
  });
  return finishBatchParse(path, displayName, delimiter, [summary], { format, sidecarPath: opts.sidecarPath });
}

/** The file's field delimiter: configured, or decided from its header line. */
export async function batchDelimiter(path: string, displayName: string, format: BatchFormatOptions): Promise<Delimiter> {
  try {
    return format.delimiter === 'auto' ? await sniffFileDelimiter(path, format.maxRecordBytes) : format.delimiter;
  } catch (err) {
    throw readError(err, displayName);
  }
}

/**
 * Reads one part of a batch file: its records through the UTF-8 check and
 * csv-parse, each row validated and handed to `onRows` in chunks. Rejects
 * only when the file cannot be read or onRows fails; a problem of the file
 * is in the summary's fileErrors.
 */
export async function readBatchPart(path: string, displayName: string, part: BatchFilePart, opts: PartReadOptions): Promise<PartSummary> {
  const { format } = opts;
  const state = new BatchState(displayName, format, opts.rules, opts.chunkSize, opts.onRows, part.header, opts.headerOnly);
  // Only the file's start may hold a BOM: a part after it starts with whatever its first line holds.
  const atStart = part.start === 0;
  const tracker = new LineTracker(atStart);
  let lastRecordEnd = 0;
  const parser = new LinedParser(
    {
      bom: atStart,
      delimiter: opts.delimiter,
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: format.maxRecordBytes,
    },
    (recordEnd) => {
      const line = tracker.contentLineAfter(lastRecordEnd);
      lastRecordEnd = recordEnd;
      return part.lineOffset + line;
    },
    (rec) => state.accept(rec),
  );
  let stopped = false;
  try {
    await pipeline(
      createReadStream(path, {
        start: part.start,
        end: part.end === null ? undefined : part.end - 1,
        highWaterMark: opts.readChunkBytes ?? READ_CHUNK_BYTES,
      }),
      new Utf8Guard(tracker),
      parser,
      opts.signal ? { signal: opts.signal } : {},
    );
  } catch (err) {
    if (err instanceof HeaderRead) return state.summary(false);
    stopped = true;
    if (err instanceof StopParsing) {
      // The file error is already recorded.
    } else if (err instanceof InvalidUtf8Error) {
      state.fileErrorAt(
        part.lineOffset + err.line,
        'INVALID_UTF8',
        `${err.message} (line ${part.lineOffset + err.line}); the file must be UTF-8`,
      );
    } else if (err instanceof CsvError) {
      const line = part.lineOffset + tracker.contentLineAfter(lastRecordEnd);
      const mapped = csvErrorToFileError(err, line);
      state.fileErrorAt(line, mapped.code, mapped.message);
    } else if (isFsError(err)) {
      throw readError(err, displayName);
    } else {
      throw err;
    }
  }
  if (!stopped) await state.flush();
  return state.summary(stopped);
}

/** Options of finishBatchParse. */
export interface FinishOptions {
  format: BatchFormatOptions;
  /** Sidecar control file; default `<path>.ctl`; null = do not look for one. */
  sidecarPath?: string | null;
}

/**
 * The result of a file read as `parts` (in file order): their sums, the
 * header of the first, the trailer of the last, and the control totals
 * (trailer and sidecar) checked against what the rows add up to.
 */
export async function finishBatchParse(
  path: string,
  displayName: string,
  delimiter: Delimiter,
  parts: readonly PartSummary[],
  opts: FinishOptions,
): Promise<BatchParseResult> {
  const { format } = opts;
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (first === undefined || last === undefined) throw new RangeError('finishBatchParse needs at least one part');
  const keep = fileErrorsKept(format);
  const fileErrors = parts.flatMap((p) => p.fileErrors).slice(0, keep);
  const stopped = parts.some((p) => p.stopped);
  const totals = new Map<string, Decimal>();
  for (const p of parts) {
    for (const [currency, text] of Object.entries(p.totals)) totals.set(currency, (totals.get(currency) ?? new Decimal(0)).plus(text));
  }
  const sum = (n: (p: PartSummary) => number): number => parts.reduce((acc, p) => acc + n(p), 0);
  const found = { rows: sum((p) => p.rowCount), totals, unsummedRows: sum((p) => p.unsummedRows) };
  const fileError = (error: RowError): void => {
    if (fileErrors.length < keep) fileErrors.push(error);
  };
  let controlTotals: ControlTotals[] = [];
  if (!stopped) {
    if (first.header === null) fileError(fileErrorOf(displayName, null, 'FILE_EMPTY', 'file has no header row (it is empty or blank)'));
    else
      controlTotals = await checkControls(last.trailer, found, path, displayName, opts.sidecarPath, format.requireControlTotals, fileError);
  }
  return {
    file: displayName,
    delimiter,
    fileErrors,
    rowCount: found.rows,
    validCount: sum((p) => p.validCount),
    invalidCount: sum((p) => p.invalidCount),
    errorCount: sum((p) => p.errorCount),
    storedErrors: parts.flatMap((p) => p.storedErrors).slice(0, format.maxStoredErrors),
    controlTotals,
    totals: Object.fromEntries([...totals.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([c, d]) => [c, decimalText(d)])),
    unsummedRows: found.unsummedRows,
  };
}

/** File errors kept: as many as row errors, and always at least one (a rejected file needs its reason). */
function fileErrorsKept(format: BatchFormatOptions): number {
  return Math.max(1, format.maxStoredErrors);
}

async function checkControls(
  trailer: PartSummary['trailer'],
  found: FoundTotals,
  path: string,
  displayName: string,
  sidecarPath: string | null | undefined,
  required: boolean,
  fileError: (error: RowError) => void,
): Promise<ControlTotals[]> {
  const blocks: ControlTotals[] = [];
  if (trailer.error) fileError(trailer.error);
  if (trailer.controls) blocks.push(trailer.controls);
  const sidecarFile = sidecarPath === null ? null : (sidecarPath ?? `${path}.ctl`);
  if (sidecarFile !== null) {
    let sidecar: Awaited<ReturnType<typeof readSidecar>>;
    try {
      sidecar = await readSidecar(sidecarFile, `${displayName}.ctl`);
    } catch (err) {
      throw readError(err, `${displayName}.ctl`);
    }
    if (sidecar) {
      for (const error of sidecar.errors) fileError(error);
      if (sidecar.controls) blocks.push(sidecar.controls);
    }
  }
  if (blocks.length === 0 && required) {
    fileError(
      fileErrorOf(
        displayName,
        null,
        'CONTROL_MISSING',
        `control totals are required: add #CONTROL trailer lines or a ${displayName}.ctl file`,
      ),
    );
  }
  for (const block of blocks) {
    for (const error of compareControls(block, found)) fileError(error);
  }
  return blocks;
}

function readError(err: unknown, displayName: string): BatchReadError {
  const code = isFsError(err) ? (err.code ?? 'unknown error') : 'unknown error';
  return new BatchReadError('BATCH_READ_FAILED', `cannot read batch file ${displayName}: ${code}`, { cause: err });
}

/**
 * Streams one CSV batch file through UTF-8 check, csv-parse and row
 * validation, handing rows to the caller in chunks. The caller's `onRows` is
 * awaited before more is read (pipeline backpressure), so a file of a
 * million rows never sits in memory.
 *
 * Contract with the caller: rows handed to `onRows` are provisional. Some
 * file errors (control totals, a row cap, bad bytes late in the file) are
 * only known after earlier chunks went out; when the result has any
 * `fileErrors`, the whole file is rejected and every row handed over must
 * be discarded (stage them in a transaction or a batch marked pending).
 */
import { createReadStream } from 'node:fs';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, Parser, type Options as CsvOptions } from 'csv-parse';
import { PayoutdError } from '../../domain/errors.js';
import { decimalText, isPlainDecimal, type Decimal } from '../../domain/money.js';
import type { PayoutRequest } from '../../domain/payout.js';
import { emptyRowValues, FIELD_PATHS, type FieldPath, type RowValues } from '../rules/fields.js';
import { compileRules, type CompiledRules, type ValidationRules } from '../rules/options.js';
import type { RowError } from '../rules/row-error.js';
import { trimSpaces } from '../rules/text.js';
import { validateRow } from '../rules/validate-row.js';
import { compareControls, ControlBlock, isControlRecord, readSidecar, type ControlTotals } from './control.js';
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
  line: number;
  /** 1-based position among the file's data rows. */
  rowNumber: number;
  /** The reference as written (trimmed); best effort when the row is invalid, '' if absent. */
  merchantReferenceId: string;
  /** The normalized request when the row is valid. */
  request: PayoutRequest | null;
  /** The same request's values in FIELD_PATHS order (what the store keeps), when the row is valid. */
  requestValues: readonly string[] | null;
  /** Every problem of this row (never capped). */
  errors: RowError[];
  /** Money cells as written (trimmed), valid or not, for result files that match the sender's file. */
  written: WrittenMoney;
}

export interface WrittenMoney {
  payoutCurrency: string;
  payoutAmount: string;
  deductionCurrency: string;
}

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
  /** Bytes per file read; default 64 KiB. Tiny values exist for tests of chunk boundaries. */
  readChunkBytes?: number;
  /** Aborts reading (daemon shutdown); the promise then rejects with the abort error. */
  signal?: AbortSignal;
  onRows: (rows: ParsedBatchRow[]) => Promise<void>;
}

/** Thrown inside the pipeline to stop reading after a file error was recorded. */
class StopParsing extends Error {}

interface LinedRecord {
  fields: string[];
  line: number;
}

/**
 * csv-parse's Parser, each record handed on with the physical line it starts on. csv-parse pushes a
 * record the moment it completes, while `info.bytes` is that record's end, so the line is taken there,
 * in byte order. (Its `on_record` hook gives the same position, but builds a context object of every
 * statistic per record: 12% of reading a batch.)
 */
class LinedParser extends Parser {
  constructor(
    options: CsvOptions,
    private readonly lineOf: (recordEnd: number) => number,
  ) {
    super(options);
  }

  override push(record: unknown): boolean {
    if (record === null) return super.push(null);
    return super.push({ fields: record as string[], line: this.lineOf(this.info.bytes) } satisfies LinedRecord);
  }
}

function isCompiled(rules: ValidationRules | CompiledRules): rules is CompiledRules {
  return typeof (rules as CompiledRules).accountRule === 'function';
}

function isBlankRecord(fields: readonly string[]): boolean {
  return fields.every((f) => trimSpaces(f) === '');
}

/** Accumulates everything learned from the records of one file. */
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
  /** (field, column index) of each field present, built once from the header. */
  private plan: [FieldPath, number][] = [];
  private chunk: ParsedBatchRow[] = [];

  constructor(
    readonly file: string,
    private readonly format: BatchFormatOptions,
    private readonly rules: CompiledRules,
    private readonly chunkSize: number,
    private readonly onRows: (rows: ParsedBatchRow[]) => Promise<void>,
  ) {
    this.trailer = new ControlBlock('trailer', file);
  }

  fileError(error: RowError): void {
    // Always keep at least one: a rejected file needs its reason.
    if (this.fileErrors.length < Math.max(1, this.format.maxStoredErrors)) this.fileErrors.push(error);
  }

  fileErrorAt(line: number | null, code: RowError['code'], message: string): void {
    this.fileError({ file: this.file, line, column: null, field: null, code, message });
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
    if (row.request) this.validCount++;
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

  private acceptHeader(rec: LinedRecord): void {
    if (isBlankRecord(rec.fields)) return;
    this.headerLine = rec.line;
    const resolved = resolveHeader(rec.fields, {
      file: this.file,
      line: rec.line,
      aliases: this.format.columnAliases,
      required: this.rules.required,
    });
    if ('errors' in resolved) {
      for (const error of resolved.errors) this.fileError(error);
      throw new StopParsing();
    }
    this.header = resolved.header;
    this.plan = FIELD_PATHS.flatMap((field): [FieldPath, number][] => {
      const index = resolved.header.indexOf[field];
      return index === undefined ? [] : [[field, index]];
    });
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
      return {
        line: rec.line,
        rowNumber,
        merchantReferenceId: reference,
        request: null,
        requestValues: null,
        errors: [error],
        written: NOTHING_WRITTEN,
      };
    }
    const values: RowValues = emptyRowValues();
    for (const [field, index] of this.plan) values[field] = rec.fields[index] ?? '';
    this.addToTotals(values);
    const result = validateRow({ file: this.file, line: rec.line, values, columns: header.columns }, this.rules);
    const written: WrittenMoney = {
      payoutCurrency: trimSpaces(values.payoutCurrency),
      payoutAmount: trimSpaces(values.payoutAmount),
      deductionCurrency: trimSpaces(values.deductionCurrency),
    };
    return 'request' in result
      ? {
          line: rec.line,
          rowNumber,
          merchantReferenceId: result.request.merchantReferenceId,
          request: result.request,
          requestValues: result.values,
          errors: NO_ERRORS,
          written,
        }
      : { line: rec.line, rowNumber, merchantReferenceId: reference, request: null, requestValues: null, errors: result.errors, written };
  }

  /** The sums of payoutAmount per payoutCurrency so far. */
  totalsByCurrency(): Map<string, Decimal> {
    return new Map([...this.totals].map(([currency, total]) => [currency, total.toDecimal()]));
  }

  private addToTotals(values: RowValues): void {
    const currency = trimSpaces(values.payoutCurrency).toUpperCase();
    const amount = trimSpaces(values.payoutAmount);
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
  const chunkSize = Math.max(1, opts.chunkSize ?? 500);
  let delimiter: Delimiter;
  try {
    delimiter = format.delimiter === 'auto' ? await sniffFileDelimiter(path, format.maxRecordBytes) : format.delimiter;
  } catch (err) {
    throw readError(err, displayName);
  }
  const state = new BatchState(displayName, format, rules, chunkSize, opts.onRows);
  const tracker = new LineTracker();
  let lastRecordEnd = 0;
  const parser = new LinedParser(
    {
      bom: true,
      delimiter,
      record_delimiter: ['\r\n', '\n', '\r'],
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: format.maxRecordBytes,
    },
    (recordEnd) => {
      const line = tracker.contentLineAfter(lastRecordEnd);
      lastRecordEnd = recordEnd;
      return line;
    },
  );
  const sink = new Writable({
    objectMode: true,
    highWaterMark: 256,
    write(rec: LinedRecord, _encoding, callback) {
      let pending: Promise<void> | undefined;
      try {
        pending = state.accept(rec);
      } catch (err) {
        callback(err as Error);
        return;
      }
      if (pending) pending.then(() => callback(), callback);
      else callback();
    },
  });

  let stopped = false;
  try {
    await pipeline(
      createReadStream(path, { highWaterMark: opts.readChunkBytes ?? 64 * 1024 }),
      new Utf8Guard(tracker),
      parser,
      sink,
      opts.signal ? { signal: opts.signal } : {},
    );
  } catch (err) {
    stopped = true;
    if (err instanceof StopParsing) {
      // The file error is already recorded.
    } else if (err instanceof InvalidUtf8Error) {
      state.fileErrorAt(err.line, 'INVALID_UTF8', `${err.message} (line ${err.line}); the file must be UTF-8`);
    } else if (err instanceof CsvError) {
      const line = tracker.contentLineAfter(lastRecordEnd);
      const mapped = csvErrorToFileError(err, line);
      state.fileErrorAt(line, mapped.code, mapped.message);
    } else if (isFsError(err)) {
      throw readError(err, displayName);
    } else {
      throw err;
    }
  }
  if (!stopped) {
    await state.flush();
    if (state.header === null) state.fileErrorAt(null, 'FILE_EMPTY', 'file has no header row (it is empty or blank)');
  }
  const controlTotals = stopped ? [] : await checkControls(state, path, displayName, opts.sidecarPath, format.requireControlTotals);
  return {
    file: displayName,
    delimiter,
    fileErrors: state.fileErrors,
    rowCount: state.rowCount,
    validCount: state.validCount,
    invalidCount: state.invalidCount,
    errorCount: state.errorCount,
    storedErrors: state.storedErrors,
    controlTotals,
    totals: Object.fromEntries(
      [...state.totalsByCurrency().entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([c, d]) => [c, decimalText(d)]),
    ),
    unsummedRows: state.unsummedRows,
  };
}

async function checkControls(
  state: BatchState,
  path: string,
  displayName: string,
  sidecarPath: string | null | undefined,
  required: boolean,
): Promise<ControlTotals[]> {
  if (state.header === null) return [];
  const blocks: ControlTotals[] = [];
  const trailer = state.trailer.finish(state.lastLine);
  if (trailer.error) state.fileError(trailer.error);
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
      for (const error of sidecar.errors) state.fileError(error);
      if (sidecar.controls) blocks.push(sidecar.controls);
    }
  }
  if (blocks.length === 0 && required) {
    state.fileErrorAt(null, 'CONTROL_MISSING', `control totals are required: add #CONTROL trailer lines or a ${displayName}.ctl file`);
  }
  const found = { rows: state.rowCount, totals: state.totalsByCurrency(), unsummedRows: state.unsummedRows };
  for (const block of blocks) {
    for (const error of compareControls(block, found)) state.fileError(error);
  }
  return blocks;
}

function readError(err: unknown, displayName: string): BatchReadError {
  const code = isFsError(err) ? (err.code ?? 'unknown error') : 'unknown error';
  return new BatchReadError('BATCH_READ_FAILED', `cannot read batch file ${displayName}: ${code}`, { cause: err });
}

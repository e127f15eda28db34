/**
 * Reads one batch file: a CSV's bytes (decompressed, decoded) through the UTF-8 check and csv-parse (a
 * `pipeline` with backpressure), or an .xlsx sheet's rows (src/ingest/xlsx); each record validated into the
 * row the store keeps, handed to the caller in awaited chunks. Rows handed over are provisional: some file
 * errors are only known later, and when the result has any `fileErrors` every row handed over must be
 * discarded.
 */
import { Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { CsvError, parse } from 'csv-parse';
import { PayoutdError } from '../../domain/errors.js';
import { ExactTotal } from '../../domain/exact-total.js';
import { decimalText, isPlainDecimal } from '../../domain/money.js';
import type { PayoutRequest } from '../../domain/payout.js';
import { decodeRequestValues, encodeRequestValues, REQUEST_VALUE_INDEX, requestOfText } from '../../domain/request-values.js';
import { FIELD_PATHS, FIELD_WORDS, type FieldPath } from '../rules/fields.js';
import { compileRules, type CompiledRules } from '../rules/compiled.js';
import type { ValidationRules } from '../rules/options.js';
import { columnLetter, columnPlace, fileErrorOf, type RowError } from '../rules/row-error.js';
import { trimSpaces, upperCased } from '../rules/text.js';
import { validateCells, type RowCells } from '../rules/validate-row.js';
import { endsInsideRow, unterminatedFileProblem } from './complete.js';
import { compareControls, ControlBlock, isControlRecord, readSidecar, type ControlTotals, type FoundTotals } from './control.js';
import { sniffDelimiter, type Delimiter } from './delimiter.js';
import { resolveHeader, type ResolvedHeader } from './header.js';
import { RecordLines } from './lines.js';
import { RECORD_DELIMITERS, type BatchFormatOptions } from './options.js';
import { InvalidUtf8Error, Utf8Check } from './utf8.js';
import { checkRetryRows, type RetryOriginals } from './retry-rows.js';
import { batchFileKind, sourceHead, TextDecodeError, textSource, utf16Look, type TextSource } from './text-source.js';
import {
  cellText,
  controlCellHides,
  phoneticGuideMessage,
  SheetRefusal,
  sheetRows,
  type CellProblem,
  type SheetRow,
} from '../xlsx/index.js';

/** The batch file could not be read at all (missing, unreadable): not a problem of its content. */
export class BatchReadError extends PayoutdError {
  override readonly name = 'BatchReadError';
}

/**
 * Every error with its code and place, in one text: `CODE [column K "Account"]: what is wrong`. A row's reason
 * places an error by its column (the line has its own column everywhere); `placeOf` places it otherwise.
 */
export function reasonOf(errors: readonly RowError[], placeOf: (e: RowError) => string | null = columnPlace): string | null {
  if (errors.length === 0) return null;
  return errors
    .map((e) => {
      const place = placeOf(e);
      return `${e.code}${place ? ` [${place}]` : ''}: ${e.message}`;
    })
    .join('; ');
}

/** A money cell as the row keeps it: as written (trimmed), or null when empty or equal to the request's value. */
function writtenMoney(cells: readonly string[] | null, values: readonly string[] | null, at: number): string | null {
  const written = cells === null ? '' : trimSpaces(cells[at] as string);
  if (written === '') return null;
  return values !== null && values[at] === written ? null : written;
}

const NO_ERRORS: readonly RowError[] = Object.freeze([]);

/** A data row as read and validated: the one shape from the parser to the store (`NewPayoutRow`), with its errors. */
export class ReadRow {
  readonly state: 'READY' | 'INVALID';
  /** The request's values as the store keeps them (src/domain/request-values.ts); null for an invalid row. */
  readonly requestValues: string | null;
  /** Money cells as written where that is not the request's value, else null. */
  readonly payoutCurrency: string | null;
  readonly payoutAmount: string | null;
  readonly deductionCurrency: string | null;
  /** An invalid row's first error code, and all its errors in one text. */
  readonly reasonCode: string | null;
  readonly reason: string | null;
  /** An invalid row's cells in FIELD_PATHS order, as read (a retry row is still compared with its original). */
  readonly invalidCells: readonly string[] | null;

  constructor(
    readonly batchId: string,
    /** Physical line where the record starts (1-based; the header is usually line 1). */
    readonly line: number,
    /** 1-based position among the file's data rows. */
    readonly rowNumber: number,
    /** The reference as written (trimmed); best effort when the row is invalid, '' if absent. */
    readonly merchantReferenceId: string,
    values: readonly string[] | null,
    /** Every problem of this row (never capped). */
    readonly errors: readonly RowError[],
    /** The row's cells in FIELD_PATHS order, as read (null: they could not be told apart). */
    cells: readonly string[] | null,
  ) {
    this.state = values === null ? 'INVALID' : 'READY';
    this.requestValues = values === null ? null : encodeRequestValues(values);
    this.payoutCurrency = writtenMoney(cells, values, REQUEST_VALUE_INDEX.payoutCurrency);
    this.payoutAmount = writtenMoney(cells, values, REQUEST_VALUE_INDEX.payoutAmount);
    this.deductionCurrency = writtenMoney(cells, values, REQUEST_VALUE_INDEX.deductionCurrency);
    this.reasonCode = errors[0]?.code ?? null;
    this.reason = reasonOf(errors);
    this.invalidCells = values === null ? cells : null;
  }

  /** This row refused for `errors` found after it was read, besides any it had (its money cells kept as written). */
  refusedFor(errors: readonly RowError[]): ReadRow {
    const values = this.requestValues === null ? null : decodeRequestValues(this.requestValues);
    const written: Partial<Record<number, string | null>> = {
      [REQUEST_VALUE_INDEX.payoutCurrency]: this.payoutCurrency,
      [REQUEST_VALUE_INDEX.payoutAmount]: this.payoutAmount,
      [REQUEST_VALUE_INDEX.deductionCurrency]: this.deductionCurrency,
    };
    const cells = values?.map((v, i) => written[i] ?? v) ?? this.invalidCells;
    return new ReadRow(this.batchId, this.line, this.rowNumber, this.merchantReferenceId, null, [...this.errors, ...errors], cells);
  }

  get request(): PayoutRequest | null {
    return this.requestValues === null ? null : requestOfText(this.requestValues);
  }
}

export interface BatchParseResult {
  file: string;
  delimiter: Delimiter;
  /** What the file was: CSV text (maybe gzipped) or an .xlsx workbook. */
  kind: 'text' | 'gzip' | 'xlsx';
  /** The text encoding read (null for a workbook), and whether it was decided from the bytes (`encoding: auto`). */
  encoding: string | null;
  encodingDetected: boolean;
  /** Problems that reject the whole file; non-empty = discard every row handed to onRows. */
  fileErrors: RowError[];
  /** Data rows read (blank lines, the header and control lines excluded). */
  rowCount: number;
  validCount: number;
  invalidCount: number;
  /** Row errors found, including those beyond the first `maxStoredErrors` kept in storedErrors. */
  errorCount: number;
  storedErrors: RowError[];
  controlTotals: ControlTotals[];
  /** Sum of payoutAmount per payoutCurrency over all data rows, valid or not, whose currency and amount can be read. */
  totals: Record<string, string>;
  /** Data rows left out of `totals` (unreadable currency or amount, or a wrong field count). */
  unsummedRows: number;
  /** The reference's column as the file has it (its header as written, its position), for messages; null: no header read. */
  referenceColumn: { column: string; columnIndex: number } | null;
}

export interface ParseBatchOptions {
  format: BatchFormatOptions;
  /** Validated rules (validationRulesSchema output) or already compiled ones. */
  rules: ValidationRules | CompiledRules;
  /** The batch the rows are stored in; '' when they are not stored (a dry run). */
  batchId?: string;
  /** Rows per onRows call; default 500. */
  chunkSize?: number;
  /** Sidecar control file; default `<path>.ctl`; null = do not look for one. */
  sidecarPath?: string | null;
  /** A `.done` marker was consumed with the file (see ./complete.ts); default false. */
  doneMarker?: boolean;
  /**
   * The file's bytes to read: those its claim took (and hashed), so that what an upload writes into the
   * taken file later is not read (the taken-file watch reports it); default the whole file.
   */
  bytes?: number;
  /** Bytes per file read; default 64 KiB. Tiny values exist for tests of chunk boundaries. */
  readChunkBytes?: number;
  /** Aborts reading (daemon shutdown); the promise then rejects with the abort error. */
  signal?: AbortSignal;
  /** The rows earlier batches hold for references: retry rows are checked against the rows they retry. */
  retryOriginals?: RetryOriginals;
  onRows: (rows: ReadRow[]) => Promise<void>;
}

const READ_CHUNK_BYTES = 64 * 1024;

/** Thrown inside the pipeline to stop reading after a file error was recorded. */
class StopParsing extends Error {}

function isCompiled(rules: ValidationRules | CompiledRules): rules is CompiledRules {
  return typeof (rules as CompiledRules).accountRule === 'function';
}

function isBlankRecord(fields: readonly string[]): boolean {
  return fields.every((f) => trimSpaces(f) === '');
}

/** The index of the first field holding a NUL character (U+0000), or -1. */
function nulField(fields: readonly string[]): number {
  return fields.findIndex((f) => f.includes('\u0000'));
}

/** Everything learned from a file's records, one record at a time. */
class BatchReader {
  header: ResolvedHeader | null = null;
  readonly fileErrors: RowError[] = [];
  readonly storedErrors: RowError[] = [];
  rowCount = 0;
  validCount = 0;
  invalidCount = 0;
  errorCount = 0;
  unsummedRows = 0;
  /** Running sums per payout currency. */
  readonly totals = new Map<string, ExactTotal>();
  readonly trailer: ControlBlock;
  readonly lines = new RecordLines();
  lastLine: number | null = null;
  /** The last record read, when it is a data row with fewer fields than the header (what a cut upload ends with). */
  shortLastRow: { line: number; rowNumber: number; fields: number } | null = null;
  private notAtEndReported = false;
  /** The file's column of each field, in FIELD_PATHS order (-1: the file lacks it), built once from the header. */
  private columnOf: number[] = [];
  /** The row being validated, refilled for every row (validateCells keeps nothing of it). */
  private readonly input: RowCells & { cells: string[] };

  constructor(
    readonly file: string,
    private readonly batchId: string,
    private readonly format: BatchFormatOptions,
    readonly rules: CompiledRules,
    /** The rows come from a workbook's sheet: no delimiters, and a cell past the header is a value of its own. */
    private readonly sheet = false,
  ) {
    this.trailer = new ControlBlock('trailer', file, rules);
    this.input = { file, line: 0, cells: FIELD_PATHS.map(() => ''), columns: {} };
  }

  fileError(error: RowError): void {
    if (this.fileErrors.length < Math.max(1, this.format.maxStoredErrors)) this.fileErrors.push(error);
  }

  fileErrorAt(line: number | null, code: RowError['code'], message: string): void {
    this.fileError(fileErrorOf(this.file, line, code, message));
  }

  /** Problems of the cells of the row being taken, by field (a workbook's date or long-number cells). */
  private cellProblems: Map<FieldPath, CellProblem> | null = null;

  /** One sheet row: its cells as text for the header, or for each column's field, then taken as a record. */
  takeSheetRow(row: SheetRow): ReadRow | null {
    const header = this.header;
    if (header === null && row.guided.length > 0) {
      this.fileError({
        file: this.file,
        line: row.line,
        column: null,
        columnIndex: row.guided[0] as number,
        field: null,
        code: 'XLSX_UNREADABLE',
        message: phoneticGuideMessage('the header cell'),
      });
      throw new StopParsing();
    }
    const fields: string[] = [];
    let problems: Map<FieldPath, CellProblem> | null = null;
    // A control row's cells are no values of their columns' fields; its numbers are totals, to be seen as read.
    const first = row.cells[0];
    const control = header !== null && first?.kind === 'text' && isControlRecord([first.text]);
    row.cells.forEach((cell, index) => {
      const field = control ? null : (header?.fields[index] ?? null);
      const hidden = control ? controlCellHides(cell, `${columnLetter(index)}${row.line}`) : null;
      if (hidden !== null) this.fileErrorAt(row.line, 'CONTROL_INVALID', hidden);
      // A column with no field is not read: its text, as read, is only counted.
      const read =
        field !== null && row.guided.includes(index)
          ? { problem: { code: 'PHONETIC_GUIDE' as const, message: phoneticGuideMessage(`the ${FIELD_WORDS[field]} cell`) } }
          : cellText(cell, field);
      if ('text' in read) fields.push(read.text);
      else {
        fields.push('');
        if (field !== null) (problems ??= new Map()).set(field, read.problem);
        else fields[index] = cell.kind === 'date' ? cell.date : String((cell as { value: unknown }).value);
      }
    });
    if (header !== null) {
      // Cells a sheet leaves empty at the end of a row are no missing fields.
      while (fields.length < header.width) fields.push('');
      while (fields.length > header.width && trimSpaces(fields[fields.length - 1] as string) === '') fields.pop();
    }
    this.cellProblems = problems;
    try {
      return this.take(fields, row.line);
    } finally {
      this.cellProblems = null;
    }
  }

  /** One record: the row it is, or null for a record that is none (header, blank line, control line). */
  take(fields: string[], atLine?: number): ReadRow | null {
    const line = atLine ?? this.lines.startOf(fields);
    this.lastLine = line;
    // Before anything keeps a cell: no text holds a NUL, and PostgreSQL stores none (only the file's head is sniffed).
    const nul = nulField(fields);
    if (nul >= 0) {
      this.refuseNul(line, nul);
      throw new StopParsing();
    }
    if (this.header === null) {
      this.takeHeader(fields, line);
      return null;
    }
    // A sheet row whose only values are cells refused (an error value, a date as amount, a format hiding text) is
    // no blank row: it is named with those cells, never dropped.
    if (isBlankRecord(fields) && this.cellProblems === null) return null;
    this.shortLastRow = null;
    if (isControlRecord(fields)) {
      const error = this.trailer.add(fields, line);
      if (error) this.fileError(error);
      return null;
    }
    if (this.trailer.seen && !this.notAtEndReported) {
      this.notAtEndReported = true;
      this.fileErrorAt(line, 'CONTROL_NOT_AT_END', `data row after the ${'#CONTROL'} trailer; control lines must come last`);
    }
    if (this.rowCount >= this.format.maxRows) {
      this.fileErrorAt(line, 'TOO_MANY_ROWS', `file has more than ${this.format.maxRows} data rows`);
      throw new StopParsing();
    }
    this.rowCount++;
    const row = this.rowOf(fields, line, this.header);
    if (row.state === 'READY') this.validCount++;
    else this.invalidCount++;
    for (const error of row.errors) {
      this.errorCount++;
      if (this.storedErrors.length < this.format.maxStoredErrors) this.storedErrors.push(error);
    }
    if (fields.length < this.header.width) this.shortLastRow = { line, rowNumber: this.rowCount, fields: fields.length };
    return row;
  }

  /** A file read as UTF-8 that looks like UTF-16: its bytes are refused saying so, with the encoding to set. */
  utf16: ReturnType<typeof utf16Look> = null;

  /** What to do with a file that looks like UTF-16 (`utf16`), and why it does. */
  utf16Advice(): string | null {
    const look = this.utf16;
    if (look === null) return null;
    // `auto` tells UTF-16 by its byte order mark only.
    const set = look.bom ? `auto or to ${look.encoding}` : look.encoding;
    return `the file looks like UTF-16, not UTF-8 (${look.why}); set batch.format.encoding to ${set}, or save it as CSV UTF-8`;
  }

  /** The file refused for a NUL character in column `index` of the record on `line` (as UTF-16, when it looks like it). */
  private refuseNul(line: number, index: number): void {
    const advice = this.utf16Advice();
    if (advice !== null) {
      this.fileErrorAt(line, 'INVALID_UTF8', advice);
      return;
    }
    const field = this.header?.fields[index];
    this.fileError({
      file: this.file,
      line,
      column: field === undefined ? null : (this.header?.columns[field] ?? null),
      columnIndex: index,
      field: null,
      code: 'NUL_CHARACTER',
      message:
        'the cell holds a NUL character (a zero byte): binary data, not text; delete the character, or save the sheet again as CSV UTF-8 (or .xlsx), and drop the file again',
    });
  }

  /** A row refused after it was read, or refused for one more reason (a retry row that lost its original's leading zeros). */
  refuseLater(row: ReadRow, error: RowError): ReadRow {
    if (row.state === 'READY') {
      this.validCount--;
      this.invalidCount++;
    }
    this.errorCount++;
    if (this.storedErrors.length < this.format.maxStoredErrors) this.storedErrors.push(error);
    return row.refusedFor([error]);
  }

  /** The record being read when csv-parse stopped: its start line, and its row number (null: the header). */
  cutRecord(): { line: number; rowNumber: number | null } {
    return { line: this.lines.nextStart, rowNumber: this.header === null ? null : this.rowCount + 1 };
  }

  /** The totals found, as control totals compare them. */
  found(): FoundTotals {
    const totals = new Map([...this.totals].map(([currency, total]) => [currency, total.toDecimal()]));
    return { rows: this.rowCount, totals, unsummedRows: this.unsummedRows };
  }

  private takeHeader(fields: string[], line: number): void {
    if (isBlankRecord(fields)) return;
    const resolved = resolveHeader(fields, {
      file: this.file,
      line,
      aliases: this.format.columnAliases,
      required: this.rules.required,
    });
    if ('errors' in resolved) {
      for (const error of resolved.errors) this.fileError(error);
      throw new StopParsing();
    }
    const header = resolved.header;
    this.header = header;
    this.input.columns = header.columns;
    this.columnOf = FIELD_PATHS.map((field) => header.indexOf[field] ?? -1);
  }

  private rowOf(fields: readonly string[], line: number, header: ResolvedHeader): ReadRow {
    const refIndex = header.indexOf.merchantReferenceId;
    const reference = refIndex === undefined ? '' : trimSpaces(fields[refIndex] ?? '');
    if (fields.length !== header.width) {
      this.unsummedRows++;
      const error = this.fieldCountError(fields, line, header);
      return new ReadRow(this.batchId, line, this.rowCount, reference, null, [error], null);
    }
    const input = this.input;
    const cells = input.cells;
    for (let i = 0; i < cells.length; i++) {
      const column = this.columnOf[i] as number;
      cells[i] = column < 0 ? '' : (fields[column] ?? '');
    }
    input.line = line;
    const result = withCellProblems(validateCells(input, this.rules), this.cellProblems, input);
    if ('values' in result) {
      const values = result.values;
      // A valid row's currency is a known code and its amount a plain decimal (normalized: the same sum).
      this.addToTotal(values[REQUEST_VALUE_INDEX.payoutCurrency] as string, values[REQUEST_VALUE_INDEX.payoutAmount] as string);
      return new ReadRow(
        this.batchId,
        line,
        this.rowCount,
        values[REQUEST_VALUE_INDEX.merchantReferenceId] as string,
        values,
        NO_ERRORS,
        cells,
      );
    }
    const currency = upperCased(trimSpaces(cells[REQUEST_VALUE_INDEX.payoutCurrency] as string));
    const amount = trimSpaces(cells[REQUEST_VALUE_INDEX.payoutAmount] as string);
    // Only 3-letter codes, so a hostile file cannot grow the map without bound.
    if (/^[A-Z]{3}$/.test(currency) && isPlainDecimal(amount)) this.addToTotal(currency, amount);
    else this.unsummedRows++;
    // The column of each error, for its letter (only rows with errors pay for this).
    for (const error of result.errors) error.columnIndex = error.field === null ? null : (header.indexOf[error.field as FieldPath] ?? null);
    return new ReadRow(this.batchId, line, this.rowCount, reference, null, result.errors, cells);
  }

  /**
   * A row with more or fewer fields than the header, placed at the first column past the header (or the first
   * one it lacks). A sheet has no delimiters: there, only a value in a column without a header does it.
   */
  private fieldCountError(fields: readonly string[], line: number, header: ResolvedHeader): RowError {
    const width = header.width;
    const extra = fields.length > width;
    // A sheet's row ends at its last value (takeSheetRow): the first value past the header is there.
    const firstValuePast = fields.findIndex((f, i) => i >= width && trimSpaces(f) !== '');
    const index = !extra ? fields.length : this.sheet && firstValuePast >= 0 ? firstValuePast : width;
    const field = extra ? undefined : header.fields[index];
    const place = { file: this.file, line, column: field === undefined ? null : (header.columns[field] ?? null), columnIndex: index };
    const letter = columnLetter(index);
    let message: string;
    if (this.sheet && extra) {
      message = `column ${letter} holds a value but has no header (the header ends at column ${columnLetter(width - 1)}): delete the value, or move it into the column it belongs in`;
    } else if (extra) {
      const past = fields.length - width === 1 ? `column ${letter} has` : `columns ${letter}-${columnLetter(fields.length - 1)} have`;
      message = `row has ${fields.length} fields but the header has ${width}, so ${past} no header (an unquoted delimiter inside a value?): put quotes around the value that holds the delimiter, or delete the extra value`;
    } else {
      message = `row has ${fields.length} fields but the header has ${width}, so it ends before column ${letter} (a missing delimiter, or a line break inside an unquoted value?): give the row one value per header column`;
    }
    return { ...place, field: null, code: 'COLUMN_COUNT_MISMATCH', message };
  }

  private addToTotal(currency: string, amount: string): void {
    let total = this.totals.get(currency);
    if (!total) {
      total = new ExactTotal();
      this.totals.set(currency, total);
    }
    total.add(amount);
  }
}

/** A row's validation with the problems of its workbook cells in place of what the rules made of their text. */
function withCellProblems(
  result: ReturnType<typeof validateCells>,
  problems: ReadonlyMap<FieldPath, CellProblem> | null,
  input: RowCells,
): ReturnType<typeof validateCells> {
  if (problems === null) return result;
  const errors = 'errors' in result ? result.errors.filter((e) => !problems.has(e.field as FieldPath)) : [];
  for (const [field, problem] of problems) {
    errors.push({
      file: input.file,
      line: input.line,
      column: input.columns[field] ?? null,
      field,
      code: problem.code,
      message: problem.message,
    });
  }
  const order = new Map(FIELD_PATHS.map((f, i) => [f as string, i]));
  errors.sort((a, b) => (order.get(a.field ?? '') ?? 0) - (order.get(b.field ?? '') ?? 0));
  return { errors };
}

function csvErrorToFileError(err: CsvError, line: number, rowNumber: number | null): { code: RowError['code']; message: string } {
  switch (err.code) {
    case 'CSV_QUOTE_NOT_CLOSED':
      // Only the end of the file stops a quote that is never closed: a cut upload, or a stray quote.
      return {
        code: 'UNBALANCED_QUOTES',
        message: `${endsInsideRow(rowNumber)}: the record starting on line ${line} opens a quote that is never closed; upload the whole file again, or close the quote`,
      };
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

/** Rows handed to `onRows` a chunk of `size` at a time, in order; the bytes before the parser wait for `taken()`. */
class RowChunks {
  private chunk: ReadRow[] = [];
  private handing: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly size: number,
    private readonly onRows: (rows: ReadRow[]) => Promise<void>,
    private readonly signal: AbortSignal | undefined,
    /** Looks at each chunk before it is handed over, and may refuse rows of it. */
    private readonly review: ((rows: ReadRow[]) => Promise<ReadRow[]>) | null = null,
  ) {}

  add(row: ReadRow): void {
    this.chunk.push(row);
    if (this.chunk.length >= this.size) this.handOver();
  }

  /** Settles once every chunk handed over is taken; rejects with the caller's failure. */
  taken(): Promise<void> {
    return this.handing;
  }

  /** Hands over nothing more (the read stopped): what is handed over is discarded anyway. */
  stop(): void {
    this.stopped = true;
  }

  /** Hands over the rest and waits until it is taken. */
  finish(): Promise<void> {
    if (this.chunk.length > 0) this.handOver();
    return this.handing;
  }

  private handOver(): void {
    const rows = this.chunk;
    this.chunk = [];
    const review = this.review;
    this.handing = this.handing.then(async () => {
      if (this.stopped || this.signal?.aborted) return;
      await this.onRows(review === null ? rows : await review(rows));
    });
    // Whoever waits next sees a failure; until then it is not an unhandled rejection.
    this.handing.catch(() => undefined);
  }
}

/** What stopped a read, as the file error it is; rethrown when it is no problem of the file's content. */
async function noteFailure(reader: BatchReader, failure: unknown, source: TextSource | null, displayName: string): Promise<void> {
  if (failure instanceof StopParsing) return; // the file error is already recorded
  if (failure instanceof SheetRefusal) {
    reader.fileErrorAt(failure.line, failure.code, failure.message);
    return;
  }
  if (failure instanceof InvalidUtf8Error) {
    const utf16 = reader.utf16Advice();
    if (utf16 !== null && !failure.truncated) {
      // Read as UTF-16 the whole file is wrong from its start: lines counted as UTF-8 are none the clerk sees.
      reader.fileErrorAt(1, 'INVALID_UTF8', `${failure.message}: ${utf16}`);
      return;
    }
    const line = source === null ? null : await source.lineAt(failure.offset);
    const message = failure.truncated
      ? `the upload looks incomplete: the file ends inside a UTF-8 character at byte offset ${failure.offset} (line ${line}); upload it again`
      : `${failure.message} (line ${line}): the file is not UTF-8 (saved as "CSV" rather than "CSV UTF-8"?); save it as CSV UTF-8, or set batch.format.encoding to auto or to its encoding (windows-1252)`;
    reader.fileErrorAt(line, 'INVALID_UTF8', message);
    return;
  }
  if (failure instanceof TextDecodeError) {
    reader.fileErrorAt(
      null,
      'INVALID_ENCODING',
      `${failure.message} (batch.format.encoding); save it again in that encoding, or as CSV UTF-8`,
    );
    return;
  }
  if (isZlibError(failure)) {
    reader.fileErrorAt(
      null,
      'GZIP_INVALID',
      failure.code === 'Z_BUF_ERROR'
        ? 'the upload looks incomplete: the gzip file ends before its end; upload it again'
        : `the file is not a valid gzip file (${failure.code}); compress the CSV again with gzip and upload it`,
    );
    return;
  }
  if (failure instanceof CsvError) {
    const cut = reader.cutRecord();
    const mapped = csvErrorToFileError(failure, cut.line, cut.rowNumber);
    reader.fileErrorAt(cut.line, mapped.code, mapped.message);
    return;
  }
  throw isFsError(failure) ? readError(failure, displayName) : failure;
}

function isZlibError(err: unknown): err is Error & { code: string } {
  return (
    err instanceof Error &&
    typeof (err as NodeJS.ErrnoException).code === 'string' &&
    /^Z_/.test((err as NodeJS.ErrnoException).code as string)
  );
}

/** Reads the records of a CSV file (plain or gzipped, in its encoding) into the reader; what stopped it, or null. */
async function readCsvRecords(
  source: TextSource,
  delimiter: Delimiter,
  reader: BatchReader,
  chunks: RowChunks,
  utf8: Utf8Check,
  opts: ParseBatchOptions,
): Promise<unknown> {
  try {
    await pipeline(
      [
        ...source.streams(opts.readChunkBytes ?? READ_CHUNK_BYTES),
        utf8.stream,
        // More bytes for the parser once the rows read so far are taken.
        new Transform({
          transform: (bytes: Buffer, _encoding, callback) => void chunks.taken().then(() => callback(null, bytes), callback),
        }),
        parse({
          bom: true,
          delimiter,
          record_delimiter: RECORD_DELIMITERS,
          relax_column_count: true,
          // Empty lines come as records (and are skipped as blank): every line is counted (./lines.ts).
          skip_empty_lines: false,
          max_record_size: opts.format.maxRecordBytes,
        }),
        // Each record is taken as it is parsed, so a parse error comes after every record before it.
        new Writable({
          objectMode: true,
          write(fields: string[], _encoding, callback) {
            try {
              const row = reader.take(fields);
              if (row !== null) chunks.add(row);
              callback();
            } catch (err) {
              callback(err as Error);
            }
          },
        }),
      ],
      opts.signal ? { signal: opts.signal } : {},
    );
    return null;
  } catch (err) {
    return err;
  }
}

/** Reads the rows of a workbook's sheet into the reader; what stopped it, or null. */
async function readSheetRecords(path: string, reader: BatchReader, chunks: RowChunks, opts: ParseBatchOptions): Promise<unknown> {
  try {
    for await (const row of sheetRows(path, opts.format.sheet, opts.bytes)) {
      opts.signal?.throwIfAborted();
      const read = reader.takeSheetRow(row);
      if (read !== null) {
        chunks.add(read);
        // Rows go to the caller as they are read: no more than a chunk waits.
        await chunks.taken();
      }
    }
    return null;
  } catch (err) {
    return err;
  }
}

/** Reads, checks and validates one batch file. Rejects only when the file cannot be read or onRows fails. */
export async function parseBatchFile(path: string, displayName: string, opts: ParseBatchOptions): Promise<BatchParseResult> {
  const { format } = opts;
  const rules = isCompiled(opts.rules) ? opts.rules : compileRules(opts.rules);
  const kind = batchFileKind(displayName);
  let source: TextSource | null = null;
  let delimiter: Delimiter = ',';
  if (kind !== 'xlsx') {
    try {
      source = await textSource(path, kind, format.encoding, opts.bytes);
    } catch (err) {
      if (!isZlibError(err)) throw readError(err, displayName);
    }
    if (source !== null) delimiter = await batchDelimiter(source, displayName, format);
  }
  const reader = new BatchReader(displayName, opts.batchId ?? '', format, rules, kind === 'xlsx');
  // Read as UTF-8, UTF-16 fails on its first byte or NUL: said as what it is, from its first bytes.
  if (source !== null && source.encoding === 'utf-8') {
    // Bytes that cannot be read (a broken archive) are refused by the read itself.
    reader.utf16 = await sourceHead(source, 64).then(utf16Look, () => null);
  }
  const utf8 = new Utf8Check();
  const lookup = opts.retryOriginals;
  const review =
    lookup === undefined
      ? null
      : (rows: ReadRow[]): Promise<ReadRow[]> =>
          checkRetryRows(
            rows,
            lookup,
            { file: displayName, columns: reader.header?.columns ?? {}, indexOf: reader.header?.indexOf ?? {} },
            (row, error) => reader.refuseLater(row, error),
          );
  const chunks = new RowChunks(Math.max(1, opts.chunkSize ?? 500), opts.onRows, opts.signal, review);
  const failure: unknown =
    kind === 'xlsx'
      ? await readSheetRecords(path, reader, chunks, opts)
      : source === null
        ? Object.assign(new Error('not gzip'), { code: 'Z_DATA_ERROR' })
        : await readCsvRecords(source, delimiter, reader, chunks, utf8, opts);
  if (failure !== null) chunks.stop();
  // Rows still going in are waited for, whatever stopped the read; a failure to take them is the caller's.
  if (failure === null) await chunks.finish();
  else await chunks.taken();
  if (failure !== null) await noteFailure(reader, failure, source, displayName);
  let controlTotals: ControlTotals[] = [];
  if (failure === null) {
    if (reader.header === null) {
      reader.fileErrorAt(
        null,
        'FILE_EMPTY',
        kind === 'xlsx' ? 'the sheet has no header row (it is empty)' : 'file has no header row (it is empty or blank)',
      );
    } else {
      const short = reader.shortLastRow;
      if (short !== null) {
        reader.fileErrorAt(
          short.line,
          'FILE_INCOMPLETE',
          `${endsInsideRow(short.rowNumber)}: its last row, on line ${short.line}, has ${short.fields} of the header's ${reader.header.width} fields; upload the whole file again`,
        );
      }
      const controls = await checkControls(reader, path, opts.sidecarPath, format.requireControlTotals);
      controlTotals = controls.blocks;
      // A file that ends inside a row says so above; one that ends right after a field may hold a cut value.
      // A workbook and a gzip file have their own end markers: a cut one cannot be read at all.
      const unterminated = unterminatedFileProblem({
        endsWithLineBreak: kind !== 'text' || utf8.endsWithLineBreak,
        controlTotalsMatched: controls.matched,
        doneMarker: opts.doneMarker ?? false,
      });
      if (unterminated !== null && short === null) reader.fileErrorAt(reader.lastLine, 'FILE_UNTERMINATED', unterminated);
    }
  }
  return {
    file: displayName,
    delimiter,
    kind,
    encoding: source?.encoding ?? null,
    encodingDetected: source?.detected ?? false,
    fileErrors: reader.fileErrors,
    rowCount: reader.rowCount,
    validCount: reader.validCount,
    invalidCount: reader.invalidCount,
    errorCount: reader.errorCount,
    storedErrors: reader.storedErrors,
    controlTotals,
    totals: Object.fromEntries(
      [...reader.totals.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([c, t]) => [c, decimalText(t.toDecimal())]),
    ),
    unsummedRows: reader.unsummedRows,
    referenceColumn: referenceColumnOf(reader.header),
  };
}

function referenceColumnOf(header: ResolvedHeader | null): BatchParseResult['referenceColumn'] {
  const columnIndex = header?.indexOf.merchantReferenceId;
  if (header === null || columnIndex === undefined) return null;
  return { column: header.columns.merchantReferenceId ?? '', columnIndex };
}

/** The file's field delimiter: configured, or decided from its header line. */
export async function batchDelimiter(source: TextSource, displayName: string, format: BatchFormatOptions): Promise<Delimiter> {
  if (format.delimiter !== 'auto') return format.delimiter;
  try {
    // Lenient decoding is fine here: the streaming pass rejects bad bytes with their offset.
    return sniffDelimiter(new TextDecoder('utf-8').decode(await sourceHead(source, format.maxRecordBytes)));
  } catch (err) {
    if (err instanceof TextDecodeError || isZlibError(err)) return ',';
    throw readError(err, displayName);
  }
}

/**
 * Checks the control totals (trailer and sidecar). `matched`: a trailer is present and every block matches the
 * rows. Only a trailer vouches for the file's end: it follows the rows, so a cut upload loses it; a sidecar is an
 * upload of its own (often sent first), and a cut inside the last value (an amount, an account number) can leave
 * its count and totals matching.
 */
async function checkControls(
  reader: BatchReader,
  path: string,
  sidecarPath: string | null | undefined,
  required: boolean,
): Promise<{ blocks: ControlTotals[]; matched: boolean }> {
  const { file } = reader;
  const blocks: ControlTotals[] = [];
  const errors: RowError[] = [];
  const trailer = reader.trailer.finish(reader.lastLine);
  if (trailer.error) errors.push(trailer.error);
  if (trailer.controls) blocks.push(trailer.controls);
  const sidecarFile = sidecarPath === null ? null : (sidecarPath ?? `${path}.ctl`);
  if (sidecarFile !== null) {
    let sidecar: Awaited<ReturnType<typeof readSidecar>>;
    try {
      sidecar = await readSidecar(sidecarFile, `${file}.ctl`, reader.rules);
    } catch (err) {
      throw readError(err, `${file}.ctl`);
    }
    if (sidecar) {
      errors.push(...sidecar.errors);
      if (sidecar.controls) blocks.push(sidecar.controls);
    }
  }
  if (blocks.length === 0 && required) {
    errors.push(
      fileErrorOf(file, null, 'CONTROL_MISSING', `control totals are required: add #CONTROL trailer lines or a ${file}.ctl file`),
    );
  }
  const found = reader.found();
  for (const block of blocks) errors.push(...compareControls(block, found));
  for (const error of errors) reader.fileError(error);
  return { blocks, matched: trailer.controls !== null && errors.length === 0 };
}

function readError(err: unknown, displayName: string): BatchReadError {
  const code = isFsError(err) ? (err.code ?? 'unknown error') : 'unknown error';
  return new BatchReadError('BATCH_READ_FAILED', `cannot read batch file ${displayName}: ${code}`, { cause: err });
}

/**
 * The .xlsx twin of an outbox CSV: the same rows in typed cells (identifiers as TEXT, amounts as NUMBER with
 * the currency's minor units, times as DATE in `outbox.timeZone`, named in the header), a frozen filterable
 * header, columns as wide as their header and first rows, and a "Summary" sheet. The CSV stays the exact
 * record: a number is parsed from the decimal text, never computed, and an amount whose number the intake would
 * not read back as the same decimal (more than 15 significant digits, say) is a text cell. Written with exceljs's
 * streaming WorkbookWriter through writeFileAtomic; exceljs is loaded on the first .xlsx written.
 */
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { PassThrough } from 'node:stream';
import { basename, dirname, join } from 'node:path';
import type ExcelJS from 'exceljs';
import { Decimal, isSummableAmount, normalizeAmount } from '../domain/money.js';
import { exactNumberText } from '../ingest/xlsx/cells.js';
import { writeFileAtomic } from './atomic.js';
import { readCsvFile, readCsvRecords } from './csv.js';
import { currencyDecimals } from '../domain/decimals.js';
import { ReportError } from './errors.js';
import { ENDED_STATUSES, batchVerdict, type AckCurrencyTotal } from './ack-totals.js';
import {
  ACK_COLUMNS,
  outboxFileName,
  resultColumns,
  resultFileName,
  summaryColumns,
  summaryRecords,
  type ApprovalAudit,
} from './format.js';
import { SummaryAccumulator } from './summary.js';
import type { AckWriteOptions, AtomicWriteOptions, EndedStatus, BatchIdentity, BatchSummary, RowOutcome } from './types.js';
import { ackCurrencyTotals, ackLead, ackRecordsInOrder, fileVerdicts, resultRecords, type AckRowSource, type Rows } from './writers.js';

/** How the text of a column becomes a cell. */
export type XlsxCellType =
  | 'text' // always a text cell (format `@`), exactly as in the CSV
  | 'integer' // a number cell when the text is a whole number (line numbers, counts)
  | 'amount' // a number cell formatted with the minor units of the currency in `currencyColumn`
  | 'decimal' // a number cell formatted with as many decimals as written (exchange rates)
  | 'time'; // an ISO 8601 instant as a date cell, the wall-clock time in the workbook's time zone

export interface XlsxColumn {
  header: string;
  type: XlsxCellType;
  /** Narrowest width in characters; a column is widened to fit its header and the first rows. */
  width: number;
  /** For `amount`: the header of the column holding the currency code. */
  currencyColumn?: string;
  /**
   * For `amount`: show thousands separators (default true). A file read back as input (the retry file)
   * shows none, so the text a spreadsheet shows and saves is a plain decimal.
   */
  grouping?: boolean;
}

export interface XlsxSheet {
  name: string;
  columns: readonly XlsxColumn[];
  /** Records as CSV text cells; a function is called only when this sheet's turn comes (the summary). */
  records: Rows<readonly string[]> | (() => Rows<readonly string[]>);
}

export interface XlsxOptions extends AtomicWriteOptions {
  /** Minor units overriding the built-in table (the validation rules' `minorUnits`). */
  minorUnits?: Readonly<Record<string, number>>;
  /** IANA time zone the date cells show (config `outbox.timeZone`, default UTC); named in their headers. */
  timeZone?: string;
  /** Rows per sheet, the header included (default SHEET_ROWS); the rest go on in `<name> (2)`, …. */
  sheetRows?: number;
}

export const DEFAULT_TIME_ZONE = 'UTC';

/** Rows a sheet of Excel or LibreOffice holds, the header included. */
export const SHEET_ROWS = 1_048_576;

/** Number format with exactly `decimals` decimals: 2 -> `#,##0.00`, 0 -> `#,##0` (without grouping: `0.00`, `0`). */
export function decimalsFormat(decimals: number, grouping = true): string {
  const whole = grouping ? '#,##0' : '0';
  return decimals > 0 ? `${whole}.${'0'.repeat(decimals)}` : whole;
}

/** How a date cell shows: ISO order, 24-hour clock; milliseconds where the text had them. */
export const TIME_FORMAT = 'yyyy-mm-dd hh:mm:ss';
export const TIME_FORMAT_MS = 'yyyy-mm-dd hh:mm:ss.000';

const zoneFormats = new Map<string, Intl.DateTimeFormat>();

function zoneFormat(timeZone: string): Intl.DateTimeFormat {
  let f = zoneFormats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    zoneFormats.set(timeZone, f);
  }
  return f;
}

/** An ISO 8601 instant with a zone (`Z` or an offset); anything else stays text. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * The wall-clock time of an instant in `timeZone`, as the Date a spreadsheet
 * cell holds: a spreadsheet date has no zone, and exceljs writes a Date by
 * its UTC fields, so the zone's fields are put there. Null when the text is
 * not an instant.
 */
export function wallClockDate(iso: string, timeZone: string): Date | null {
  if (!INSTANT.test(iso)) return null;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return null;
  const parts: Record<string, number> = {};
  for (const p of zoneFormat(timeZone).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const { year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0 } = parts;
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second, ((ms % 1000) + 1000) % 1000));
}

export const TEXT_FORMAT = '@';

const INTEGER = /^-?\d{1,15}$/;
const FRACTION = /\.(\d+)$/;

function writtenDecimals(text: string): number {
  return FRACTION.exec(text)?.[1]?.length ?? 0;
}

/**
 * The double shown for a decimal amount, or null when the intake would not read it back as the same decimal.
 * A spreadsheet keeps and shows at most 15 significant digits: a longer decimal a double happens to hold would
 * still show, and be saved back, altered. Display only.
 */
export function displayNumber(text: string): number | null {
  if (!isSummableAmount(text)) return null;
  const exact = new Decimal(normalizeAmount(text));
  const shown = exact.toNumber();
  const read = exactNumberText(shown);
  return read !== null && new Decimal(read).eq(exact) ? shown : null;
}

export interface XlsxCellValue {
  value: string | number | Date | null;
  numFmt: string | null;
}

/** One cell from its CSV text (pure); an amount never shows fewer decimals than written. */
export function xlsxCellValue(
  text: string,
  type: XlsxCellType,
  currency = '',
  overrides?: Readonly<Record<string, number>>,
  cell: { timeZone?: string; grouping?: boolean } = {},
): XlsxCellValue {
  if (text === '') return { value: null, numFmt: null };
  switch (type) {
    case 'text':
      return { value: text, numFmt: TEXT_FORMAT };
    case 'integer':
      return INTEGER.test(text) ? { value: Number.parseInt(text, 10), numFmt: null } : { value: text, numFmt: TEXT_FORMAT };
    case 'amount':
    case 'decimal': {
      const shown = displayNumber(text);
      if (shown === null) return { value: text, numFmt: TEXT_FORMAT };
      const own = writtenDecimals(text);
      const decimals = type === 'amount' ? Math.max(currencyDecimals(currency, overrides) ?? own, own) : own;
      return { value: shown, numFmt: decimalsFormat(decimals, cell.grouping ?? true) };
    }
    case 'time': {
      const date = wallClockDate(text, cell.timeZone ?? DEFAULT_TIME_ZONE);
      if (date === null) return { value: text, numFmt: TEXT_FORMAT };
      return { value: date, numFmt: date.getUTCMilliseconds() === 0 && !/\.\d/.test(text) ? TIME_FORMAT : TIME_FORMAT_MS };
    }
  }
}

/** The header a column shows: a time column names its zone (`complete_time (UTC)`). */
export function xlsxHeader(column: Pick<XlsxColumn, 'header' | 'type'>, timeZone = DEFAULT_TIME_ZONE): string {
  return column.type === 'time' ? `${column.header} (${timeZone})` : column.header;
}

/** Characters a cell takes on screen, roughly as a spreadsheet shows it (number formats add separators and decimals). */
export function shownWidth(cell: XlsxCellValue): number {
  if (cell.value === null) return 0;
  if (cell.value instanceof Date) return cell.numFmt === TIME_FORMAT_MS ? TIME_FORMAT_MS.length : TIME_FORMAT.length;
  if (typeof cell.value === 'number') {
    const whole = String(Math.trunc(Math.abs(cell.value))).length;
    const fmt = cell.numFmt ?? '';
    const decimals = FRACTION.exec(fmt)?.[1]?.length ?? 0;
    const groups = fmt.includes(',') ? Math.floor((whole - 1) / 3) : 0;
    return whole + groups + (decimals > 0 ? decimals + 1 : 0) + (cell.value < 0 ? 1 : 0);
  }
  let n = 0;
  for (const ch of cell.value) n += ch.codePointAt(0)! > 0x2e80 ? 2 : 1;
  return n;
}

/** The Summary column name of an ack's accepted rows already ended in each status when it was written (late). */
const ENDED_COLUMN_NAMES: Record<EndedStatus, string> = {
  PAID: 'already_paid',
  CANCELLED: 'already_cancelled',
  REJECTED: 'already_refused',
  DISPUTED: 'contradicted',
};

/** Those columns, in the order the ack's totals lines name the statuses. */
const ENDED_COLUMNS: readonly [EndedStatus, string][] = ENDED_STATUSES.map((s) => [s, ENDED_COLUMN_NAMES[s]]);

function endedColumnTypes(): Record<string, Omit<XlsxColumn, 'header'>> {
  return Object.fromEntries(
    ENDED_COLUMNS.flatMap(([, name]) => [
      // As wide as their headers: the names are long.
      [`${name}_rows`, { type: 'integer', width: name.length + 7 }],
      [`${name}_amount`, { type: 'amount', width: name.length + 9, currencyColumn: 'currency' }],
    ]),
  );
}

/** Type and width of every column name the outbox files use; unknown names are text. */
const COLUMN_TYPES: Readonly<Record<string, Omit<XlsxColumn, 'header'>>> = {
  batch_id: { type: 'text', width: 28 },
  file: { type: 'text', width: 32 },
  line: { type: 'integer', width: 8 },
  merchant_reference_id: { type: 'text', width: 26 },
  status: { type: 'text', width: 14 },
  service_status: { type: 'text', width: 14 },
  verdict: { type: 'text', width: 10 },
  payout_id: { type: 'text', width: 26 },
  payout_currency: { type: 'text', width: 9 },
  payout_amount: { type: 'amount', width: 18, currencyColumn: 'payout_currency' },
  deduction_currency: { type: 'text', width: 9 },
  deduction_amount: { type: 'amount', width: 18, currencyColumn: 'deduction_currency' },
  rate: { type: 'decimal', width: 14 },
  total_fee: { type: 'amount', width: 14, currencyColumn: 'fee_currency' },
  fee_currency: { type: 'text', width: 9 },
  beneficiary_account_name: { type: 'text', width: 28 },
  beneficiary_account_number: { type: 'text', width: 28 },
  created_at: { type: 'time', width: 24 },
  create_time: { type: 'time', width: 20 },
  complete_time: { type: 'time', width: 20 },
  reason: { type: 'text', width: 48 },
  approval: { type: 'text', width: 48 },
  measure: { type: 'text', width: 18 },
  currency: { type: 'text', width: 9 },
  row_count: { type: 'integer', width: 11 },
  amount: { type: 'amount', width: 22, currencyColumn: 'currency' },
  rows_not_summed: { type: 'integer', width: 15 },
  accepted_rows: { type: 'integer', width: 8 },
  accepted_amount: { type: 'amount', width: 14, currencyColumn: 'currency' },
  rejected_rows: { type: 'integer', width: 8 },
  rejected_amount: { type: 'amount', width: 14, currencyColumn: 'currency' },
  ...endedColumnTypes(),
};

/** Typed columns for CSV headers, by column name. */
export function xlsxColumns(headers: readonly string[]): XlsxColumn[] {
  return headers.map((header) => ({ header, ...(COLUMN_TYPES[header] ?? { type: 'text', width: 20 }) }));
}

/** The sheet of summary lines, as in `<file>.summary.csv` (with its `approval` column when the batch has an audit). */
export function summarySheet(summary: () => BatchSummary, approval: string | null = null): XlsxSheet {
  return { name: 'Summary', columns: xlsxColumns(summaryColumns(approval)), records: () => summaryRecords(summary(), approval) };
}

/** `report.csv` -> `report<ending>` beside it; a name without `.csv` gets `ending` appended. */
export function besideCsv(csvPath: string, ending: string): string {
  const name = basename(csvPath);
  const stem = name.toLowerCase().endsWith('.csv') ? name.slice(0, -4) : name;
  return join(dirname(csvPath), `${stem}${ending}`);
}

/** `report.csv` -> `report.xlsx`. */
export const xlsxPathFor = (csvPath: string): string => besideCsv(csvPath, '.xlsx');

/** How the twin of an outbox CSV is made from it: its sheet, and how the CSV is read. */
export interface CsvTwin {
  sheet: string;
  /** The sheet's columns, from the CSV's header record. */
  columns: (header: readonly string[]) => readonly XlsxColumn[];
  /** The CSV's delimiter and encoding (default `,` and UTF-8). */
  read?: { delimiter?: string; encoding?: string };
}

/**
 * The .xlsx twin of an outbox CSV (`x.csv` -> `x.xlsx`), one sheet of the CSV's records as written, read as
 * the intake reads a file. `rows` is how many records the CSV was written with: a twin that would hold
 * another count is refused and none is left at its name, so the CSV stands alone (the error says so).
 */
export async function writeCsvTwin(csvPath: string, rows: number, twin: CsvTwin, opts: XlsxOptions = {}): Promise<string> {
  const path = xlsxPathFor(csvPath);
  try {
    const { header, rows: records } = await readCsvFile(csvPath, twin.read);
    const sheet = { name: twin.sheet, columns: twin.columns(header ?? []), records: sameCount(records, rows, csvPath) };
    await writeXlsxFile(path, [sheet], opts);
  } catch (err) {
    // A twin written before is of an earlier state of the CSV (a remainder is written again as an upload goes on).
    await rm(path, { force: true });
    throw err;
  }
  return path;
}

/** The records, failing at the end (so the twin is not written) when they are not the `rows` the CSV was written with. */
async function* sameCount(records: AsyncIterable<string[]>, rows: number, csvPath: string): AsyncGenerator<string[]> {
  let n = 0;
  for await (const record of records) {
    n++;
    yield record;
  }
  if (n !== rows) {
    throw new ReportError(
      'REPORT_TWIN_ROWS',
      `${basename(csvPath)} was written with ${rows} row(s) but reads back as ${n}: no .xlsx twin is written; use the CSV, which holds every row`,
    );
  }
}

// ---------------------------------------------------------------------------
// Writing

/** Rows added between two waits for the zip (letZipCatchUp). */
const DRAIN_CHECK_ROWS = 32;
const HEADER_FONT = { bold: true };

/** Cell styles are shared objects: exceljs caches a style id per object, so per-cell styling stays cheap. */
class StyleCache {
  private readonly styles = new Map<string, Partial<ExcelJS.Style>>();

  get(numFmt: string): Partial<ExcelJS.Style> {
    let style = this.styles.get(numFmt);
    if (!style) this.styles.set(numFmt, (style = { numFmt }));
    return style;
  }
}

/**
 * Lets the zip catch up: exceljs's streaming writer has no backpressure, so rows wait for `out` to drain when
 * it is full, and otherwise the event loop turns once so the zip compresses what it was given.
 */
async function letZipCatchUp(out: PassThrough, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  if (out.writableNeedDrain) await once(out, 'drain', { signal });
  else await new Promise<void>((resolve) => setImmediate(resolve));
}

function currencyIndexes(columns: readonly XlsxColumn[]): (number | null)[] {
  return columns.map((c) => {
    if (c.type !== 'amount' || c.currencyColumn === undefined) return null;
    const i = columns.findIndex((x) => x.header === c.currencyColumn);
    return i < 0 ? null : i;
  });
}

/** Rows looked at before the columns are laid out: a stream cannot be measured to its end before it is written. */
const MEASURED_ROWS = 1000;
/** Room for the filter button beside a header, and a margin beside a cell. */
const FILTER_BUTTON = 3;
const MARGIN = 1;
/** A reason can run long: its column stops widening here (the cell text is whole). */
const MAX_WIDTH = 80;

/** Widths that fit: at least the column's own, its header with the filter button, and every measured cell. */
export function fittedWidths(headers: readonly string[], columns: readonly XlsxColumn[], cells: readonly XlsxCellValue[][]): number[] {
  return columns.map((c, i) => {
    let w = Math.max(c.width, (headers[i] ?? '').length + FILTER_BUTTON);
    for (const row of cells) {
      const cell = row[i];
      if (cell) w = Math.max(w, shownWidth(cell) + MARGIN);
    }
    return Math.min(w, Math.max(MAX_WIDTH, (headers[i] ?? '').length + FILTER_BUTTON));
  });
}

async function writeSheet(
  wb: ExcelJS.stream.xlsx.WorkbookWriter,
  out: PassThrough,
  sheet: XlsxSheet,
  styles: StyleCache,
  opts: XlsxOptions,
  signal: AbortSignal,
): Promise<void> {
  const { columns } = sheet;
  const timeZone = opts.timeZone ?? DEFAULT_TIME_ZONE;
  const headers = columns.map((c) => xlsxHeader(c, timeZone));
  const currencyAt = currencyIndexes(columns);
  const cellsOf = (record: readonly string[]): XlsxCellValue[] => {
    const cells = columns.map((column, i) => {
      const ci = currencyAt[i];
      const currency = ci === null || ci === undefined ? '' : (record[ci] ?? '');
      return xlsxCellValue(record[i] ?? '', column.type, currency, opts.minorUnits, { timeZone, grouping: column.grouping });
    });
    // Cells past the header are the record's too: as text, so the row shows whole (the intake refuses it).
    for (let i = columns.length; i < record.length; i++) cells.push(xlsxCellValue(record[i] as string, 'text'));
    return cells;
  };

  // The first rows are typed before the sheet opens, so the columns fit what they show.
  const records = typeof sheet.records === 'function' ? sheet.records() : sheet.records;
  const iterator = (Symbol.asyncIterator in records ? records[Symbol.asyncIterator]() : records[Symbol.iterator]()) as
    AsyncIterator<readonly string[]> | Iterator<readonly string[]>;
  const measured: XlsxCellValue[][] = [];
  let done = false;
  while (measured.length < MEASURED_ROWS) {
    const next = await iterator.next();
    if (next.done) {
      done = true;
      break;
    }
    measured.push(cellsOf(next.value));
  }

  const widths = fittedWidths(headers, columns, measured).map((width) => ({ width }));
  const open = (part: number): ExcelJS.Worksheet => {
    const ws = wb.addWorksheet(part === 1 ? sheet.name : `${sheet.name} (${part})`, {
      views: [{ state: 'frozen', xSplit: 0, ySplit: 1, topLeftCell: 'A2', activeCell: 'A2' }],
    });
    ws.columns = widths;
    if (columns.length > 0) ws.autoFilter = { from: { row: 1, column: 1 }, to: { row: 1, column: columns.length } };
    const header = ws.addRow(headers);
    header.eachCell((cell) => {
      cell.font = HEADER_FONT;
    });
    header.commit();
    return ws;
  };

  // A sheet holds at most SHEET_ROWS rows (the spreadsheets' limit): more go on in "<name> (2)", and so on.
  const perSheet = Math.max(1, (opts.sheetRows ?? SHEET_ROWS) - 1);
  let part = 1;
  let ws = open(part);
  let n = 0;
  let inSheet = 0;
  const put = async (cells: XlsxCellValue[]): Promise<void> => {
    if (inSheet === perSheet) {
      ws.commit();
      ws = open(++part);
      inSheet = 0;
    }
    const row = ws.addRow([]);
    cells.forEach((cell, i) => {
      if (cell.value === null) return;
      const target = row.getCell(i + 1);
      target.value = cell.value;
      if (cell.numFmt !== null) target.style = styles.get(cell.numFmt);
    });
    row.commit();
    inSheet++;
    if (++n % DRAIN_CHECK_ROWS === 0) await letZipCatchUp(out, signal);
  };
  for (const cells of measured) await put(cells);
  measured.length = 0;
  if (!done) for (let r = await iterator.next(); !r.done; r = await iterator.next()) await put(cellsOf(r.value));
  ws.commit();
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Writes a workbook atomically at `path`; a failure on either side of the PassThrough stops the other. */
export async function writeXlsxFile(path: string, sheets: readonly XlsxSheet[], opts: XlsxOptions = {}): Promise<void> {
  // Before anything is opened: a failed import leaves no temp file behind.
  const { default: excel } = await import('exceljs');
  const zipBytes = new PassThrough();
  // Errors reach the caller through writeFileAtomic's read of this stream; once that read has ended, a late
  // write from the zip (after a failure) must not become an unhandled 'error' event.
  zipBytes.on('error', () => undefined);
  const stop = new AbortController();
  const consumer = writeFileAtomic(path, zipBytes, opts).catch((err: unknown) => {
    stop.abort(err);
    throw err;
  });
  const producer = (async () => {
    const wb = new excel.stream.xlsx.WorkbookWriter({ stream: zipBytes, useStyles: true, useSharedStrings: false });
    const styles = new StyleCache();
    for (const sheet of sheets) await writeSheet(wb, zipBytes, sheet, styles, opts, stop.signal);
    await abortable(wb.commit(), stop.signal);
  })().catch((err: unknown) => {
    zipBytes.destroy(err instanceof Error ? err : new Error(String(err)));
    throw err;
  });
  const [written, produced] = await Promise.allSettled([consumer, producer]);
  // When the file side failed first, the producer only saw the abort that stopped it: report the cause.
  if (stop.signal.aborted && written.status === 'rejected') throw written.reason;
  if (produced.status === 'rejected') throw produced.reason;
  if (written.status === 'rejected') throw written.reason;
}

export interface XlsxReport {
  path: string;
  summary: BatchSummary;
}

async function* outcomeRecords(outcomes: Rows<RowOutcome>, record: (o: RowOutcome) => string[]): AsyncGenerator<string[]> {
  for await (const o of outcomes) yield record(o);
}

async function writeOutcomesXlsx(
  path: string,
  sheetName: string,
  outcomes: Rows<RowOutcome>,
  requireTerminal: boolean,
  opts: XlsxOptions & ApprovalAudit & { corrected?: boolean },
): Promise<XlsxReport> {
  const acc = new SummaryAccumulator();
  const approval = opts.approval ?? null;
  const corrected = opts.corrected === true;
  const main: XlsxSheet = {
    name: sheetName,
    columns: xlsxColumns(resultColumns(approval, corrected)),
    records: outcomeRecords(outcomes, resultRecords({ requireTerminal, summary: acc, approval, corrected })),
  };
  await writeXlsxFile(path, [main, summarySheet(() => acc.summary(), approval)], opts);
  return { path, summary: acc.summary() };
}

/** `<fileName>.result.xlsx`: sheets "Result" and "Summary", with the CSV's `approval` column when given; every row must be terminal. */
export function writeResultXlsx(
  dir: string,
  identity: BatchIdentity,
  outcomes: Rows<RowOutcome>,
  opts: XlsxOptions & ApprovalAudit = {},
): Promise<XlsxReport> {
  const path = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'result', 'xlsx'));
  return writeOutcomesXlsx(path, 'Result', outcomes, true, opts);
}

/** `<fileName>.result.corrected-<n>.xlsx`: the twin of the corrected result CSV, its `correction` column included. */
export function writeCorrectedResultXlsx(
  dir: string,
  identity: BatchIdentity,
  correction: number,
  outcomes: Rows<RowOutcome>,
  opts: XlsxOptions & ApprovalAudit = {},
): Promise<XlsxReport> {
  const path = join(dir, resultFileName(identity.outboxName ?? identity.fileName, correction, 'xlsx'));
  return writeOutcomesXlsx(path, 'Result', outcomes, true, { ...opts, corrected: true });
}

/** The interim report as .xlsx (PENDING rows allowed), at a path the caller chooses (see `xlsxPathFor`). */
export function writeInterimReportXlsx(path: string, outcomes: Rows<RowOutcome>, opts: XlsxOptions = {}): Promise<XlsxReport> {
  return writeOutcomesXlsx(path, 'Report', outcomes, false, { ...opts, approval: null });
}

/** The Summary sheet of an ack: per payout currency, the rows and amounts read, accepted and rejected, and the verdict. */
export const ACK_TOTALS_COLUMNS = [
  'currency',
  'row_count',
  'amount',
  'accepted_rows',
  'accepted_amount',
  'rejected_rows',
  'rejected_amount',
  'rows_not_summed',
  'verdict',
  // After the verdict: a program that reads the columns by position finds the earlier ones where they were.
  ...ENDED_COLUMNS.flatMap(([, name]) => [`${name}_rows`, `${name}_amount`]),
];

function ackTotalsRecord(t: AckCurrencyTotal, verdict: string): string[] {
  const n = String;
  const ended = ENDED_COLUMNS.flatMap(([status]) => {
    const p = t.ended?.[status];
    return [n(p?.rows ?? 0), p?.amount ?? '0'];
  });
  return [
    t.currency,
    n(t.rows),
    t.amount,
    n(t.accepted.rows),
    t.accepted.amount,
    n(t.rejected.rows),
    t.rejected.amount,
    n(t.rowsNotSummed),
    verdict,
    ...ended,
  ];
}

async function* ackSheetRecords(
  identity: Pick<BatchIdentity, 'batchId' | 'fileName'>,
  lead: readonly string[][],
  rows: AckRowSource,
): AsyncGenerator<string[]> {
  yield* lead;
  // Rows written ahead for the CSV: the twin shows the very records its CSV holds, not rows read again later.
  if ('ahead' in rows) {
    yield* readCsvRecords(rows.ahead.path);
    return;
  }
  const one = ackRecordsInOrder(identity);
  if ('pages' in rows) {
    for await (const page of rows.pages) for (const row of page) yield one(row);
  } else for await (const row of rows) yield one(row);
}

/**
 * `<fileName>.ack.xlsx`: the ack's records as in the CSV (totals lines, the file-level line, a verdict per
 * row; sheet "Ack"), and sheet "Summary" with the totals per currency as numbers. Rows as pages, or written
 * ahead (the CSV's), need `opts.totals`, as for the CSV.
 */
export async function writeAckXlsx(
  dir: string,
  identity: BatchIdentity,
  rows: AckRowSource,
  opts: AckWriteOptions & XlsxOptions = {},
): Promise<string> {
  const path = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'ack', 'xlsx'));
  if ('ahead' in rows && !opts.totals)
    throw new ReportError('REPORT_ACK_TOTALS', 'an ack whose rows were written ahead needs their totals');
  const currencies = ackCurrencyTotals(rows, opts) ?? [];
  const verdict = batchVerdict(currencies, fileVerdicts(opts));
  const lead = ackLead(identity, rows, { ...opts, totals: currencies });
  const totals: XlsxSheet = {
    name: 'Summary',
    columns: xlsxColumns(ACK_TOTALS_COLUMNS),
    records:
      currencies.length > 0
        ? currencies.map((t) => ackTotalsRecord(t, verdict))
        : [['', '0', '', '0', '', '0', '', '0', verdict, ...ENDED_COLUMNS.flatMap(() => ['0', ''])]],
  };
  await writeXlsxFile(
    path,
    [{ name: 'Ack', columns: xlsxColumns(ACK_COLUMNS), records: ackSheetRecords(identity, lead, rows) }, totals],
    opts,
  );
  return path;
}

/** `<fileName>.summary.xlsx`: the summary file's lines, typed (one sheet, "Summary"), with its `approval` column when given. */
export async function writeSummaryXlsx(
  dir: string,
  identity: BatchIdentity,
  summary: BatchSummary,
  opts: XlsxOptions & ApprovalAudit = {},
): Promise<string> {
  const path = join(dir, outboxFileName(identity.outboxName ?? identity.fileName, 'summary', 'xlsx'));
  await writeXlsxFile(path, [summarySheet(() => summary, opts.approval ?? null)], opts);
  return path;
}

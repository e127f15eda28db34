/**
 * The .xlsx twin of an outbox CSV: the same rows in typed cells (identifiers as TEXT, amounts as NUMBER with
 * the currency's minor units), a frozen filterable header, and a "Summary" sheet. The CSV stays the exact
 * record: an amount whose double would not read back as the same decimal is a text cell. Written with
 * exceljs's streaming WorkbookWriter through writeFileAtomic; exceljs is loaded on the first .xlsx written.
 */
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { basename, dirname, join } from 'node:path';
import type ExcelJS from 'exceljs';
import { Decimal, normalizeAmount } from '../domain/money.js';
import { ISO_4217_MINOR_UNITS } from '../domain/iso4217.js';
import { writeFileAtomic } from './atomic.js';
import { RESULT_COLUMNS, SUMMARY_COLUMNS, assertPlainFileName, resultRecord, summaryRecord } from './format.js';
import { ReportError } from './errors.js';
import { SummaryAccumulator, isSummableAmount } from './summary.js';
import type { AtomicWriteOptions, BatchIdentity, BatchSummary, RowOutcome } from './types.js';
import { LineOrder } from './writers.js';

type Rows<T> = AsyncIterable<T> | Iterable<T>;

/** How the text of a column becomes a cell. */
export type XlsxCellType =
  | 'text' // always a text cell (format `@`), exactly as in the CSV
  | 'integer' // a number cell when the text is a whole number (line numbers, counts)
  | 'amount' // a number cell formatted with the minor units of the currency in `currencyColumn`
  | 'decimal'; // a number cell formatted with as many decimals as written (exchange rates)

export interface XlsxColumn {
  header: string;
  type: XlsxCellType;
  /** Width in characters. */
  width: number;
  /** For `amount`: the header of the column holding the currency code. */
  currencyColumn?: string;
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
}

/** Decimals shown for the stablecoins funding payouts (both carry 6 on chain). */
export const STABLECOIN_DECIMALS: ReadonlyMap<string, number> = new Map([
  ['USDT', 6],
  ['USDC', 6],
]);

/** Minor units of a currency (override, stablecoin, ISO 4217), undefined when unknown. */
export function currencyDecimals(currency: string, overrides?: Readonly<Record<string, number>>): number | undefined {
  return overrides?.[currency] ?? STABLECOIN_DECIMALS.get(currency) ?? ISO_4217_MINOR_UNITS.get(currency);
}

/** Number format with grouping and exactly `decimals` decimals: 2 -> `#,##0.00`, 0 -> `#,##0`. */
export function decimalsFormat(decimals: number): string {
  return decimals > 0 ? `#,##0.${'0'.repeat(decimals)}` : '#,##0';
}

export const TEXT_FORMAT = '@';

const INTEGER = /^-?\d{1,15}$/;
const FRACTION = /\.(\d+)$/;

function writtenDecimals(text: string): number {
  return FRACTION.exec(text)?.[1]?.length ?? 0;
}

/** The double shown for a decimal amount, or null when it would not read back as the same decimal. Display only. */
export function displayNumber(text: string): number | null {
  if (!isSummableAmount(text)) return null;
  const exact = new Decimal(normalizeAmount(text));
  const shown = exact.toNumber();
  return Number.isFinite(shown) && new Decimal(String(shown)).eq(exact) ? shown : null;
}

export interface XlsxCellValue {
  value: string | number | null;
  numFmt: string | null;
}

/** One cell from its CSV text (pure); an amount never shows fewer decimals than written. */
export function xlsxCellValue(
  text: string,
  type: XlsxCellType,
  currency = '',
  overrides?: Readonly<Record<string, number>>,
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
      return { value: shown, numFmt: decimalsFormat(decimals) };
    }
  }
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
  created_at: { type: 'text', width: 24 },
  create_time: { type: 'text', width: 24 },
  complete_time: { type: 'text', width: 24 },
  reason: { type: 'text', width: 48 },
  measure: { type: 'text', width: 18 },
  currency: { type: 'text', width: 9 },
  row_count: { type: 'integer', width: 11 },
  amount: { type: 'amount', width: 22, currencyColumn: 'currency' },
  rows_not_summed: { type: 'integer', width: 15 },
};

/** Typed columns for CSV headers, by column name. */
export function xlsxColumns(headers: readonly string[]): XlsxColumn[] {
  return headers.map((header) => ({ header, ...(COLUMN_TYPES[header] ?? { type: 'text', width: 20 }) }));
}

/** The sheet of summary lines, as in `<file>.summary.csv`. */
export function summarySheet(summary: () => BatchSummary): XlsxSheet {
  return { name: 'Summary', columns: xlsxColumns(SUMMARY_COLUMNS), records: () => summary().rows.map(summaryRecord) };
}

/** `report.csv` -> `report.xlsx`; a name without `.csv` gets `.xlsx` appended. */
export function xlsxPathFor(csvPath: string): string {
  const name = basename(csvPath);
  const stem = name.toLowerCase().endsWith('.csv') ? name.slice(0, -4) : name;
  return join(dirname(csvPath), `${stem}.xlsx`);
}

export function resultXlsxFileName(fileName: string): string {
  assertPlainFileName(fileName);
  return `${fileName}.result.xlsx`;
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

async function writeSheet(
  wb: ExcelJS.stream.xlsx.WorkbookWriter,
  out: PassThrough,
  sheet: XlsxSheet,
  styles: StyleCache,
  opts: XlsxOptions,
  signal: AbortSignal,
): Promise<void> {
  const { columns } = sheet;
  const ws = wb.addWorksheet(sheet.name, {
    views: [{ state: 'frozen', xSplit: 0, ySplit: 1, topLeftCell: 'A2', activeCell: 'A2' }],
  });
  ws.columns = columns.map((c) => ({ width: c.width }));
  if (columns.length > 0) ws.autoFilter = { from: { row: 1, column: 1 }, to: { row: 1, column: columns.length } };
  const header = ws.addRow(columns.map((c) => c.header));
  header.eachCell((cell) => {
    cell.font = HEADER_FONT;
  });
  header.commit();

  const currencyAt = currencyIndexes(columns);
  const records = typeof sheet.records === 'function' ? sheet.records() : sheet.records;
  let n = 0;
  for await (const record of records) {
    const row = ws.addRow([]);
    columns.forEach((column, i) => {
      const ci = currencyAt[i];
      const currency = ci === null || ci === undefined ? '' : (record[ci] ?? '');
      const cell = xlsxCellValue(record[i] ?? '', column.type, currency, opts.minorUnits);
      if (cell.value === null) return;
      const target = row.getCell(i + 1);
      target.value = cell.value;
      if (cell.numFmt !== null) target.style = styles.get(cell.numFmt);
    });
    row.commit();
    if (++n % DRAIN_CHECK_ROWS === 0) await letZipCatchUp(out, signal);
  }
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

async function* outcomeRecords(outcomes: Rows<RowOutcome>, requireTerminal: boolean, acc: SummaryAccumulator): AsyncGenerator<string[]> {
  const order = new LineOrder();
  for await (const o of outcomes) {
    order.check(o.line);
    if (requireTerminal && o.status === 'PENDING') {
      throw new ReportError('REPORT_NOT_TERMINAL', `line ${o.line} is still PENDING; a result file needs every row terminal`);
    }
    const record = resultRecord(o);
    acc.add(o);
    yield record;
  }
}

async function writeOutcomesXlsx(
  path: string,
  sheetName: string,
  outcomes: Rows<RowOutcome>,
  requireTerminal: boolean,
  opts: XlsxOptions,
): Promise<XlsxReport> {
  const acc = new SummaryAccumulator();
  const main: XlsxSheet = {
    name: sheetName,
    columns: xlsxColumns(RESULT_COLUMNS),
    records: outcomeRecords(outcomes, requireTerminal, acc),
  };
  await writeXlsxFile(path, [main, summarySheet(() => acc.summary())], opts);
  return { path, summary: acc.summary() };
}

/** `<fileName>.result.xlsx`: sheets "Result" and "Summary"; every row must be terminal. */
export function writeResultXlsx(
  dir: string,
  identity: BatchIdentity,
  outcomes: Rows<RowOutcome>,
  opts: XlsxOptions = {},
): Promise<XlsxReport> {
  const path = join(dir, resultXlsxFileName(identity.outboxName ?? identity.fileName));
  return writeOutcomesXlsx(path, 'Result', outcomes, true, opts);
}

/** The interim report as .xlsx (PENDING rows allowed), at a path the caller chooses (see `xlsxPathFor`). */
export function writeInterimReportXlsx(path: string, outcomes: Rows<RowOutcome>, opts: XlsxOptions = {}): Promise<XlsxReport> {
  return writeOutcomesXlsx(path, 'Report', outcomes, false, opts);
}

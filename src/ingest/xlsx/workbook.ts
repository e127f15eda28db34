/**
 * The rows of one sheet of an .xlsx batch, streamed by exceljs's WorkbookReader (styles read, so dates and
 * number formats are known), after a scan of the workbook's parts for what that reader does not see
 * (./scan.ts). A workbook that cannot be a batch is refused with a reason (SheetRefusal).
 */
import type { EventEmitter } from 'node:events';
import { open, type FileHandle } from 'node:fs/promises';
import { PayoutdError } from '../../domain/errors.js';
import type { SheetCell } from './cells.js';
import { formatShowsDate, formatShowsTimeOnly } from './number-format.js';
import { fileRange, readerInput } from './reader-input.js';
import { findingsOf, formatAt, readerEntry, scanProblem, scanWorkbook } from './scan.js';
import type { CellFormat } from './styles.js';
import { directoryStart, partChecksums } from './zip-directory.js';
import { RESEND_DAMAGED_WORKBOOK, damagedTextWords } from '../rules/text.js';

export interface SheetRow {
  /** The row number the spreadsheet shows (1-based). */
  line: number;
  /** Cells from column A on ('empty' where a cell is absent). */
  cells: SheetCell[];
  /** The cells (0 = column A) whose text carries a phonetic guide, which the reader reads instead of the text. */
  guided: readonly number[];
}

export type SheetRefusalCode = 'XLSX_UNREADABLE' | 'XLSX_SHEETS' | 'XLSX_FORMULA' | 'XLSX_HIDDEN';

/** The workbook cannot be read as a batch; `line`: the row it was found on, when there is one. */
export class SheetRefusal extends PayoutdError {
  override readonly name = 'SheetRefusal';
  declare readonly code: SheetRefusalCode;
  readonly line: number | null;
  constructor(code: SheetRefusalCode, message: string, line: number | null = null) {
    super(code, message);
    this.line = line;
  }
}

const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04];
const CFB_MAGIC = [0xd0, 0xcf, 0x11, 0xe0];

async function magicOf(handle: FileHandle): Promise<number[]> {
  const buf = Buffer.alloc(4);
  const { bytesRead } = await handle.read(buf, 0, 4, 0);
  return [...buf.subarray(0, bytesRead)];
}

const same = (a: number[], b: number[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

/** Refuses what is no .xlsx workbook at all, before exceljs is loaded. */
async function checkContainer(handle: FileHandle): Promise<void> {
  const magic = await magicOf(handle);
  if (same(magic, CFB_MAGIC)) {
    throw new SheetRefusal(
      'XLSX_UNREADABLE',
      'the workbook is password-protected (encrypted) or an old .xls file; remove the password, or save it as an Excel Workbook (.xlsx), and drop it again',
    );
  }
  if (!same(magic, ZIP_MAGIC)) {
    throw new SheetRefusal(
      'XLSX_UNREADABLE',
      'the file is not an .xlsx workbook (an .xlsx file is a zip archive); save it as an Excel Workbook (.xlsx)',
    );
  }
}

type CellValue = unknown;

function textOfRich(value: { richText: { text: string }[] }): string {
  return value.richText.map((r) => r.text).join('');
}

const GENERAL: CellFormat = { known: true, code: null };

/** The date a date cell's number stands for, as `2026-01-07` (the workbook's dates count from 1900 or 1904). */
function serialDate(serial: number, date1904: boolean): string {
  // Days since 1970-01-01 are the serial less 25569 (from 1900, as Excel counts them past February 1900).
  const date = new Date(Math.round((serial + (date1904 ? 1462 : 0) - 25569) * 86_400_000));
  return Number.isNaN(date.getTime()) ? String(serial) : date.toISOString().slice(0, 10);
}

/** Shown as a time only (`mm:ss`): the date its number stands for is one the clerk never sees. */
const showsTime = (format: CellFormat): boolean => format.known && formatShowsTimeOnly(format.code);

/**
 * A cell's value as a SheetCell, with its number format as the clerk sees it (`format`, from the workbook's XML:
 * the reader leaves some built-in formats out); `stored`: the date of a cell stored as a date, which the reader
 * reads as a number. Formulas are refused.
 */
function sheetCell(
  value: CellValue,
  format: CellFormat,
  stored: string | null,
  date1904: boolean,
  address: string,
  line: number,
): SheetCell {
  if (value === null || value === undefined) return { kind: 'empty' };
  if (stored !== null && (typeof value === 'number' || value instanceof Date)) return { kind: 'date', date: stored.slice(0, 10) };
  if (typeof value === 'string') return value === '' ? { kind: 'empty' } : { kind: 'text', text: value, format };
  if (typeof value === 'number') {
    // A number shown as a date whose format the reader has no code for: a date, as the clerk sees it.
    if (format.known && formatShowsDate(format.code)) return { kind: 'date', date: serialDate(value, date1904), time: showsTime(format) };
    return { kind: 'number', value, format };
  }
  // Shown as TRUE or FALSE whatever the format.
  if (typeof value === 'boolean') return { kind: 'text', text: value ? 'TRUE' : 'FALSE', format: GENERAL };
  if (value instanceof Date)
    return {
      kind: 'date',
      date: Number.isNaN(value.getTime()) ? String(value) : value.toISOString().slice(0, 10),
      time: showsTime(format),
    };
  if (typeof value === 'object') {
    const v = value as Record<string, unknown>;
    if ('formula' in v || 'sharedFormula' in v) {
      throw new SheetRefusal(
        'XLSX_FORMULA',
        `cell ${address} holds a formula; payouts are read from values only: copy the sheet and paste it as values (Paste Special > Values), then save and drop it again`,
        line,
      );
    }
    if (Array.isArray(v['richText'])) return { kind: 'text', text: textOfRich(v as { richText: { text: string }[] }), format };
    if (typeof v['error'] === 'string') return { kind: 'error', error: v['error'] };
    if (typeof v['text'] === 'string') return { kind: 'text', text: v['text'], format };
  }
  return { kind: 'text', text: String(value), format };
}

/** A failure to read the workbook as the refusal finance reads (a refusal already is one). */
function unreadable(err: unknown): SheetRefusal {
  if (err instanceof SheetRefusal) return err;
  return new SheetRefusal(
    'XLSX_UNREADABLE',
    `the workbook cannot be read (${(err as Error).message.slice(0, 120)}): it may be damaged or its upload incomplete; save it again as an Excel Workbook (.xlsx) and drop it again`,
  );
}

interface ExcelRow {
  number: number;
  eachCell(opts: { includeEmpty: boolean }, fn: (cell: { value: CellValue; address: string }, col: number) => void): void;
}

/** How long exceljs may give nothing before the part of the zip held back for it goes anyway (./reader-input.ts). */
const READER_GIVE_UP_MS = 30_000;

const severalSheets = (names: readonly string[]) =>
  new SheetRefusal(
    'XLSX_SHEETS',
    `the workbook has several sheets (${names.map((n) => JSON.stringify(n)).join(', ')}); keep only the payouts sheet, or name it in batch.format.sheet`,
  );

/**
 * The rows of the batch's sheet: `sheet` by name, or the only one. Rows
 * the file does not hold (blank rows) are not yielded; lines come from the
 * rows' own numbers. A sheet with rows or columns the clerk does not see is
 * refused before any of its rows is read.
 */
export async function* sheetRows(
  path: string,
  sheet: string | null,
  bytes?: number,
  giveUpMs = READER_GIVE_UP_MS,
): AsyncGenerator<SheetRow> {
  // One open file for every reading: what the scan found holds for the bytes exceljs reads. Only the bytes
  // claimed, when given: what an upload wrote after the claim is not read.
  const handle = await open(path, 'r');
  try {
    yield* rowsOf(handle, bytes ?? (await handle.stat()).size, sheet, giveUpMs);
  } finally {
    await handle.close();
  }
}

async function* rowsOf(handle: FileHandle, size: number, sheet: string | null, giveUpMs: number): AsyncGenerator<SheetRow> {
  await checkContainer(handle);
  const { default: ExcelJS } = await import('exceljs');
  let scan;
  let directory;
  try {
    directory = await directoryStart(handle, size);
    const checksums = directory === null ? null : await partChecksums(handle, directory, size);
    // A streamed pass of its own before exceljs's: only its findings are kept.
    scan = await scanWorkbook(() => fileRange(handle, 0, size), checksums);
  } catch (err) {
    throw unreadable(err);
  }
  if (sheet === null && scan.sheets.size > 1) throw severalSheets([...scan.sheets.keys()]);
  const reading = readerInput(handle, size, directory, scan.readerEntries, giveUpMs);
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(reading.input, {
    worksheets: 'emit',
    sharedStrings: 'cache',
    hyperlinks: 'ignore',
    styles: 'cache',
    entries: 'emit',
  });
  // A documented event the typings leave out.
  (reader as unknown as EventEmitter).on('entry', (e: { type: string; id?: string }) => reading.taken(readerEntry(e.type, e.id)));
  const names: string[] = [];
  let read = false;
  try {
    for await (const worksheet of reader) {
      const name = (worksheet as unknown as { name: string }).name;
      names.push(name);
      if (sheet === null && names.length > 1) throw severalSheets(names);
      if (read || (sheet !== null && name !== sheet)) {
        // Read through, not left: exceljs goes on to the next sheet only once this one is consumed.
        for await (const _ of worksheet as AsyncIterable<ExcelRow>) reading.progress();
        continue;
      }
      read = true;
      const problem = scanProblem(scan, name);
      if (problem !== null) throw new SheetRefusal(problem.code, problem.message, problem.line);
      const findings = findingsOf(scan, name);
      const { phonetic, dates } = findings;
      for await (const row of worksheet as AsyncIterable<ExcelRow>) {
        reading.progress();
        const cells: SheetCell[] = [];
        row.eachCell({ includeEmpty: false }, (cell, col) => {
          while (cells.length < col - 1) cells.push({ kind: 'empty' });
          // The format and date kind as the workbook stores them, not as the reader gives them (./styles.ts).
          const format = formatAt(scan, findings, row.number, col);
          cells[col - 1] = sheetCell(cell.value, format, dates.at(row.number, col), scan.date1904, cell.address, row.number);
        });
        const guided = phonetic.columnsOf(row.number).map((col) => col - 1);
        // A guide read as empty text leaves no cell, though the sheet shows one.
        for (const index of guided) while (cells.length <= index) cells.push({ kind: 'empty' });
        yield { line: row.number, cells, guided };
      }
    }
  } catch (err) {
    throw unreadable(reading.failure() ?? err);
  } finally {
    // Refused or left early, the file is not left open.
    reading.close();
    reading.input.destroy();
  }
  const failure = reading.failure();
  if (failure !== null) throw unreadable(failure);
  if (!read && sheet !== null && scan.sheets.has(sheet) && damagedSheetName(names) === '') {
    throw new SheetRefusal(
      'XLSX_UNREADABLE',
      `the sheet ${JSON.stringify(sheet)} is in the workbook but could not be read; ${RESEND_DAMAGED_WORKBOOK}`,
    );
  }
  if (!read) {
    throw new SheetRefusal(
      'XLSX_SHEETS',
      sheet === null
        ? 'the workbook has no sheet'
        : `the workbook has no sheet named ${JSON.stringify(sheet)} (batch.format.sheet); its sheets: ${names.map((n) => JSON.stringify(n)).join(', ')}${damagedSheetName(names)}`,
    );
  }
}

/**
 * A sheet name the reader damaged (a character cut in two between two reads of the workbook) fails the lookup of
 * the sheet named, which finance would take for a misspelt name: said, with what to do, for the first such name.
 */
function damagedSheetName(names: readonly string[]): string {
  for (const name of names) {
    const words = damagedTextWords(name);
    if (words !== null) {
      return `. The sheet name ${JSON.stringify(name)} as read ${words}: the name is damaged in reading, not misspelt, and may be the sheet named; ${RESEND_DAMAGED_WORKBOOK}`;
    }
  }
  return '';
}

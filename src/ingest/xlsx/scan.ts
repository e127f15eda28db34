/**
 * A plain reading of an .xlsx's parts, for what exceljs's streaming reader does not tell and reads wrong:
 * rows and columns the clerk hid or filtered out (it reads them like any other), a hidden sheet, text stored
 * inline in several runs (it keeps the last run only), shared text it reads as other text (a phonetic guide
 * instead of the name it is a guide to), and cell formats stored after the sheet (it reads the sheet without
 * them). The zip is streamed with unzipper and its XML with saxes, the libraries exceljs reads them with, so
 * both see the same parts in the same order; nothing but a few findings is kept.
 */
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import { SaxesParser } from 'saxes';
import unzipper, { type Entry } from 'unzipper';
import { columnLetter } from '../rules/row-error.js';
import { CellStyles, StylesScan, type CellFormat, type StylesTrouble } from './styles.js';
import type { PartChecksums } from './zip-directory.js';

/** Numbers (ascending) as runs `[from, to]`: the first MAX_RUNS runs, and how many numbers in all. */
export class NumberRuns {
  static readonly MAX_RUNS = 10;
  readonly runs: [number, number][] = [];
  count = 0;
  private last = Number.NaN;

  add(n: number): void {
    if (n === this.last) return;
    this.count++;
    const run = this.runs.at(-1);
    if (run !== undefined && n === this.last + 1 && run[1] === this.last) run[1] = n;
    else if (this.runs.length < NumberRuns.MAX_RUNS) this.runs.push([n, n]);
    this.last = n;
  }

  /** `3, 7-9 and 12`, or `3, 7-9, … and 40 more`, each number written by `show`. */
  text(show: (n: number) => string = String): string {
    const shown = this.runs.map(([a, b]) => (a === b ? show(a) : `${show(a)}-${show(b)}`));
    const listed = this.runs.reduce((sum, [a, b]) => sum + b - a + 1, 0);
    if (listed < this.count) return `${shown.join(', ')} and ${this.count - listed} more`;
    return shown.length > 1 ? `${shown.slice(0, -1).join(', ')} and ${shown.at(-1)}` : (shown[0] ?? '');
  }
}

/** Cells by row and column (1 = A), each with what is known of it: the first MAX_CELLS of them, and the first of all. */
export class CellSet<V = true> {
  static readonly MAX_CELLS = 10_000;
  private readonly byRow = new Map<number, Map<number, V>>();
  private size = 0;
  first: { ref: string; line: number } | null = null;
  /** Not every cell is known by row: more than MAX_CELLS, or one whose row the reader may number otherwise. */
  whole = false;

  /** `placed`: the cell's row and column are written in the sheet, as the reader numbers them. */
  add(row: number, col: number, ref: string, placed: boolean, value: V = true as V): void {
    this.first ??= { ref, line: row };
    if (!placed || this.size >= CellSet.MAX_CELLS) {
      this.whole = true;
      return;
    }
    this.size++;
    const cols = this.byRow.get(row);
    if (cols === undefined) this.byRow.set(row, new Map([[col, value]]));
    else cols.set(col, value);
  }

  /** The columns (1 = A) of the cells of that row. */
  columnsOf(row: number): readonly number[] {
    return [...(this.byRow.get(row)?.keys() ?? [])];
  }

  /** What is known of the cell at that row and column (1 = A), or null when it is not in the set. */
  at(row: number, col: number): V | null {
    return this.byRow.get(row)?.get(col) ?? null;
  }
}

/** What one worksheet part holds that the streaming reader does not see, or reads wrong. */
export interface SheetFindings {
  /** Rows holding a value that the clerk does not see: hidden, filtered out, folded away, of zero height. */
  hiddenRows: NumberRuns;
  /** Columns (1 = A) holding a value that the clerk does not see. */
  hiddenColumns: NumberRuns;
  /** The first cell whose inline text is stored in several runs, or whose shared text is misread but not for a guide. */
  splitText: { ref: string; line: number } | null;
  /** Cells whose shared text carries a phonetic guide that the reader reads instead of the text. */
  phonetic: CellSet;
  /** Read before the workbook's cell formats, which come after it in the zip. */
  beforeStyles: boolean;
  /** The style of each cell, which the reader does not follow to its format for some built-in formats. */
  styles: CellStyles;
  /**
   * Cells stored as dates (`t="d"`, an ISO date as text), which the reader reads as a number (`2026-01-07` as
   * 2026), with the date as stored.
   */
  dates: CellSet<string>;
}

export interface WorkbookScan {
  /** The sheets the workbook lists, by name: hidden or not, and their part in the zip (null: not known). */
  sheets: Map<string, { hidden: boolean; part: string | null }>;
  /** The findings of each worksheet part, by its path in the zip. */
  parts: Map<string, SheetFindings>;
  /** The workbook's cell formats (none read: every cell General, any style but the first not known). */
  styles: StylesScan;
  /** Dates count from 1904, not 1900 (workbookPr date1904). */
  date1904: boolean;
  /**
   * The `entry` events the streaming reader gives while it reads through the zip: its fixed parts, and the sheets
   * it reads as they come (the others it reads after the zip, from copies).
   */
  readerEntries: ReadonlySet<string>;
}

interface XmlHandler {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  /** Character data; `cdata`: from a CDATA section, which the reader drops. */
  text?(value: string, cdata: boolean): void;
}

/** An element's name without its namespace prefix (`x:row` is a row). */
const localName = (name: string): string => name.slice(name.indexOf(':') + 1);

/** An xsd:boolean attribute (Excel writes `1`, LibreOffice `true`). */
const isTrue = (value: string | undefined): boolean => value !== undefined && /^\s*(1|true)\s*$/.test(value);

/** A size attribute that is there and zero: a row or column shown zero wide is not seen. */
const isZero = (value: string | undefined): boolean => value !== undefined && value.trim() !== '' && Number(value) === 0;

/** The column number (1 = A) of a cell reference (`AB12`, or absolute as `$AB$12`), or null without one. */
export function columnOfRef(ref: string | undefined): number | null {
  const letters = /^\s*\$?([A-Za-z]{1,3})\$?\d/.exec(ref ?? '')?.[1];
  if (letters === undefined) return null;
  let n = 0;
  for (const ch of letters.toUpperCase()) n = n * 26 + ch.charCodeAt(0) - 64;
  return n;
}

const noFindings = (): SheetFindings => ({
  hiddenRows: new NumberRuns(),
  hiddenColumns: new NumberRuns(),
  splitText: null,
  phonetic: new CellSet(),
  beforeStyles: false,
  styles: new CellStyles(null),
  dates: new CellSet<string>(),
});

/** How the reader misreads a shared string: the guide read instead of the text, or some other way. */
export type Misread = 'phonetic' | 'split';

/**
 * The shared strings (xl/sharedStrings.xml) the streaming reader reads as other text than the workbook holds, by
 * index. It starts an entry's text again at every `<t>`, so a phonetic guide (`<rPh><t>`) after the text, or a
 * second `<t>`, is read instead; rich text runs (`<r>`) it joins as it should. Its reading is followed here next
 * to the text the entry holds (its `<t>`s, guides left out), one entry at a time.
 */
export class SharedStringsScan implements XmlHandler {
  readonly misread = new Map<number, Misread>();
  private index = 0;
  private inPhonetic = false;
  private inText = false;
  private phonetic = false;
  private held = '';
  /** As the reader reads it: the text since the last `<t>`, and the runs read so far. */
  private readerText = '';
  private readerRuns: string | null = null;

  open(name: string): void {
    switch (name) {
      case 'si':
        this.held = this.readerText = '';
        this.readerRuns = null;
        this.phonetic = false;
        break;
      case 't':
        this.inText = true;
        this.readerText = '';
        break;
      case 'rPh':
        this.inPhonetic = this.phonetic = true;
        break;
    }
  }

  text(value: string, cdata: boolean): void {
    if (!cdata) this.readerText += value;
    if (this.inText && !this.inPhonetic) this.held += value;
  }

  close(name: string): void {
    if (name === 't') this.inText = false;
    else if (name === 'rPh') this.inPhonetic = false;
    else if (name === 'r') {
      this.readerRuns = (this.readerRuns ?? '') + this.readerText;
      this.readerText = '';
    } else if (name === 'si') {
      if ((this.readerRuns ?? this.readerText) !== this.held) this.misread.set(this.index, this.phonetic ? 'phonetic' : 'split');
      this.index++;
    }
  }
}

/** Looks through a worksheet's XML, element by element; `strings`: the shared strings the reader misreads. */
export class SheetScan implements XmlHandler {
  readonly findings: SheetFindings = noFindings();
  private hiddenByDefault = false;
  private readonly hiddenCols: [number, number][] = [];
  private readonly colsWithValues = new Set<number>();
  private row = 0;
  private rowHidden = false;
  private rowHasValue = false;
  private col = 0;
  private cellRef = '';
  private cellHasValue = false;
  private inCell = false;
  private inInline = false;
  private runs = 0;
  private rowNumbered = false;
  private cellPlaced = false;
  private sharedText = false;
  /** A shared-text cell's index as the reader reads it: the text from its `<v>` on. */
  private index: string | null = null;
  private dateCell = false;
  /** A date cell's value, from its `<v>` on. */
  private date: string | null = null;

  /** `byFormat`: a style's format key, when the workbook's formats are read before the sheet (CellStyles). */
  constructor(
    private readonly strings: ReadonlyMap<number, Misread> = new Map(),
    byFormat: ((xf: number) => number) | null = null,
  ) {
    this.findings.styles = new CellStyles(byFormat);
  }

  /** Character data: the index of a shared string (when some are misread), and a date cell's value. */
  text(value: string): void {
    if (this.index !== null) this.index += value;
    if (this.date !== null) this.date += value;
  }

  open(name: string, a: Record<string, string>): void {
    switch (name) {
      case 'sheetFormatPr':
        // Rows hidden unless given a height.
        this.hiddenByDefault = isTrue(a['zeroHeight']);
        break;
      case 'col':
        if (isTrue(a['hidden']) || isZero(a['width'])) this.hiddenCols.push([Number(a['min']), Number(a['max'])]);
        break;
      case 'row':
        this.rowNumbered = /^\s*\d+\s*$/.test(a['r'] ?? '');
        this.row = this.rowNumbered ? Number(a['r']) : this.row + 1;
        this.rowHidden = isTrue(a['hidden']) || isZero(a['ht']) || (this.hiddenByDefault && a['ht'] === undefined);
        this.rowHasValue = false;
        this.col = 0;
        break;
      case 'c':
        // The reader takes a column from capital letters only, and passes over the `$` of an absolute reference.
        this.cellPlaced = this.rowNumbered && /^\s*\$?[A-Z]{1,3}\$?\d/.test(a['r'] ?? '');
        this.col = columnOfRef(a['r']) ?? this.col + 1;
        this.cellRef = `${columnLetter(this.col - 1)}${this.row}`;
        this.inCell = true;
        this.cellHasValue = false;
        this.runs = 0;
        this.sharedText = a['t'] === 's' && this.strings.size > 0;
        this.index = null;
        this.dateCell = a['t'] === 'd';
        this.date = null;
        // No style is the first (0); one that is no number is no style the workbook has.
        this.findings.styles.add(
          this.row,
          this.col,
          a['s'] === undefined ? 0 : /^\s*\d{1,9}\s*$/.test(a['s']) ? Number(a['s']) : -1,
          this.cellPlaced,
          this.cellRef,
        );
        break;
      case 'v':
        if (this.inCell) this.cellHasValue = true;
        if (this.sharedText) this.index = '';
        if (this.dateCell) this.date = '';
        break;
      case 'f':
        if (this.inCell) this.cellHasValue = true;
        this.index = null;
        break;
      case 'is':
        if (this.inCell) this.cellHasValue = this.inInline = true;
        this.index = null;
        break;
      case 't':
        if (this.inInline) this.runs++;
        this.index = null;
        break;
    }
  }

  close(name: string): void {
    switch (name) {
      case 'is':
        this.inInline = false;
        break;
      case 'c':
        this.inCell = false;
        if (!this.cellHasValue) break;
        this.rowHasValue = true;
        if (this.hiddenCols.some(([min, max]) => this.col >= min && this.col <= max)) this.colsWithValues.add(this.col);
        // Text in several runs (`<r><t>1</t></r><r><t>500.50</t></r>`, or a phonetic guide) is read as its last.
        if (this.runs > 1 && this.findings.splitText === null) this.findings.splitText = { ref: this.cellRef, line: this.row };
        if (this.index !== null) this.sharedCell(parseInt(this.index, 10));
        if (this.date !== null) this.findings.dates.add(this.row, this.col, this.cellRef, this.cellPlaced, this.date.trim());
        this.date = null;
        break;
      case 'row':
        if (this.rowHidden && this.rowHasValue) this.findings.hiddenRows.add(this.row);
        break;
      case 'worksheet':
        for (const c of [...this.colsWithValues].sort((x, y) => x - y)) this.findings.hiddenColumns.add(c);
        break;
    }
  }

  private sharedCell(index: number): void {
    const misread = this.strings.get(index);
    if (misread === 'phonetic') this.findings.phonetic.add(this.row, this.col, this.cellRef, this.cellPlaced);
    else if (misread === 'split' && this.findings.splitText === null) this.findings.splitText = { ref: this.cellRef, line: this.row };
  }
}

/** The sheets workbook.xml lists: name, state and relationship id. */
class SheetListing implements XmlHandler {
  readonly sheets: { name: string; hidden: boolean; rid: string | undefined }[] = [];
  date1904 = false;
  open(name: string, a: Record<string, string>): void {
    if (name === 'workbookPr') this.date1904 = isTrue(a['date1904']);
    if (name !== 'sheet' || a['name'] === undefined) return;
    const ridKey = Object.keys(a).find((k) => localName(k) === 'id' && k.includes(':'));
    this.sheets.push({ name: a['name'], hidden: a['state'] === 'hidden' || a['state'] === 'veryHidden', rid: ridKey && a[ridKey] });
  }
  close(): void {}
}

/** The workbook's relationships: id to the part it names, relative to xl/ unless absolute. */
class Relationships implements XmlHandler {
  readonly parts = new Map<string, string>();
  open(name: string, a: Record<string, string>): void {
    const { Id: id, Target: target } = a;
    if (name !== 'Relationship' || id === undefined || target === undefined || a['TargetMode'] === 'External') return;
    this.parts.set(id, target.startsWith('/') ? target.slice(1) : posix.normalize(posix.join('xl', target)));
  }
  close(): void {}
}

async function readXml<H extends XmlHandler>(bytes: AsyncIterable<Buffer>, handler: H): Promise<H> {
  const parser = new SaxesParser();
  parser.on('opentag', (tag) => handler.open(localName(tag.name), tag.attributes as Record<string, string>));
  parser.on('closetag', (tag) => handler.close(localName(tag.name)));
  const text = handler.text?.bind(handler);
  if (text !== undefined) {
    parser.on('text', (value) => text(value, false));
    parser.on('cdata', (value) => text(value, true));
  }
  // A character may be split between chunks: decoded as a stream.
  const decoder = new TextDecoder('utf-8');
  for await (const chunk of bytes) parser.write(decoder.decode(chunk, { stream: true }));
  parser.write(decoder.decode());
  parser.close();
  return handler;
}

/** The parts the streaming reader reads by these fixed paths. */
const WORKBOOK = 'xl/workbook.xml';
const RELS = 'xl/_rels/workbook.xml.rels';
const SHARED_STRINGS = 'xl/sharedStrings.xml';
const STYLES = 'xl/styles.xml';
// Any name the reader takes for a sheet (it looks for `xl/worksheets/sheet<n>.xml` anywhere in the path).
const WORKSHEET = /xl\/worksheets\/[^/]+\.xml/;
const READER_SHEET = /xl\/worksheets\/sheet(\d+)[.]xml/;

/** An `entry` event of the reader (`workbook`, `worksheet` with its number...) as readerEntries holds it. */
export const readerEntry = (type: string, id?: string): string => (id === undefined ? type : `${type} ${id}`);

/** The reader reads a sheet as it comes once the strings and the relationships are read (`seen`), else after the zip. */
const readAsItComes = (seen: ReadonlySet<string>): boolean => seen.has(SHARED_STRINGS) && seen.has(RELS);

/** The reader's `entry` event for a part it takes while reading through the zip, after the parts `seen`; else null. */
function readerEntryOf(path: string, seen: ReadonlySet<string>): string | null {
  if (path === WORKBOOK) return 'workbook';
  if (path === SHARED_STRINGS) return 'shared-strings';
  if (path === STYLES) return 'styles';
  const sheet = READER_SHEET.exec(path);
  return sheet !== null && readAsItComes(seen) ? readerEntry('worksheet', sheet[1]) : null;
}

const troubled = (f: SheetFindings): boolean =>
  f.hiddenRows.count > 0 ||
  f.hiddenColumns.count > 0 ||
  f.splitText !== null ||
  f.phonetic.first !== null ||
  f.beforeStyles ||
  f.styles.whole ||
  f.dates.first !== null;

/**
 * Of two findings where one is meant, the one with something wrong: no problem is missed by guessing wrong. Cells
 * with a guide in either are then not known row by row.
 */
function worse(a: SheetFindings | undefined, b: SheetFindings): SheetFindings {
  const chosen = a !== undefined && troubled(a) ? a : b;
  if (a !== undefined && (a.phonetic.first !== null || b.phonetic.first !== null)) {
    chosen.phonetic.first ??= a.phonetic.first ?? b.phonetic.first;
    chosen.phonetic.whole = true;
  }
  if (a !== undefined) {
    // Which cells hold what format, or a date, is then not known either.
    chosen.styles.trouble ??= { kind: 'sheetTwice' };
    if (a.dates.first !== null || b.dates.first !== null) {
      chosen.dates.first ??= a.dates.first ?? b.dates.first;
      chosen.dates.whole = true;
    }
  }
  return chosen;
}

/**
 * Reads the whole zip; rejects when it or a part read cannot be read, or a part read does not match its CRC-32
 * (`checksums`: the directory's, when it was found; else the part's own header's, refused when it has none). Excel and
 * exceljs store the shared strings after the sheets: when some are misread, the zip is read a second time, to
 * find the cells that hold them.
 */
export async function scanWorkbook(open: () => Readable, checksums: PartChecksums | null = null): Promise<WorkbookScan> {
  const first = await scanZip(open(), checksums, null, null);
  const strings = first.strings.size > 0 && first.sheetBeforeStrings;
  // Cells kept by style, and too many runs of them: kept by format, fewer when styles alternate with one format.
  const styles = [...first.scan.parts.values()].some((f) => f.styles.overflowed && f.styles.byFormat === null);
  if (!strings && !styles) return first.scan;
  return (await scanZip(open(), checksums, strings ? first.strings : null, first.scan.styles)).scan;
}

/** The CRC-32 a part should have: the directory's for its `copy`-th copy (0 = first), else its own header's. */
function expectedChecksum(entry: Entry, copy: number, checksums: PartChecksums | null): number {
  if (checksums !== null) {
    const crc = checksums.get(entry.path)?.[copy];
    // A part the directory does not list is no part of the workbook its writer saved.
    if (crc === undefined) throw new Error(`part ${entry.path} is not in the zip's directory`);
    return crc;
  }
  // Flag 0x08: the checksum comes after the data, where unzipper does not tell it; unchecked, a damaged byte is read.
  if (entry.vars.flags & 0x08) throw new Error(`part ${entry.path} cannot be checked: the zip's directory is not found`);
  return entry.vars.crc32;
}

/** The part's bytes as they are read, failing at its end when they do not match their checksum. */
async function* checked(entry: Entry, expected: number): AsyncGenerator<Buffer> {
  let crc = 0;
  for await (const chunk of entry) {
    crc = crc32(chunk as Buffer, crc);
    yield chunk as Buffer;
  }
  if (crc !== expected) throw new Error(`part ${entry.path} is damaged (its checksum does not match)`);
}

/**
 * One reading of the zip; `strings`: the misread shared strings when known, else read from the zip as it comes;
 * `styles`: the cell formats, when known.
 */
async function scanZip(
  input: Readable,
  checksums: PartChecksums | null,
  known: ReadonlyMap<number, Misread> | null,
  knownStyles: StylesScan | null,
): Promise<{ scan: WorkbookScan; strings: ReadonlyMap<number, Misread>; sheetBeforeStrings: boolean }> {
  const zip = unzipper.Parse({ forceStream: true });
  input.once('error', (err) => zip.destroy(err));
  input.pipe(zip);
  // unzipper tells of a zip cut off or damaged on itself, not on the part being read, which would wait for ever
  // (and on parts it has yet to hand over, which wait too): the part read is failed, and the zip after it.
  let part: Readable | null = null;
  let failed: Error | null = null;
  zip.on('error', (err: Error) => {
    failed = err;
    part?.destroy(err);
  });
  const copies = new Map<string, number>();
  const read = async <H extends XmlHandler>(entry: Entry, handler: H): Promise<H> => {
    part = entry;
    try {
      return await readXml(checked(entry, expectedChecksum(entry, copies.get(entry.path) ?? 0, checksums)), handler);
    } finally {
      part = null;
    }
  };
  const seen = new Set<string>();
  const readerEntries = new Set<string>();
  const parts = new Map<string, SheetFindings>();
  let listing = new SheetListing();
  let rels = new Relationships();
  const strings = new Map(known ?? []);
  let sheetBeforeStrings = false;
  let styles = knownStyles;
  let stylesTwice = false;
  try {
    for await (const entry of zip) {
      if (failed !== null) throw failed;
      const path = entry.path;
      const event = readerEntryOf(path, seen);
      if (event !== null) readerEntries.add(event);
      if (path === WORKBOOK) listing = await read(entry, new SheetListing());
      else if (path === RELS) rels = await read(entry, new Relationships());
      else if (path === SHARED_STRINGS && known === null) {
        // A part twice in the zip: the reader reads both, a sheet with the strings read last before it.
        for (const [index, misread] of (await read(entry, new SharedStringsScan())).misread) strings.set(index, misread);
        sheetBeforeStrings ||= parts.size > 0;
      } else if (path === STYLES && knownStyles === null) {
        // A part twice in the zip: which one a sheet's cells are shown with is not known.
        stylesTwice ||= styles !== null;
        styles = await read(entry, new StylesScan());
      } else if (WORKSHEET.test(path)) {
        const known = styles;
        const { findings } = await read(entry, new SheetScan(strings, known === null ? null : (xf) => known.keyOf(xf)));
        findings.beforeStyles = readAsItComes(seen) && !seen.has(STYLES);
        // A path twice in the zip: the reader reads both.
        parts.set(path, worse(parts.get(path), findings));
      } else entry.autodrain();
      seen.add(path);
      copies.set(path, (copies.get(path) ?? 0) + 1);
    }
  } finally {
    input.destroy();
  }
  if (failed !== null) throw failed;
  // Formats that never come are none to miss.
  if (!seen.has(STYLES)) for (const f of parts.values()) f.beforeStyles = false;
  if (stylesTwice) for (const f of parts.values()) f.styles.trouble ??= { kind: 'formatsTwice' };
  const scan = {
    sheets: sheetsOf(listing, rels),
    parts,
    styles: styles ?? new StylesScan(),
    date1904: listing.date1904,
    readerEntries,
  };
  return { scan, strings, sheetBeforeStrings };
}

function sheetsOf(listing: SheetListing, rels: Relationships): WorkbookScan['sheets'] {
  const sheets = new Map<string, { hidden: boolean; part: string | null }>();
  for (const s of listing.sheets) {
    const part = s.rid === undefined ? null : (rels.parts.get(s.rid) ?? null);
    // A name listed twice is no way to tell which part is the sheet.
    sheets.set(s.name, { hidden: s.hidden || (sheets.get(s.name)?.hidden ?? false), part: sheets.has(s.name) ? null : part });
  }
  return sheets;
}

/** The findings for the sheet of that name; when its part is not known, those of any part that has some. */
export function findingsOf(scan: WorkbookScan, name: string): SheetFindings {
  const part = scan.sheets.get(name)?.part;
  const own = part === undefined || part === null ? undefined : scan.parts.get(part);
  if (own !== undefined) return own;
  const found = [...scan.parts.values()].reduce<SheetFindings | undefined>((found, f) => worse(found, f), undefined) ?? noFindings();
  // Cells of some part, which may not be the sheet's: not known row by row.
  if (found.phonetic.first !== null) found.phonetic.whole = true;
  return found;
}

/** The number format of the cell at that row and column (1 = A) of the sheet whose findings are `f`. */
export function formatAt(scan: WorkbookScan, f: SheetFindings, row: number, col: number): CellFormat {
  return scan.styles.formatAt(f.styles, row, col);
}

export interface ScanProblem {
  code: 'XLSX_HIDDEN' | 'XLSX_UNREADABLE';
  message: string;
  line: number | null;
}

const SAVE_AGAIN = 'open it in Excel or LibreOffice, save it again as an Excel Workbook (.xlsx), and drop it again';

/** What is wrong with text that carries a phonetic guide, and what to do, after what holds it (`the account name cell`). */
export function phoneticGuideMessage(what: string): string {
  return `${what} carries a phonetic guide (a reading aid such as furigana, kept with text typed through a Japanese or Chinese input method), which payoutd cannot read safely: it would read the guide, not the text shown; save the sheet as CSV UTF-8 and send that, or paste the column back as plain text (through Notepad) and drop the workbook again`;
}

/** Why the sheet of that name cannot be read as the clerk sees it, or null. */
export function scanProblem(scan: WorkbookScan, name: string): ScanProblem | null {
  const sheet = JSON.stringify(name);
  if (scan.sheets.get(name)?.hidden) {
    return {
      code: 'XLSX_HIDDEN',
      message: `the sheet ${sheet} is hidden in the workbook: payoutd does not pay from a sheet nobody sees, and nothing in this file is paid; unhide the sheet (or copy its rows to a visible sheet), check its rows, and upload again`,
      line: null,
    };
  }
  const f = findingsOf(scan, name);
  const rows = f.hiddenRows.count > 0;
  const columns = f.hiddenColumns.count > 0;
  if (rows || columns) {
    const hidden = [
      rows
        ? `row${f.hiddenRows.count > 1 ? 's' : ''} ${f.hiddenRows.text()} ${f.hiddenRows.count > 1 ? 'are' : 'is'} hidden or filtered out`
        : '',
      columns
        ? `column${f.hiddenColumns.count > 1 ? 's' : ''} ${f.hiddenColumns.text((n) => columnLetter(n - 1))} ${f.hiddenColumns.count > 1 ? 'are' : 'is'} hidden`
        : '',
    ].filter((s) => s !== '');
    const what = rows && columns ? 'rows and columns' : rows ? 'rows' : 'columns';
    return {
      code: 'XLSX_HIDDEN',
      message: `in sheet ${sheet}, ${hidden.join(', and ')}: payoutd would read hidden ${what} like any other, so nothing in this file is paid; unhide them, or delete the ${rows ? 'rows you do not mean to pay' : 'columns you do not mean payoutd to read'}, and upload again`,
      line: rows ? (f.hiddenRows.runs[0]?.[0] ?? null) : null,
    };
  }
  if (f.splitText !== null) {
    return {
      code: 'XLSX_UNREADABLE',
      message: `cell ${f.splitText.ref} holds text stored in several differently formatted pieces, which payoutd cannot read as one value; type the value again in one piece, or ${SAVE_AGAIN}`,
      line: f.splitText.line,
    };
  }
  if (f.phonetic.whole && f.phonetic.first !== null) {
    return {
      code: 'XLSX_UNREADABLE',
      message: phoneticGuideMessage(`the text of cell ${f.phonetic.first.ref} and of more cells in sheet ${sheet}`),
      line: f.phonetic.first.line,
    };
  }
  if (f.styles.trouble !== null) return stylesProblem(f.styles.trouble, sheet);
  if (f.dates.whole && f.dates.first !== null) {
    return {
      code: 'XLSX_UNREADABLE',
      message: `cell ${f.dates.first.ref} and more cells of sheet ${sheet} are stored as dates (ISO date text), which payoutd cannot read safely; format the columns as Text and type the values again, or ${SAVE_AGAIN}`,
      line: f.dates.first.line,
    };
  }
  if (f.beforeStyles) {
    return {
      code: 'XLSX_UNREADABLE',
      message: `the workbook stores its cell formats after the sheet ${sheet}, so dates and zero-padded numbers in it cannot be read as shown; ${SAVE_AGAIN}`,
      line: null,
    };
  }
  return null;
}

/** Why the cells of a sheet (`sheet`, quoted) cannot be matched to their number formats, and where. */
function stylesProblem(trouble: StylesTrouble, sheet: string): ScanProblem {
  const unmatched = `so the cells of sheet ${sheet} cannot be matched to their number formats, and amounts and identifiers cannot be read as shown`;
  switch (trouble.kind) {
    case 'unplaced':
      return {
        code: 'XLSX_UNREADABLE',
        message: `cell ${trouble.ref} (line ${trouble.line}, column ${trouble.ref.replace(/\d+$/, '')}, counting the rows and cells before it) is stored without a place payoutd can read (its row and column), ${unmatched}; ${SAVE_AGAIN}`,
        line: trouble.line,
      };
    case 'order':
      return {
        code: 'XLSX_UNREADABLE',
        message: `cell ${trouble.ref} (line ${trouble.line}, column ${trouble.ref.replace(/\d+$/, '')}) is stored after a row below it, ${unmatched}; ${SAVE_AGAIN}`,
        line: trouble.line,
      };
    case 'runs': {
      // Saving again keeps every cell's format: only one format per column makes the sheet readable.
      const columns = trouble.columns.map((c) => columnLetter(c - 1));
      const named = columns.length > 1 ? `columns ${columns.slice(0, -1).join(', ')} and ${columns.at(-1)}` : `column ${columns[0] ?? ''}`;
      return {
        code: 'XLSX_UNREADABLE',
        message: `in sheet ${sheet}, the number formats of ${named} change from row to row more often than payoutd keeps track of, so the cells cannot be matched to their formats, and amounts and identifiers cannot be read as shown; give each column one format (select the column, Format Cells, and pick one: Text for identifiers, Number with as many decimals as the amounts have for amounts), save, and drop the workbook again`,
        line: null,
      };
    }
    case 'formatsTwice':
      return {
        code: 'XLSX_UNREADABLE',
        message: `the workbook holds two lists of cell formats, ${unmatched}; ${SAVE_AGAIN}`,
        line: null,
      };
    case 'sheetTwice':
      return {
        code: 'XLSX_UNREADABLE',
        message: `the workbook holds the sheet ${sheet} twice, ${unmatched}; ${SAVE_AGAIN}`,
        line: null,
      };
  }
}

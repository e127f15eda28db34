/**
 * Records to CSV text, in chunks. Every cell goes through `spreadsheetSafeCell`; csv-stringify quotes where
 * needed; lines end in CRLF (RFC 4180). `csvLines` writes the same dialect without the spreadsheet prefix.
 * And the records of a CSV file written, read back for its .xlsx twin.
 */
import { createReadStream } from 'node:fs';
import { Transform, pipeline } from 'node:stream';
import { parse } from 'csv-parse';
import { stringify } from 'csv-stringify/sync';
import { RECORD_DELIMITERS } from '../ingest/csv/options.js';
import { spreadsheetSafeCell, unescapeSpreadsheetCell } from './cells.js';

export const RECORD_DELIMITER = '\r\n';
export const UTF8_BOM = '\uFEFF';

/** Records stringified per call: big enough to amortize, small enough to stream. */
const RECORDS_PER_CHUNK = 1000;

/** csv-stringify only quotes the configured record delimiter; a lone CR or LF must be quoted too. */
const STRINGIFY_OPTIONS = { record_delimiter: RECORD_DELIMITER, quoted_match: /[\r\n]/ };

/** What makes csv-stringify (with the options above) quote a cell: the delimiter, the quote, a CR or an LF. */
const NEEDS_QUOTING = /[",\r\n]/;

/** csv-stringify (with the options above) quotes this cell. */
function needsQuoting(cell: string): boolean {
  return NEEDS_QUOTING.test(cell);
}

/**
 * CSV text of some records, each cell `cell(text)`. A record with nothing to quote is its cells joined by
 * commas, the same bytes csv-stringify writes (test/report/csv.test.ts holds them equal) for less work.
 */
function csvRecords(records: readonly (readonly string[])[], cell: (text: string) => string): string {
  let out = '';
  // Consecutive records that need quoting are stringified together, in file order.
  let quoted: string[][] = [];
  for (const record of records) {
    const cells = record.map(cell);
    if (cells.some(needsQuoting)) {
      quoted.push(cells);
      continue;
    }
    if (quoted.length > 0) {
      out += stringify(quoted, STRINGIFY_OPTIONS);
      quoted = [];
    }
    out += cells.join(',') + RECORD_DELIMITER;
  }
  if (quoted.length > 0) out += stringify(quoted, STRINGIFY_OPTIONS);
  return out;
}

const asIs = (text: string): string => text;

/** CSV text of some records, cells as given (no spreadsheet prefix: files read back as input, like retry files). */
export function csvLines(records: readonly (readonly string[])[]): string {
  return csvRecords(records, asIs);
}

/** CSV text of some records (no BOM). */
export function csvText(records: readonly (readonly string[])[]): string {
  return csvRecords(records, spreadsheetSafeCell);
}

export interface CsvChunkOptions {
  bom: boolean;
  /** Records right after the header (an ack's file-level rejection). */
  lead?: readonly (readonly string[])[];
}

/** What a file starts with: optional BOM, the header, the `lead` records. */
export function csvHead(header: readonly string[], opts: CsvChunkOptions): string {
  return (opts.bom ? UTF8_BOM : '') + csvText([header, ...(opts.lead ?? [])]);
}

/** Items in pages of RECORDS_PER_CHUNK, for a source that hands them out one by one. */
async function* pagesOf<T>(items: AsyncIterable<T> | Iterable<T>): AsyncGenerator<readonly T[]> {
  let page: T[] = [];
  for await (const item of items) {
    page.push(item);
    if (page.length >= RECORDS_PER_CHUNK) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}

/**
 * The file as text chunks from pages of items: optional BOM, the header, the `lead` records, then a record
 * per item. A page is taken only as fast as the consumer takes chunks, so backpressure reaches the producer.
 */
export async function* csvChunksOfPages<T>(
  header: readonly string[],
  pages: AsyncIterable<readonly T[]>,
  record: (item: T) => readonly string[],
  opts: CsvChunkOptions,
): AsyncGenerator<string, void, undefined> {
  yield csvHead(header, opts);
  yield* csvRecordChunks(pages, record);
}

/** Only the records of items in pages, as text chunks: a file's body written before its head is known. */
export async function* csvRecordChunks<T>(
  pages: AsyncIterable<readonly T[]>,
  record: (item: T) => readonly string[],
): AsyncGenerator<string, void, undefined> {
  let batch: (readonly string[])[] = [];
  for await (const page of pages) {
    for (const item of page) {
      batch.push(record(item));
      if (batch.length >= RECORDS_PER_CHUNK) {
        yield csvText(batch);
        batch = [];
      }
    }
  }
  if (batch.length > 0) yield csvText(batch);
}

/** The same from items handed out one by one. */
export function csvChunksOf<T>(
  header: readonly string[],
  items: AsyncIterable<T> | Iterable<T>,
  record: (item: T) => readonly string[],
  opts: CsvChunkOptions,
): AsyncGenerator<string, void, undefined> {
  return csvChunksOfPages(header, pagesOf(items), record, opts);
}

const itself = (record: readonly string[]): readonly string[] => record;

/** The file as text chunks: optional BOM, the header, then the records. */
export function csvChunks(
  header: readonly string[],
  records: AsyncIterable<readonly string[]> | Iterable<readonly string[]>,
  opts: CsvChunkOptions,
): AsyncGenerator<string, void, undefined> {
  return csvChunksOf(header, records, itself, opts);
}

/** Text in `encoding` as UTF-8 (a byte order mark dropped), leniently: a twin shows what a spreadsheet would. */
function utf8From(encoding: string): Transform {
  const decoder = new TextDecoder(encoding);
  return new Transform({
    transform(chunk: Buffer, _enc, callback) {
      callback(null, decoder.decode(chunk, { stream: true }));
    },
    flush(callback) {
      callback(null, decoder.decode());
    },
  });
}

/**
 * A CSV file as written, in its delimiter and encoding (default `,` and UTF-8), its lines ended as the intake
 * ends them: its header record (null for an empty file) and the records after it. A failed read fails the
 * iteration (the streams are one pipeline).
 */
export async function readCsvFile(
  path: string,
  read: { delimiter?: string; encoding?: string } = {},
): Promise<{ header: string[] | null; rows: AsyncIterable<string[]> }> {
  // A file that keeps the sender's line ends (a remainder) may mix them, as the intake allows.
  const parser = parse({ delimiter: read.delimiter ?? ',', record_delimiter: RECORD_DELIMITERS, relax_column_count: true });
  const records = pipeline(createReadStream(path), utf8From(read.encoding ?? 'utf-8'), parser, () => undefined) as AsyncIterable<string[]>;
  const iterator = records[Symbol.asyncIterator]();
  const first = await iterator.next();
  return { header: first.done === true ? null : first.value, rows: { [Symbol.asyncIterator]: () => iterator } };
}

/** Every record of a CSV file without a header (rows written ahead), cells as they were before `spreadsheetSafeCell`. */
export async function* readCsvRecords(path: string): AsyncGenerator<string[]> {
  const { header, rows } = await readCsvFile(path);
  if (header === null) return;
  yield header.map(unescapeSpreadsheetCell);
  for await (const record of rows) yield record.map(unescapeSpreadsheetCell);
}

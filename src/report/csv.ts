/**
 * Records to CSV text, in chunks, without holding the whole file. Every cell
 * goes through `spreadsheetSafeCell`; csv-stringify quotes cells holding a
 * comma, quote, CR or LF. Lines end in CRLF (RFC 4180, what Excel writes).
 */
import { stringify } from 'csv-stringify/sync';
import { spreadsheetSafeCell } from './cells.js';

export const RECORD_DELIMITER = '\r\n';
export const UTF8_BOM = '\uFEFF';

/** Records stringified per call: big enough to amortize, small enough to stream. */
const RECORDS_PER_CHUNK = 1000;

/** csv-stringify only quotes the configured record delimiter; a lone CR or LF must be quoted too. */
const STRINGIFY_OPTIONS = { record_delimiter: RECORD_DELIMITER, quoted_match: /[\r\n]/ };

/** CSV text of some records (no BOM). */
export function csvText(records: readonly (readonly string[])[]): string {
  return stringify(
    records.map((r) => r.map(spreadsheetSafeCell)),
    STRINGIFY_OPTIONS,
  );
}

export interface CsvChunkOptions {
  bom: boolean;
}

/**
 * The file as text chunks: optional BOM, the header, then the records. The
 * source is pulled only as fast as the consumer takes chunks, so backpressure
 * reaches the producer (a database cursor, say).
 */
export async function* csvChunks(
  header: readonly string[],
  records: AsyncIterable<readonly string[]> | Iterable<readonly string[]>,
  opts: CsvChunkOptions,
): AsyncGenerator<string, void, undefined> {
  yield (opts.bom ? UTF8_BOM : '') + csvText([header]);
  let batch: (readonly string[])[] = [];
  for await (const record of records) {
    batch.push(record);
    if (batch.length >= RECORDS_PER_CHUNK) {
      yield csvText(batch);
      batch = [];
    }
  }
  if (batch.length > 0) yield csvText(batch);
}

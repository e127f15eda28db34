/**
 * A taken file whose upload went on: is the part read still its beginning (appended) or was it rewritten, and
 * which complete records came after what was read, each with its bytes, for a remainder file finance can drop
 * again. A last record without its line break, blank lines and control lines are left out.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { CsvError, parse } from 'csv-parse';
import { sha256OfFile } from '../inbox/claim.js';
import { trimSpaces } from '../rules/text.js';
import { isControlRecord } from './control.js';
import { lineAtByte, RecordLines } from './lines.js';
import { RECORD_DELIMITERS } from './options.js';

/** One record of the file: its first line, its bytes as written (line break included) and its values. */
export interface SourceRecord {
  line: number;
  bytes: Buffer;
  fields: string[];
  /** Byte offset just after it. */
  end: number;
}

/** What is left out of the records after the cut, beside the records themselves. */
export interface RestTally {
  controlLines: number;
  /** The last record is not complete (no line break yet, or an unclosed quote): from its line and byte to the end. */
  partial: { line: number; fromByte: number; toByte: number } | null;
}

/** How the file now stands against the part taken. */
export interface Continuation {
  /** The first `takenBytes` are no longer those read (their SHA-256 differs, or the file is shorter now). */
  rewritten: boolean;
  /** The line read last did not end where the file was taken and went on after it: that line (null: it ended there). */
  cutLine: number | null;
  /** Where the records that were never read begin: byte offset and line. */
  restFrom: number;
  restLine: number;
}

const LF = 0x0a;
const CR = 0x0d;

export interface ReadOptions {
  delimiter: string;
  /** The largest record read (config batch.format.maxRecordBytes); a larger one ends the records. */
  maxRecordBytes: number;
}

/**
 * How the file at `path` (now `sizeNow` bytes) continues the part taken (`taken`: its size and SHA-256).
 * With `wholeFile` (nothing of the part read was paid), the rest starts after the header, not at the cut.
 */
export async function continuationOf(
  path: string,
  taken: { size: number; sha256: string },
  sizeNow: number,
  opts: ReadOptions & { wholeFile: boolean },
): Promise<Continuation> {
  const rewritten = sizeNow < taken.size || (await sha256OfFile(path, taken.size)) !== taken.sha256;
  if (opts.wholeFile || taken.size === 0) {
    const header = await headerRecord(path, sizeNow, opts);
    const from = header?.end ?? sizeNow;
    return { rewritten, cutLine: null, restFrom: from, restLine: await lineAtByte(path, from) };
  }
  const [last, next] = await bytesAt(path, taken.size - 1, 2);
  // A CRLF split by the cut: its LF is the end of the line read, not the start of the rest.
  const from = last === CR && next === LF ? taken.size + 1 : taken.size;
  const ended = last === LF || last === CR;
  return {
    rewritten,
    cutLine: ended ? null : await lineAtByte(path, taken.size - 1),
    restFrom: from,
    restLine: await lineAtByte(path, from),
  };
}

/** The file's header record (the first one that is not blank), its bytes from the start of the file (a BOM included). */
export async function headerRecord(path: string, sizeNow: number, opts: ReadOptions): Promise<SourceRecord | null> {
  const tally: RestTally = { controlLines: 0, partial: null };
  let start = 0;
  for await (const record of recordsIn(path, 0, sizeNow, 1, opts, tally, { blank: true })) {
    if (record.fields.every((f) => trimSpaces(f) === '')) {
      start = record.end;
      continue;
    }
    const bytes = Buffer.concat([await bytesAt(path, 0, start), record.bytes]);
    return { ...record, line: 1, bytes };
  }
  return null;
}

/** The complete records from the continuation's rest to `sizeNow`; `tally` counts control lines and notes a partial end. */
export async function* restRecords(
  path: string,
  continuation: Continuation,
  sizeNow: number,
  opts: ReadOptions,
  tally: RestTally,
): AsyncGenerator<SourceRecord> {
  let skipCut = continuation.cutLine !== null;
  for await (const record of recordsIn(path, continuation.restFrom, sizeNow, continuation.restLine, opts, tally, { blank: false })) {
    if (skipCut) {
      skipCut = false;
      continue;
    }
    if (isControlRecord(record.fields)) {
      tally.controlLines++;
      continue;
    }
    yield record;
  }
}

/** A record as csv-parse hands it over while a chunk is parsed: its values and the offset just after it. */
interface Parsed {
  fields: string[];
  end: number;
}

/**
 * Records between two offsets, each with its bytes; one without a line break or that csv-parse cannot finish
 * ends them (noted in `tally.partial`). Taken in `on_record`, so an error at the end loses none before it.
 */
async function* recordsIn(
  path: string,
  from: number,
  to: number,
  firstLine: number,
  opts: ReadOptions,
  tally: RestTally,
  keep: { blank: boolean },
): AsyncGenerator<SourceRecord> {
  if (to <= from) return;
  let parsed: Parsed[] = [];
  let failure = null as Error | null;
  const parser = parse({
    bom: false,
    delimiter: opts.delimiter,
    record_delimiter: RECORD_DELIMITERS,
    relax_column_count: true,
    skip_empty_lines: false,
    max_record_size: opts.maxRecordBytes,
    on_record: (fields: string[], context: { bytes: number }) => {
      parsed.push({ fields, end: context.bytes });
      return null; // taken here: nothing for the stream's readable side
    },
  });
  parser.on('error', (err) => {
    failure = err;
  });
  const closed = new Promise<void>((resolve) => parser.once('close', resolve));
  parser.resume();
  // The bytes read and not yet handed out in a record, from offset `heldFrom` (relative to `from`).
  const held: Buffer[] = [];
  let heldFrom = 0;
  const take = (start: number, end: number): Buffer => {
    const parts: Buffer[] = [];
    while (held.length > 0) {
      const chunk = held[0] as Buffer;
      const chunkEnd = heldFrom + chunk.length;
      parts.push(chunk.subarray(Math.max(0, start - heldFrom), Math.min(chunk.length, end - heldFrom)));
      if (chunkEnd > end) break;
      held.shift();
      heldFrom = chunkEnd;
    }
    return Buffer.concat(parts);
  };
  const lines = new RecordLines(firstLine);
  let done = 0;
  const source = createReadStream(path, { start: from, end: to - 1 });
  const chunks = source[Symbol.asyncIterator]();
  try {
    for (let reading = true; reading && failure === null;) {
      const next = await chunks.next();
      if (next.done) {
        reading = false;
        parser.end();
        await closed;
      } else {
        held.push(next.value as Buffer);
        parser.write(next.value);
      }
      const ready = parsed;
      parsed = [];
      for (const record of ready) {
        const bytes = take(done, record.end);
        const line = lines.startOf(record.fields);
        const last = bytes[bytes.length - 1];
        if (last !== LF && last !== CR) {
          tally.partial = { line, fromByte: from + done, toByte: to };
          return;
        }
        done = record.end;
        if (!keep.blank && record.fields.every((f) => trimSpaces(f) === '')) continue;
        yield { line, bytes, fields: record.fields, end: from + record.end };
      }
    }
    if (failure !== null && !(failure instanceof CsvError)) throw failure;
    if (from + done < to) tally.partial = { line: lines.nextStart, fromByte: from + done, toByte: to };
  } finally {
    source.destroy();
    parser.destroy();
  }
}

/** `length` bytes from `offset` (fewer at the end of the file). */
async function bytesAt(path: string, offset: number, length: number): Promise<Buffer> {
  if (length <= 0) return Buffer.alloc(0);
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, offset);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/**
 * Physical line numbers, counted from the records themselves (empty lines come as records too): csv-parse's
 * per-record `info` costs more than parsing, and counts a CRLF inside quotes as two lines.
 */
import { createReadStream } from 'node:fs';

const LINE_BREAKS = /\r\n|\r|\n/g;

/** Line breaks inside a record's values (CRLF, LF and a lone CR are one each). */
function lineBreaksIn(fields: readonly string[]): number {
  let n = 0;
  for (const field of fields) {
    if (field.includes('\n') || field.includes('\r')) n += field.match(LINE_BREAKS)?.length ?? 0;
  }
  return n;
}

export class RecordLines {
  /** `firstLine`: the line of the first record (1 when reading from the start of the file). */
  constructor(private next = 1) {}

  /** The physical line where this record starts (call once per record, in order). */
  startOf(fields: readonly string[]): number {
    const start = this.next;
    this.next += 1 + lineBreaksIn(fields);
    return start;
  }

  /** The physical line where the record being parsed starts (csv-parse stopped inside it). */
  get nextStart(): number {
    return this.next;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** The physical line holding byte `offset` of a file (CRLF, LF and a lone CR are one line break each). */
export function lineAtByte(path: string, offset: number): Promise<number> {
  // Through the byte at `offset` itself: it tells a lone CR just before it from a CRLF.
  return lineAtByteOf(createReadStream(path, { end: offset }), offset);
}

/** The line holding byte `offset` of a stream of bytes (a decompressed file); reads no further than that byte. */
export async function lineAtByteOf(bytes: AsyncIterable<Buffer>, offset: number): Promise<number> {
  let line = 1;
  let at = 0;
  let previous = -1;
  for await (const chunk of bytes) {
    for (const byte of chunk) {
      if (at > offset) return line;
      if (previous === CR && byte !== LF) line++;
      if (byte === LF && at < offset) line++;
      previous = byte;
      at++;
    }
  }
  return line;
}

/**
 * Physical line numbers, from csv-parse's own counts (`info.lines` and
 * `info.empty_lines`, given to `on_record` and carried by a CsvError): a
 * record starts on the line after the previous record ended, past the empty
 * lines skipped between them. csv-parse counts a CRLF inside a quoted value
 * as two lines (its CR and its LF), so those are taken off again.
 */
import { createReadStream } from 'node:fs';

/** What csv-parse says of where it is: `InfoRecord`, or the same fields on a CsvError. */
export interface ParserPosition {
  lines: number;
  empty_lines: number;
}

const CRLF = '\r\n';

function crlfCount(fields: readonly string[]): number {
  let n = 0;
  for (const field of fields) {
    for (let at = field.indexOf(CRLF); at >= 0; at = field.indexOf(CRLF, at + 2)) n++;
  }
  return n;
}

export class RecordLines {
  /** csv-parse's line count where the previous record ended, and its count of empty lines then. */
  private lastEnd = 0;
  private lastEmpty = 0;
  /** CRLFs inside quoted values so far: each counted twice by csv-parse. */
  private extra = 0;

  /** The physical line where the record just parsed starts (call once per record, in order). */
  startOf(fields: readonly string[], at: ParserPosition): number {
    const start = this.nextStart(at);
    // A record on more lines than one holds line breaks in quoted values.
    if (at.lines - this.lastEnd - (at.empty_lines - this.lastEmpty) > 1) this.extra += crlfCount(fields);
    this.lastEnd = at.lines;
    this.lastEmpty = at.empty_lines;
    return start;
  }

  /** The physical line where the record being parsed starts, when csv-parse stops inside it (a CsvError). */
  nextStart(at: ParserPosition): number {
    return this.lastEnd + 1 + (at.empty_lines - this.lastEmpty) - this.extra;
  }
}

const LF = 0x0a;
const CR = 0x0d;

/** The physical line holding byte `offset` of a file (CRLF, LF and a lone CR are one line break each). */
export async function lineAtByte(path: string, offset: number): Promise<number> {
  let line = 1;
  let at = 0;
  let previous = -1;
  // Through the byte at `offset` itself: it tells a lone CR just before it from a CRLF.
  for await (const chunk of createReadStream(path, { end: offset })) {
    for (const byte of chunk as Buffer) {
      if (previous === CR && byte !== LF) line++;
      if (byte === LF && at < offset) line++;
      previous = byte;
      at++;
    }
  }
  return line;
}

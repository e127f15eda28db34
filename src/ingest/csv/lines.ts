/**
 * Physical line numbers. csv-parse's own `info.lines` miscounts CRLF inside
 * quoted fields (it counts CR and LF separately), so the byte stream is
 * scanned here instead: every line break (CRLF, LF or a lone CR) is queued
 * with its byte range, and a record's start line is found from the byte
 * offset where the previous record ended. Only the breaks between the parser
 * and the reader are queued, so memory follows the stream buffers, not the
 * file.
 */

const LF = 0x0a;
const CR = 0x0d;
const BOM = [0xef, 0xbb, 0xbf];

export class LineTracker {
  private starts: number[] = [];
  private ends: number[] = [];
  private head = 0;
  /** Breaks dropped from the queue (all end at or before the last query). */
  private passed = 0;
  private offset = 0;
  private crPending = false;
  private bomEnd = 0;

  /** `bom`: the bytes are a file's from its start, so they may open with a BOM (a part of a file after its start may not). */
  constructor(private readonly bom = true) {}

  /** Bytes seen so far. */
  get bytes(): number {
    return this.offset;
  }

  feed(chunk: Uint8Array): void {
    const base = this.offset;
    const len = chunk.length;
    if (len === 0) return;
    if (this.bom) this.detectBom(chunk, base);
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let i = 0;
    if (this.crPending) {
      this.crPending = false;
      if (buf[0] === LF) {
        this.push(base - 1, base + 1);
        i = 1;
      } else {
        this.push(base - 1, base);
      }
    }
    let nextLf = buf.indexOf(LF, i);
    let nextCr = buf.indexOf(CR, i);
    while (nextLf !== -1 || nextCr !== -1) {
      if (nextCr !== -1 && (nextLf === -1 || nextCr < nextLf)) {
        if (nextCr + 1 === len) {
          // CR or CRLF? The next chunk decides.
          this.crPending = true;
          break;
        }
        if (buf[nextCr + 1] === LF) {
          this.push(base + nextCr, base + nextCr + 2);
          i = nextCr + 2;
          nextLf = buf.indexOf(LF, i);
        } else {
          this.push(base + nextCr, base + nextCr + 1);
          i = nextCr + 1;
        }
        nextCr = buf.indexOf(CR, i);
      } else {
        this.push(base + nextLf, base + nextLf + 1);
        i = nextLf + 1;
        nextLf = buf.indexOf(LF, i);
      }
    }
    this.offset += len;
  }

  /** End of input: a CR at the very end is a break of its own. */
  finish(): void {
    if (this.crPending) {
      this.crPending = false;
      this.push(this.offset - 1, this.offset);
    }
  }

  /**
   * The line where the next record starts when the previous one ended at
   * byte `pos` (0 for the first record): the first line at or after `pos`
   * that is not empty. Positions must not go backwards between calls.
   */
  contentLineAfter(pos: number): number {
    this.dropBefore(pos);
    let line = this.passed + 1;
    let p = pos === 0 ? this.bomEnd : pos;
    for (let k = this.head; k < this.starts.length && this.starts[k] === p; k++) {
      p = this.ends[k] ?? p;
      line++;
    }
    return line;
  }

  /** The line holding byte `pos` (pos not before the last contentLineAfter position). */
  lineAt(pos: number): number {
    let line = this.passed + 1;
    for (let k = this.head; k < this.ends.length && (this.ends[k] ?? Infinity) <= pos; k++) line++;
    return line;
  }

  private detectBom(chunk: Uint8Array, base: number): void {
    for (let i = 0; base + i < BOM.length && i < chunk.length; i++) {
      if (chunk[i] !== BOM[base + i]) {
        this.bomEnd = 0;
        return;
      }
      if (base + i === BOM.length - 1) this.bomEnd = BOM.length;
    }
  }

  private push(start: number, end: number): void {
    this.starts.push(start);
    this.ends.push(end);
  }

  private dropBefore(pos: number): void {
    while (this.head < this.ends.length && (this.ends[this.head] ?? Infinity) <= pos) {
      this.head++;
      this.passed++;
    }
    // Compact now and then so the arrays do not grow with the file; often enough that they stay small and
    // short-lived (a reader's young collections then free them instead of moving them to the old generation).
    if (this.head > 256 && this.head * 2 > this.starts.length) {
      this.starts = this.starts.slice(this.head);
      this.ends = this.ends.slice(this.head);
      this.head = 0;
    }
  }
}

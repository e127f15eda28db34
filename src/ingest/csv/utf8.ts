/**
 * UTF-8 gatekeeper in front of csv-parse: bytes checked with isUtf8 (never replaced with U+FFFD) and passed on
 * unchanged; a refused chunk is scanned for the exact offset. Notes the last byte (no final line break: a cut upload?).
 */
import { isUtf8 } from 'node:buffer';
import { Transform } from 'node:stream';

export class InvalidUtf8Error extends Error {
  override readonly name = 'InvalidUtf8Error';
  constructor(
    readonly offset: number,
    readonly truncated: boolean,
  ) {
    super(truncated ? `file ends inside a UTF-8 sequence at byte offset ${offset}` : `invalid UTF-8 at byte offset ${offset}`);
  }
}

function inRange(b: number | undefined, lo: number, hi: number): boolean {
  return b !== undefined && b >= lo && b <= hi;
}

/** Index of the first byte starting an invalid UTF-8 sequence (WHATWG rules), -1 if none; a sequence cut by the end is not invalid. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lo = 0xa0;
      if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lo = 0x90;
      if (b === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return -1;
      const c = bytes[i + k];
      if (k === 1 ? !inRange(c, lo, hi) : !inRange(c, 0x80, 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** Length of an unfinished multi-byte sequence at the end of `bytes` (0..3). */
export function incompleteTailLength(bytes: Uint8Array): number {
  const n = bytes.length;
  for (let back = 1; back <= Math.min(3, n); back++) {
    const b = bytes[n - back] as number;
    if ((b & 0xc0) === 0x80) continue;
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

const NOTHING = new Uint8Array(0);

const LF = 0x0a;
const CR = 0x0d;

/** The check, as a Transform made from options (csv-parse reads what it passes on). */
export class Utf8Check {
  private offset = 0;
  /** Bytes of a sequence that started in an earlier chunk and is not finished yet. */
  private carry: Uint8Array = NOTHING;
  private lastByte = -1;

  readonly stream = new Transform({
    transform: (chunk: Buffer, _encoding, callback) => callback(this.check(chunk), chunk),
    flush: (callback) => callback(this.carry.length > 0 ? new InvalidUtf8Error(this.offset - this.carry.length, true) : null),
  });

  /** Whether the bytes seen end with a line break (LF, or a lone CR). */
  get endsWithLineBreak(): boolean {
    return this.lastByte === LF || this.lastByte === CR;
  }

  private check(chunk: Buffer): InvalidUtf8Error | null {
    const joined = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    // isUtf8 takes whole sequences only: an unfinished one at the end waits for the next chunk, once it is
    // known to be a good start (so a bad byte at the very end is bad, not a file cut short).
    const tail = incompleteTailLength(joined);
    const whole = joined.subarray(0, joined.length - tail);
    const rest = joined.subarray(joined.length - tail);
    if (!isUtf8(whole) || firstInvalidUtf8(rest) !== -1) {
      // isUtf8 says no but not where; find the offset ourselves.
      return new InvalidUtf8Error(this.offset - this.carry.length + Math.max(firstInvalidUtf8(joined), 0), false);
    }
    this.carry = tail > 0 ? Uint8Array.from(rest) : NOTHING;
    this.offset += chunk.length;
    if (chunk.length > 0) this.lastByte = chunk[chunk.length - 1] as number;
    return null;
  }
}

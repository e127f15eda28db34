import { describe, expect, it } from 'vitest';
import { prng } from '../../samples/prng.mjs';
import { LineTracker, firstInvalidUtf8, headerLine, incompleteTailLength, sniffDelimiter } from '../../src/ingest/csv/index.js';

function decodes(bytes: Uint8Array): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

describe('UTF-8 offset scanner', () => {
  it('finds the first bad sequence of the classic cases', () => {
    const at = (hex: string): number => firstInvalidUtf8(Buffer.from(hex.replace(/ /g, ''), 'hex'));
    expect(at('41 c3 a9 42')).toBe(-1); // é
    expect(at('41 e9 42')).toBe(1); // Latin-1 é
    expect(at('41 80')).toBe(1); // lone continuation
    expect(at('c0 80')).toBe(0); // overlong NUL
    expect(at('e0 80 80')).toBe(0); // overlong
    expect(at('ed a0 80')).toBe(0); // surrogate
    expect(at('f4 90 80 80')).toBe(0); // above U+10FFFF
    expect(at('f0 9f 98 80 ff')).toBe(4); // emoji then 0xFF
    expect(at('41 e2 82')).toBe(-1); // unfinished, not invalid
    expect(incompleteTailLength(Buffer.from('41e282', 'hex'))).toBe(2);
    expect(incompleteTailLength(Buffer.from('41e282ac', 'hex'))).toBe(0);
    expect(incompleteTailLength(Buffer.from('f09f98', 'hex'))).toBe(3);
  });

  it('agrees with the fatal TextDecoder on random bytes', () => {
    const rand = prng(7);
    const pieces = [[0x41], [0xc3, 0xa9], [0xe2, 0x82, 0xac], [0xf0, 0x9f, 0x98, 0x80], [0x0a]];
    for (let n = 0; n < 3000; n++) {
      const bytes: number[] = [];
      const len = 1 + Math.floor(rand() * 12);
      for (let i = 0; i < len; i++) {
        if (rand() < 0.15) bytes.push(Math.floor(rand() * 256));
        else bytes.push(...(pieces[Math.floor(rand() * pieces.length)] ?? []));
      }
      const buf = Uint8Array.from(bytes);
      const at = firstInvalidUtf8(buf);
      const complete = at === -1 && incompleteTailLength(buf) === 0;
      expect(decodes(buf)).toBe(complete);
      // Everything before the reported offset is valid on its own.
      if (at >= 0) expect(decodes(buf.subarray(0, at))).toBe(true);
    }
  });
});

describe('line tracker', () => {
  function lines(text: string, recordEnds: number[], split: number[]): number[] {
    const tracker = new LineTracker();
    const bytes = Buffer.from(text);
    let from = 0;
    for (const cut of [...split, bytes.length]) {
      tracker.feed(bytes.subarray(from, cut));
      from = cut;
    }
    tracker.finish();
    return [0, ...recordEnds].map((end) => tracker.contentLineAfter(end));
  }

  it('counts CRLF, LF and lone CR once each, whatever the chunking', () => {
    const text = 'h\r\n\r\na\nb\r\rc\r\n';
    // Records end after "h\r\n" (3), "a\n" (7), "b\r" (9), and "c\r\n" (13 = end).
    const ends = [3, 7, 9];
    const whole = lines(text, ends, []);
    expect(whole).toEqual([1, 3, 4, 6]);
    for (let cut = 1; cut < text.length; cut++) expect(lines(text, ends, [cut])).toEqual(whole);
    expect(lines(text, ends, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])).toEqual(whole);
  });

  it('skips a BOM before leading blank lines', () => {
    expect(lines('\ufeff\n\nh\n', [], [])).toEqual([3]);
    expect(lines('\ufeff\n\nh\n', [], [1, 2])).toEqual([3]);
  });
});

describe('delimiter detection', () => {
  it('decides from the header line, ignoring quoted text and later lines', () => {
    expect(sniffDelimiter('a,b,c\n1;2;3;4;5\n')).toBe(',');
    expect(sniffDelimiter('\ufeffa;b;"c,d,e"\r\n')).toBe(';');
    expect(sniffDelimiter('\n\nsingle\n')).toBe(',');
    expect(headerLine('\ufeff\r\n"a\nb";c\nnext')).toBe('"a\nb";c');
  });
});

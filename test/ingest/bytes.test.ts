import { describe, expect, it } from 'vitest';
import { prng } from '../../samples/prng.mjs';
import { firstInvalidUtf8, headerLine, incompleteTailLength, lineAtByte, sniffDelimiter } from '../../src/ingest/csv/index.js';
import { tempCsv } from './helpers.js';

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

describe('line of a byte (where a UTF-8 error is)', () => {
  it('counts CRLF, LF and lone CR once each', async () => {
    const path = await tempCsv('h\r\n\r\na\nb\r\rc\r\n');
    // h at 0, the first CRLF's LF at 2, a at 5, b at 7, c at 10.
    const lines = await Promise.all([0, 2, 5, 7, 10].map((offset) => lineAtByte(path, offset)));
    expect(lines).toEqual([1, 1, 3, 4, 6]);
  });
});

describe('delimiter detection', () => {
  it('decides from the header line, ignoring quoted text and later lines', () => {
    expect(sniffDelimiter('a,b,c\n1;2;3;4;5\n')).toBe(',');
    expect(sniffDelimiter('\ufeffa;b;"c,d,e"\r\n')).toBe(';');
    // Excel's tab-delimited text; a tab inside quotes does not count, and ties go to the comma, then the semicolon.
    expect(sniffDelimiter('a\tb\tc,d\n1\t2\t3,4\n')).toBe('\t');
    expect(sniffDelimiter('a,b,"c\t\t\td"\n')).toBe(',');
    expect(sniffDelimiter('a\tb,c\n')).toBe(',');
    expect(sniffDelimiter('a\tb;c\n')).toBe(';');
    expect(sniffDelimiter('\n\nsingle\n')).toBe(',');
    expect(headerLine('\ufeff\r\n"a\nb";c\nnext')).toBe('"a\nb";c');
  });
});

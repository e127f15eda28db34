import { describe, expect, it } from 'vitest';
import { spreadsheetSafeCell, unescapeSpreadsheetCell } from '../../src/report/index.js';

describe('spreadsheetSafeCell', () => {
  it.each(['=SUM(A1)', '+1', '-2+3', '@x', '\tx', '\rx', '-', '=1,2'])('prefixes %j so it cannot run as a formula', (cell) => {
    expect(spreadsheetSafeCell(cell)).toBe(`'${cell}`);
  });

  it.each(['-5', '100.50', '000123', '0', '-0.25', 'abc', 'Juan dela Cruz', '', 'PHP', '2026-01-01T00:00:00Z'])(
    'leaves %j as it is',
    (cell) => {
      expect(spreadsheetSafeCell(cell)).toBe(cell);
    },
  );

  it('prefixes a cell that already starts with a quote, so reading back is one rule', () => {
    expect(spreadsheetSafeCell("'=x")).toBe("''=x");
    for (const original of ["'=x", '=x', "'", 'plain', '-5', '-x']) {
      expect(unescapeSpreadsheetCell(spreadsheetSafeCell(original))).toBe(original);
    }
  });

  it('a plain number is left alone whatever it starts with; any other cell is prefixed when it starts with a trigger or a quote', () => {
    const starts = ['=', '+', '-', '@', '\t', '\r', "'", '0', '9', 'a', ' ', '.', '"', ',', '\n', '\uFF1D', ''];
    const rests = ['', '5', '5.25', '.5', '5.', '1e5', 'x', '-5', '=1', ' 5'];
    for (const start of starts)
      for (const rest of rests) {
        const cell = start + rest;
        const prefixed = !/^-?\d+(\.\d+)?$/.test(cell) && ['=', '+', '-', '@', '\t', '\r', "'"].includes(cell.charAt(0));
        // After a tab, CR or LF (a place a spreadsheet may start a cell) a trigger gets its `'` too.
        const inner = ['\t', '\r', '\n'].includes(start) && /^[=+\-@']/.test(rest) ? `${start}'${rest}` : cell;
        expect(spreadsheetSafeCell(cell), JSON.stringify(cell)).toBe(prefixed ? `'${inner}` : inner);
      }
  });

  it('puts a quote before a trigger (or a quote) after a ";", tab, CR or LF and any spaces or quotes, and reads it back', () => {
    const written: Record<string, string> = {
      'Ana;=1+1;x': "Ana;'=1+1;x",
      "x;=cmd|' /C calc'!A0": "x;'=cmd|' /C calc'!A0",
      'a; =1': "a; '=1",
      'a;  "@SUM(1)': `a;  "'@SUM(1)`,
      'a\t+1': "a\t'+1",
      'a\n-x': "a\n'-x",
      'a\r\n=1': "a\r\n'=1",
      'a;\t=1': "a;'\t'=1",
      "a;'b": "a;''b",
      'a;-5': "a;'-5",
      '=a;@b': "'=a;'@b",
    };
    for (const [cell, text] of Object.entries(written)) {
      expect(spreadsheetSafeCell(cell), JSON.stringify(cell)).toBe(text);
      expect(unescapeSpreadsheetCell(text), JSON.stringify(text)).toBe(cell);
    }
  });

  it.each(['a;b', 'a; b', 'a;5', 'Dela Cruz; Juan', 'a,=1', 'a=1;b', 'a;b=1', 'a;"b"'])(
    'leaves %j, no trigger after a separator',
    (cell) => {
      expect(spreadsheetSafeCell(cell)).toBe(cell);
    },
  );

  it('no separator is ever followed by an unescaped trigger, and reading back gives the original', () => {
    const alphabet = ['a', ';', '\t', '\r', '\n', ' ', '"', "'", '=', '+', '-', '@', '5'];
    const cells: string[] = [''];
    for (let len = 1; len <= 4; len++)
      for (let i = 0; i < alphabet.length ** len; i++) {
        let cell = '';
        for (let n = i, k = 0; k < len; k++, n = Math.floor(n / alphabet.length)) cell += alphabet[n % alphabet.length];
        cells.push(cell);
      }
    for (const cell of cells) {
      const written = spreadsheetSafeCell(cell);
      expect(written, JSON.stringify(cell)).not.toMatch(/[;\t\r\n][ "]*[=+\-@\t\r]/);
      expect(unescapeSpreadsheetCell(written), JSON.stringify(cell)).toBe(cell);
    }
  });
});

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
        expect(spreadsheetSafeCell(cell), JSON.stringify(cell)).toBe(prefixed ? `'${cell}` : cell);
      }
  });
});

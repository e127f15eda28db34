/**
 * Whether a number cell's format shows the value it holds: an amount or identifier shown as another value
 * than the one read would be paid as what the clerk never saw.
 */
import { describe, expect, it } from 'vitest';
import { amountFormatHides, formatShowsDate, identifierFormatShowsDigits, textFormatHides } from '../../src/ingest/xlsx/number-format.js';
import { exactNumberText } from '../../src/ingest/xlsx/index.js';

const hides = (numFmt: string | null, value: number): string | null => amountFormatHides(numFmt, exactNumberText(value) as string, value);

describe('amountFormatHides', () => {
  it('accepts formats that show the value held', () => {
    const cases: [string | null, number][] = [
      [null, 1500.55],
      ['General', 1500.55],
      ['0', 1500],
      ['@', 1500.5],
      ['0.00', 1500.5],
      ['0.00', 1500.55],
      ['#,##0', 1500],
      ['#,##0.00', 1500.5],
      ['#,##0.000', 12.345],
      ['0.##', 1500.5],
      ['"$"#,##0.00', 1500.5],
      ['[$€-407] #,##0.00', 1500.5],
      ['[$-409]#,##0.00', 1500.5],
      ['#,##0.00_);[Red](#,##0.00)', 1500.5],
      ['#,##0.00 "PHP"', 1500.5],
      ['#,##0.00;-#,##0.00;"-"', 1500.5],
      ['#,##0;@', 1500],
      ['0.00\\ ', 1500.5],
      // Currency symbols as Excel writes them: a locale tag after the symbol, abbreviations with a point.
      ['[$€-x-euro2] #,##0.00', 1500.5],
      ['#,##0.00 [$€-x-euro1]', 1500.5],
      ['#,##0.00"р.";[Red]\\-#,##0.00"р."', 1500.5],
      ['#,##0.00 [$kr.-406]', 1500.5],
      ['#,##0.00 [$Fr.-100C]', 1500.5],
      ['[$Fr.-100C] #,##0.00', 1500.5],
      ['_(* #,##0.00_);_(* (#,##0.00);_(* "-"??_);_(@_)', 1500.5],
    ];
    for (const [numFmt, value] of cases) expect([numFmt, value, hides(numFmt, value)]).toEqual([numFmt, value, null]);
  });

  it('names what a format does to show another amount', () => {
    expect(hides('#,##0', 1500.5)).toBe('shows no decimals, so it is rounded');
    expect(hides('0', 1500.5)).toBe('shows no decimals, so it is rounded');
    expect(hides('0.0', 1500.55)).toBe('shows only 1 decimal(s), so it is rounded');
    expect(hides('#,##0,"K"', 1500000)).toBe('shows it divided by a thousand');
    expect(hides('#,##0,', 1500000)).toBe('shows it divided by a thousand');
    expect(hides('0,.00', 1500)).toBe('shows it divided by a thousand');
    expect(hides('#,##0.00,,"M";(#,##0.00,,"M")', 1500000)).toBe('shows it divided by a thousand');
    expect(hides('0%', 0.25)).toBe('shows it as a percentage (a hundred times the value)');
    expect(hides('0.00%', 0.25)).toBe('shows it as a percentage (a hundred times the value)');
    expect(hides('yyyy-mm-dd', 45678)).toBe('shows it as a date or time');
    expect(hides('[h]:mm', 1.5)).toBe('shows it as a date or time');
    expect(hides('0.00E+00', 1500)).toBe('shows it in scientific notation');
    expect(hides('# ?/?', 1500.5)).toBe('shows it as a fraction');
    expect(hides('"1"0.00', 500)).toBe('shows digits the cell does not hold');
    expect(hides('0"."00', 150050)).toBe('shows a point or comma the cell does not hold');
    expect(hides('"."00', 5)).toBe('shows a point or comma the cell does not hold');
    expect(hides('\\.00', 5)).toBe('shows a point or comma the cell does not hold');
    expect(hides('#","##0.00', 1500.5)).toBe('shows a point or comma the cell does not hold');
    expect(hides(';;;', 1500)).toBe('shows no number at all');
    expect(hides('"Paid"', 1500)).toBe('shows no number at all');
  });

  it('reads the section the value is shown with, and every section when conditions choose', () => {
    // Negative and zero values have sections of their own.
    expect(hides('0.00;0', 1500.5)).toBeNull();
    expect(hides('0.00;0', -1500.5)).toBe('shows no decimals, so it is rounded');
    expect(hides('0.00;0.00;0', 0)).toBeNull();
    expect(hides('[>=1000]#,##0;0.00', 1500.5)).toBe('shows no decimals, so it is rounded');
  });
});

describe('identifierFormatShowsDigits', () => {
  it('accepts General, 0, Text and zero padding only', () => {
    for (const numFmt of [null, 'General', 'general', '0', '@', '000000000000'])
      expect([numFmt, identifierFormatShowsDigits(numFmt)]).toEqual([numFmt, true]);
    for (const numFmt of ['0000 0000 0000', '"0000"00000000', '000000000000;@', '#,##0', '0.00', '0%', '"0"000000000'])
      expect([numFmt, identifierFormatShowsDigits(numFmt)]).toEqual([numFmt, false]);
  });
});

describe('textFormatHides', () => {
  it('accepts formats that show text as typed', () => {
    for (const numFmt of [null, 'General', '@', '0.00', '#,##0.00;(#,##0.00)', '0;0;0;@', '[Red]@', '_(@_)', '0.00;0.00;0.00;General']) {
      expect([numFmt, textFormatHides(numFmt)]).toEqual([numFmt, null]);
    }
  });

  it('names what a text section shows instead', () => {
    expect(textFormatHides(';;;')).toBe('shows none of it');
    expect(textFormatHides('0;0;0;')).toBe('shows none of it');
    expect(textFormatHides('0.00;0.00;0.00;"100.00"')).toBe('shows other text instead of it');
    expect(textFormatHides('"Mr "@')).toBe('shows other characters beside it');
    expect(textFormatHides('@@')).toBe('shows other characters beside it');
  });
});

describe('formatShowsDate', () => {
  it('tells date and time formats from number formats', () => {
    for (const numFmt of ['m/d/yyyy', 'yyyy"年"m"月"d"日"', 'h:mm AM/PM', '[h]:mm:ss', 'mmss.0'])
      expect([numFmt, formatShowsDate(numFmt)]).toEqual([numFmt, true]);
    for (const numFmt of [null, 'General', '0.00E+00', '"$"#,##0.00', '#,##0.00 "days"', '@'])
      expect([numFmt, formatShowsDate(numFmt)]).toEqual([numFmt, false]);
  });
});

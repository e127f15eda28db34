/** Which references a spreadsheet makes of one another by dropping leading zeros (src/domain/leading-zeros.ts). */
import { describe, expect, it } from 'vitest';
import { referenceDigits, sameButLeadingZeros } from '../../src/domain/leading-zeros.js';

describe('references but for leading zeros', () => {
  it('keeps the digits of an all-digit reference without its leading zeros, of any other none', () => {
    expect(['000123', '123', '0', '000', '0010', '12a', 'A-1', '', '１２３', '1.0'].map(referenceDigits)).toEqual([
      '123',
      '123',
      '0',
      '0',
      '10',
      null,
      null,
      null,
      null,
      null,
    ]);
  });

  it('pairs two spellings of the same digits, either way, some zeros kept or none', () => {
    expect(sameButLeadingZeros('123', '000123')).toBe(true);
    expect(sameButLeadingZeros('000123', '123')).toBe(true);
    expect(sameButLeadingZeros('0', '000')).toBe(true);
    // A column of the format `0000` shows `000123`, saved as `123`, as `0123`.
    expect(sameButLeadingZeros('0123', '000123')).toBe(true);
    expect(sameButLeadingZeros('000123', '0123')).toBe(true);
    expect(sameButLeadingZeros('123', '123')).toBe(false);
    expect(sameButLeadingZeros('123', '1230')).toBe(false);
    expect(sameButLeadingZeros('A123', '0123')).toBe(false);
  });
});

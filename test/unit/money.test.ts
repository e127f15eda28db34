import { describe, expect, it } from 'vitest';
import { Decimal, compareAmounts, normalizeAmount, sumAmounts, fractionDigits, isPlainDecimal } from '../../src/domain/money.js';

describe('money as decimal text', () => {
  it('normalizes amounts to the wire form of the contract', () => {
    expect(normalizeAmount('1500.50')).toBe('1500.5');
    expect(normalizeAmount('1500.00')).toBe('1500');
    expect(normalizeAmount('0100.10')).toBe('100.1');
    expect(normalizeAmount('0.000')).toBe('0');
    expect(normalizeAmount('-0.0')).toBe('0');
    expect(normalizeAmount('12345678901234567890.123456789')).toBe('12345678901234567890.123456789');
    expect(() => normalizeAmount('1e3')).toThrow(TypeError);
    expect(() => normalizeAmount('1,5')).toThrow(TypeError);
  });

  it('returns an amount already in normal form as it is, and normalizes every near miss', () => {
    for (const normal of ['0', '0.5', '7', '10', '4906.96', '100.01', '0.000001']) expect(normalizeAmount(normal)).toBe(normal);
    const nearMisses: [string, string][] = [
      ['00', '0'],
      ['01', '1'],
      ['1.', '1'],
      ['1.0', '1'],
      ['10.50', '10.5'],
      ['0.10', '0.1'],
      ['-5', '-5'],
      ['-0.50', '-0.5'],
    ];
    for (const [text, normal] of nearMisses) expect(normalizeAmount(text), text).toBe(normal);
    for (const bad of ['.5', '1..2', ' 1', '1 ', '+1', '']) expect(() => normalizeAmount(bad), bad).toThrow(TypeError);
  });

  it('compares amounts by value, in normal form or not', () => {
    const amounts = [
      '0',
      '0.05',
      '0.5',
      '9.99',
      '10',
      '10.45',
      '10.5',
      '100',
      '1500.5',
      '1500.50',
      '0100',
      '-3',
      '-0.5',
      '12345678901234567890.1',
    ];
    for (const a of amounts) {
      for (const b of amounts) expect(compareAmounts(a, b), `${a} against ${b}`).toBe(new Decimal(a).comparedTo(new Decimal(b)));
    }
  });

  it('adds exactly where floats would not', () => {
    expect(sumAmounts(['0.1', '0.2'])).toBe('0.3');
    expect(sumAmounts(['9007199254740993', '0.01'])).toBe('9007199254740993.01');
  });

  it('reads plain decimals only', () => {
    expect(isPlainDecimal('10.25')).toBe(true);
    expect(isPlainDecimal('1e3')).toBe(false);
    expect(isPlainDecimal('-1')).toBe(false);
    expect(isPlainDecimal('1.')).toBe(false);
    expect(fractionDigits('10.250')).toBe(3);
  });
});

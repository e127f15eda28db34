import { describe, expect, it } from 'vitest';
import { normalizeAmount, sumAmounts, fractionDigits, isPlainDecimal } from '../../src/domain/money.js';

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

/**
 * ExactTotal (src/domain/exact-total.ts), the running sum per currency of a
 * file (checked against control totals) and of a result summary: it must agree exactly with
 * decimal.js over amounts of mixed scales, leading zeros and huge values.
 */
import { describe, expect, it } from 'vitest';
import { Decimal, decimalText } from '../../src/domain/money.js';
import { ExactTotal } from '../../src/domain/exact-total.js';

function both(amounts: string[]): [string, string] {
  const exact = new ExactTotal();
  let reference = new Decimal(0);
  for (const a of amounts) {
    exact.add(a);
    reference = reference.plus(a);
  }
  return [decimalText(exact.toDecimal()), decimalText(reference)];
}

describe('ExactTotal', () => {
  it('is zero with nothing added', () => {
    expect(decimalText(new ExactTotal().toDecimal())).toBe('0');
  });

  const cases: [string, string[], string][] = [
    ['integers', ['1', '2', '3'], '6'],
    ['a scale that rises', ['1', '0.5', '0.25', '0.125'], '1.875'],
    ['a scale that falls', ['0.125', '0.25', '0.5', '1'], '1.875'],
    ['trailing and leading zeros', ['007.50', '0.50', '00', '1500.00'], '1508'],
    ['fractions only', ['0.001', '0.009'], '0.01'],
    ['beyond a double', ['999999999999999999999999.99', '0.01'], '1000000000000000000000000'],
    ['many decimals', ['0.123456789012345678901', '1.1'], '1.223456789012345678901'],
    // Result summaries add whatever signed plain decimals the rows hold.
    ['signed amounts', ['-1.5', '0.25', '-0.05', '2'], '0.7'],
    ['a sum that turns negative', ['1', '-3.125'], '-2.125'],
    ['a small negative sum', ['0.001', '-0.006'], '-0.005'],
    // Around the largest integer a double holds exactly: the sum must not pass through one.
    ['the largest safe integer, then one more', ['9007199254740991', '1'], '9007199254740992'],
    ['a scale that rises past safe integers', ['9007199254740.991', '0.0001'], '9007199254740.9911'],
    ['a falling scale past safe integers', ['0.0001', '9007199254740.991'], '9007199254740.9911'],
    ['past safe integers and back below', ['-9007199254740991', '-2', '9007199254740993'], '0'],
    ['an amount past safe integers onto a sum that brings it back', ['-9007199254740991', '9007199254740993'], '2'],
    ['an amount with more digits than a double holds', ['12345678901234567890.5', '0.5'], '12345678901234567891'],
  ];
  for (const [name, amounts, sum] of cases) {
    it(name, () => {
      expect(both(amounts)).toEqual([sum, sum]);
    });
  }

  it('agrees with decimal.js over many generated amounts', () => {
    let seed = 11;
    const next = (k: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % k;
    };
    const amounts = Array.from({ length: 5000 }, () => {
      const int = String(next(10 ** next(9)));
      const scale = next(5);
      return scale === 0 ? int : `${int}.${String(next(10 ** scale)).padStart(scale, '0')}`;
    });
    const [exact, reference] = both(amounts);
    expect(exact).toBe(reference);
  });
});

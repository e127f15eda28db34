import { describe, expect, it } from 'vitest';
import { Decimal, decimalText } from '../../src/domain/money.js';
import { ReadyMoney } from '../../src/domain/ready-money.js';

describe('ReadyMoney: what READY rows will cost, per stablecoin and payout currency', () => {
  it('adds up exactly and finds the largest amount as decimal.js does', () => {
    // Amounts in normal form of every shape: more or fewer integer digits, fractions of different lengths, below one.
    let seed = 7;
    const next = (): number => (seed = (seed * 48271) % 2147483647);
    const amounts = Array.from({ length: 2000 }, () => {
      const int = String(next() % 10 ** (1 + (next() % 7)));
      const places = next() % 4;
      const frac =
        places === 0
          ? ''
          : String(next() % 10 ** places)
              .padStart(places, '0')
              .replace(/0+$/, '');
      return frac === '' ? int : `${int}.${frac}`;
    });
    const money = new ReadyMoney();
    for (const [i, a] of amounts.entries()) money.add('USDT', i % 2 === 0 ? 'PHP' : 'EUR', a);
    const expected = (currency: string): unknown => {
      const mine = amounts.filter((_, i) => (i % 2 === 0) === (currency === 'PHP'));
      const largest = mine.reduce((m, a) => (new Decimal(a).gt(m) ? a : m));
      return {
        deductionCurrency: 'USDT',
        payoutCurrency: currency,
        total: decimalText(mine.reduce((t, a) => t.plus(a), new Decimal(0))),
        rows: mine.length,
        largest,
      };
    };
    expect(money.entries().map((p) => ({ ...p, total: decimalText(p.total) }))).toEqual([expected('PHP'), expected('EUR')]);
  });

  it('compares by value across integer lengths and fractions', () => {
    const money = new ReadyMoney();
    for (const a of ['9.99', '10.45', '0.5', '10.5', '10', '0.75']) money.add('USDC', 'IDR', a);
    expect(money.entries()[0]).toMatchObject({ rows: 6, largest: '10.5' });
  });
});

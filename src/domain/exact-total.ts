/**
 * Exact running sum of plain decimal amounts (a file's totals per currency,
 * compared with its control totals; a result file's summary per status). Integer arithmetic on BigInt
 * in units of the largest scale seen so far: exact like decimal.js, without
 * a Decimal per row (a million-row file adds a million amounts).
 */
import { Decimal } from './money.js';

const TEN = 10n;

export class ExactTotal {
  /** The sum in units of 10^-scale, while it is a safe integer (every amount of a payout file, in practice)... */
  private small = 0;
  /** ...and once it is not, from then on (null until then). */
  private units: bigint | null = null;
  private scale = 0;

  /** Adds a plain decimal text (isPlainDecimal: digits with an optional '.' fraction; a leading '-' allowed). */
  add(amount: string): void {
    const dot = amount.indexOf('.');
    const scale = dot < 0 ? 0 : amount.length - dot - 1;
    if (this.units === null && this.addSmall(amount, scale)) return;
    this.addBig(amount, dot, scale);
  }

  /** The sum as a Decimal. */
  toDecimal(): Decimal {
    const units = this.units ?? BigInt(this.small);
    if (this.scale === 0) return new Decimal(units.toString());
    const negative = units < 0n;
    const text = (negative ? -units : units).toString().padStart(this.scale + 1, '0');
    return new Decimal(`${negative ? '-' : ''}${text.slice(0, text.length - this.scale)}.${text.slice(text.length - this.scale)}`);
  }

  /**
   * Adds the amount in Number arithmetic, which is exact for safe integers; false (nothing added) when the
   * amount or the sum would not be one. Without a BigInt, and without the digits' text, for every row of
   * a million-row file.
   */
  private addSmall(amount: string, scale: number): boolean {
    const negative = amount.charCodeAt(0) === 0x2d; // '-'
    let value = 0;
    for (let i = negative ? 1 : 0; i < amount.length; i++) {
      const c = amount.charCodeAt(i);
      if (c !== 0x2e) value = value * 10 + (c - 0x30); // skip the '.'
      if (value > Number.MAX_SAFE_INTEGER) return false;
    }
    // A product or sum of safe integers is exact exactly when it is a safe integer itself.
    let sum = this.small;
    if (scale > this.scale) {
      sum *= 10 ** (scale - this.scale);
      if (!Number.isSafeInteger(sum)) return false;
    } else if (scale < this.scale) {
      value *= 10 ** (this.scale - scale);
      if (!Number.isSafeInteger(value)) return false;
    }
    sum = negative ? sum - value : sum + value;
    if (!Number.isSafeInteger(sum)) return false;
    this.small = sum;
    if (scale > this.scale) this.scale = scale;
    return true;
  }

  private addBig(amount: string, dot: number, scale: number): void {
    let units = this.units ?? BigInt(this.small);
    const digits = dot < 0 ? amount : amount.slice(0, dot) + amount.slice(dot + 1);
    if (scale > this.scale) {
      units *= TEN ** BigInt(scale - this.scale);
      this.scale = scale;
    }
    const value = BigInt(digits);
    this.units = units + (scale === this.scale ? value : value * TEN ** BigInt(this.scale - scale));
  }
}

/** Exact running sum of plain decimal amounts: BigInt in units of the largest scale seen, without a Decimal per row. */
import { Decimal } from './money.js';

const TEN = 10n;

export class ExactTotal {
  /** The sum in units of 10^-scale. */
  private units = 0n;
  private scale = 0;

  /** Adds a plain decimal text (isPlainDecimal: digits with an optional '.' fraction; a leading '-' allowed). */
  add(amount: string): void {
    const dot = amount.indexOf('.');
    const digits = dot < 0 ? amount : amount.slice(0, dot) + amount.slice(dot + 1);
    const scale = dot < 0 ? 0 : amount.length - dot - 1;
    if (scale > this.scale) {
      this.units *= TEN ** BigInt(scale - this.scale);
      this.scale = scale;
    }
    const value = BigInt(digits);
    this.units += scale === this.scale ? value : value * TEN ** BigInt(this.scale - scale);
  }

  /** The sum as a Decimal. */
  toDecimal(): Decimal {
    if (this.scale === 0) return new Decimal(this.units.toString());
    // The sign apart: padding '-5' to four places must give -0.005, not 0.0-5.
    const negative = this.units < 0n;
    const text = (negative ? -this.units : this.units).toString().padStart(this.scale + 1, '0');
    return new Decimal(`${negative ? '-' : ''}${text.slice(0, text.length - this.scale)}.${text.slice(text.length - this.scale)}`);
  }
}

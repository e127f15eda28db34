/**
 * The batch summary: per status, row counts and exact sums of payout amount, deduction amount and total fee
 * by currency, a total per status and a grand total, built in the pass that writes the result file.
 */
import { ExactTotal } from '../domain/exact-total.js';
import { decimalText, isSummableAmount } from '../domain/money.js';
import { ReportError } from './errors.js';
import { ROW_OUTCOME_STATUSES, isRowOutcomeStatus } from './types.js';
import type { BatchSummary, RowOutcome, RowOutcomeStatus, SummaryMeasure, SummaryRow } from './types.js';

type AmountMeasure = Exclude<SummaryMeasure, 'rows' | 'details_removed'>;
const AMOUNT_MEASURES: readonly AmountMeasure[] = ['payout_amount', 'deduction_amount', 'total_fee'];

/**
 * The currency a row's amounts are added under: upper-cased, as the intake sends it (a file may write `php`,
 * `Php` and `PHP`, one currency). Only a row's own currency cell keeps it as written.
 */
export function totalsCurrency(written: string): string {
  return written.toUpperCase();
}

interface Group {
  rowCount: number;
  sum: ExactTotal;
  rowsNotSummed: number;
}

const byCodePoint = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export class SummaryAccumulator {
  private readonly groups = new Map<RowOutcomeStatus, Map<AmountMeasure, Map<string, Group>>>();
  private readonly statusCounts = new Map<RowOutcomeStatus, number>();
  /** Per status, rows whose amounts retention removed: counted, never summed (an empty cell is not a zero). */
  private readonly detailsRemoved = new Map<RowOutcomeStatus, number>();
  private rowCount = 0;

  add(o: RowOutcome): void {
    this.count(o.status, o.line);
    this.addAmount(o.status, 'payout_amount', o.payoutCurrency, o.payoutAmount);
    // Only rows the service debited carry a deduction and a fee.
    if (o.deductionAmount !== null) this.addAmount(o.status, 'deduction_amount', o.deductionCurrency, o.deductionAmount);
    // Grouped by fee currency, not deduction currency, so a sum never mixes currencies.
    if (o.totalFee !== null) this.addAmount(o.status, 'total_fee', o.feeCurrency ?? '', o.totalFee);
  }

  /** A row of a batch whose row details retention removed: in its status's `details_removed` and `rows` lines only. */
  addDetailsRemoved(status: string, line: number): void {
    const counted = this.count(status, line);
    this.detailsRemoved.set(counted, (this.detailsRemoved.get(counted) ?? 0) + 1);
  }

  private count(status: string, line: number): RowOutcomeStatus {
    if (!isRowOutcomeStatus(status)) throw new ReportError('REPORT_BAD_ROW', `line ${line}: unknown status`);
    this.rowCount += 1;
    this.statusCounts.set(status, (this.statusCounts.get(status) ?? 0) + 1);
    return status;
  }

  /** The summary lines in file order: statuses in fixed order, measures, currencies by code point. */
  rows(): SummaryRow[] {
    const out: SummaryRow[] = [];
    for (const status of ROW_OUTCOME_STATUSES) {
      const count = this.statusCounts.get(status);
      if (count === undefined) continue;
      out.push(...this.amountRows(status));
      const removed = this.detailsRemoved.get(status);
      if (removed !== undefined)
        out.push({ status, measure: 'details_removed', currency: '', rowCount: removed, amount: null, rowsNotSummed: removed });
      out.push(totalRow(status, count));
    }
    out.push(totalRow('ALL', this.rowCount));
    return out;
  }

  summary(): BatchSummary {
    return { rowCount: this.rowCount, statusCounts: Object.fromEntries(this.statusCounts), rows: this.rows() };
  }

  private amountRows(status: RowOutcomeStatus): SummaryRow[] {
    const measures = this.groups.get(status);
    const out: SummaryRow[] = [];
    for (const measure of AMOUNT_MEASURES) {
      const currencies = measures?.get(measure);
      if (!currencies) continue;
      for (const currency of [...currencies.keys()].sort(byCodePoint)) {
        const g = currencies.get(currency);
        if (g)
          out.push({
            status,
            measure,
            currency,
            rowCount: g.rowCount,
            amount: decimalText(g.sum.toDecimal()),
            rowsNotSummed: g.rowsNotSummed,
          });
      }
    }
    return out;
  }

  private addAmount(status: RowOutcomeStatus, measure: AmountMeasure, currency: string, amount: string): void {
    const g = this.group(status, measure, totalsCurrency(currency));
    g.rowCount += 1;
    if (isSummableAmount(amount)) g.sum.add(amount);
    else g.rowsNotSummed += 1;
  }

  private group(status: RowOutcomeStatus, measure: AmountMeasure, currency: string): Group {
    let measures = this.groups.get(status);
    if (!measures) this.groups.set(status, (measures = new Map()));
    let currencies = measures.get(measure);
    if (!currencies) measures.set(measure, (currencies = new Map()));
    let g = currencies.get(currency);
    if (!g) currencies.set(currency, (g = { rowCount: 0, sum: new ExactTotal(), rowsNotSummed: 0 }));
    return g;
  }
}

function totalRow(status: RowOutcomeStatus | 'ALL', rowCount: number): SummaryRow {
  return { status, measure: 'rows', currency: '', rowCount, amount: null, rowsNotSummed: null };
}

export function summarize(outcomes: Iterable<RowOutcome>): BatchSummary {
  const acc = new SummaryAccumulator();
  for (const o of outcomes) acc.add(o);
  return acc.summary();
}

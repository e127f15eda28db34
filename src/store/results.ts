/**
 * The rows of a batch as its result and interim files show them: 17 fields,
 * the beneficiary, and the currencies and amount a row keeps only where they
 * were written otherwise (request-fields.ts), read out of the stored request
 * in SQL, a page at a time. (acks.ts reads the five the
 * acknowledgement needs; reports.ts the finance reports' rows.)
 */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { selectArrays } from './prepared.js';
import { COLUMNS, type PayoutRow } from './payouts.js';
import { requestFieldAt, writtenMoney } from './request-fields.js';

/**
 * A row as the result and interim files show it (src/daemon/outbox.ts).
 * The beneficiary and, where a column is empty (written as the request has
 * it, or not written), the payout's currencies and amount come from the
 * stored request, read in SQL: parsing every request in
 * JavaScript cost more than reading the rows.
 */
export type BatchResultRow = Pick<
  PayoutRow,
  | 'id'
  | 'line'
  | 'merchantReferenceId'
  | 'state'
  | 'payoutCurrency'
  | 'payoutAmount'
  | 'deductionCurrency'
  | 'payoutId'
  | 'rate'
  | 'deductionAmount'
  | 'totalFee'
  | 'feeCurrency'
  | 'completeTime'
  | 'reasonCode'
  | 'reason'
> & {
  /** Null when the row has no request (an invalid row). */
  beneficiaryAccountName: string | null;
  beneficiaryAccountNumber: string | null;
};

/** What `resultRowPages` selects, in the order `resultRowOf` reads the values. */
function resultSelection(db: Database): (string | Knex.Raw)[] {
  return [
    'id',
    'line',
    COLUMNS.merchantReferenceId,
    'state',
    writtenMoney(db, 'payoutCurrency'),
    writtenMoney(db, 'payoutAmount'),
    writtenMoney(db, 'deductionCurrency'),
    COLUMNS.payoutId,
    'rate',
    COLUMNS.deductionAmount,
    COLUMNS.totalFee,
    COLUMNS.feeCurrency,
    COLUMNS.completeTime,
    COLUMNS.reasonCode,
    'reason',
    requestFieldAt(db, 'beneficiary.accountName'),
    requestFieldAt(db, 'beneficiary.accountNumber'),
  ];
}

type Text = string | null;
/** One row's values as `resultSelection` lists them. */
type ResultValues = [number, number, string, RowState, Text, Text, Text, Text, Text, Text, Text, Text, Text, Text, Text, Text, Text];

/** A row from its values in `resultSelection` order. */
function resultRowOf(values: unknown[]): BatchResultRow {
  const v = values as ResultValues;
  return {
    id: v[0],
    line: v[1],
    merchantReferenceId: v[2],
    state: v[3],
    payoutCurrency: v[4],
    payoutAmount: v[5],
    deductionCurrency: v[6],
    payoutId: v[7],
    rate: v[8],
    deductionAmount: v[9],
    totalFee: v[10],
    feeCurrency: v[11],
    completeTime: v[12],
    reasonCode: v[13],
    reason: v[14],
    beneficiaryAccountName: v[15],
    beneficiaryAccountNumber: v[16],
  };
}

/**
 * All rows of a batch in line order, a page at a time (result files of any
 * size; pages rather than rows: one await per page instead of one per row).
 * Only what the files show, read as arrays of values (`selectArrays`) made
 * into one plain object each: building 30-property objects for every row
 * cost four times as much as reading them, and the driver's own row objects
 * cost as much as the read.
 */
export async function* resultRowPages(db: Database, batchId: string, pageSize = 5000): AsyncGenerator<BatchResultRow[]> {
  const columns = resultSelection(db);
  let afterLine = -1;
  for (;;) {
    const page = await selectArrays(
      db,
      db('payouts').where({ batch_id: batchId }).andWhere('line', '>', afterLine).orderBy('line').limit(pageSize).select(columns),
    );
    const rows = page.map(resultRowOf);
    const last = rows[rows.length - 1];
    if (last === undefined) return;
    yield rows;
    if (rows.length < pageSize) return;
    afterLine = last.line;
  }
}

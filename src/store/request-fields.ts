/**
 * A row's stored request read in SQL, field by field, and the money cells as the sender wrote them. The
 * intake keeps a money cell's text only where it is not the request's value (1001.50 sent as 1001.5), so
 * whatever shows a money cell reads its column, or where that is NULL the request's field.
 */
import type { Knex } from 'knex';
import { ReadyMoney } from '../domain/ready-money.js';
import { REQUEST_VALUE_INDEX, type PayoutRequestField } from '../domain/request-values.js';
import { isPostgres, type Database } from './db.js';
import { COLUMNS, pagesByLine } from './payouts.js';

/** The money cells a row keeps only where they are not the request's values. */
export const WRITTEN_MONEY_FIELDS = ['payoutCurrency', 'payoutAmount', 'deductionCurrency'] as const;
export type WrittenMoneyField = (typeof WRITTEN_MONEY_FIELDS)[number];

function qualified(column: string, table: string | undefined): string {
  return table === undefined ? column : `${table}.${column}`;
}

/** The text of one field of the row's stored request (SQL NULL for a row without one), in the database's own dialect. */
export function requestFieldAt(db: Database, field: PayoutRequestField, table?: string): Knex.Raw {
  // The index is this module's constant (a field's position), never input, so it is written into the SQL.
  const at = REQUEST_VALUE_INDEX[field];
  const column = qualified(COLUMNS.requestValues, table);
  return isPostgres(db) ? db.raw(`(??::json) ->> ${at}`, [column]) : db.raw(`json_extract(??, '$[${at}]')`, [column]);
}

/** A money cell as written: its column, or where the row keeps none the request's field. */
export function writtenMoney(db: Database, field: WrittenMoneyField, table?: string): Knex.Raw {
  return db.raw('coalesce(??, ?)', [qualified(COLUMNS[field], table), requestFieldAt(db, field, table)]);
}

/**
 * A money cell as files show it: as written, except a deduction currency where the service's record of the payout
 * names another (a different letter case is the same currency): the deduction amount a file shows is that record's,
 * and is never shown under a currency the service did not report.
 */
export function shownMoney(db: Database, field: WrittenMoneyField, table?: string): Knex.Raw {
  const written = writtenMoney(db, field, table);
  if (field !== 'deductionCurrency') return written;
  const service = qualified(COLUMNS.serviceDeductionCurrency, table);
  return db.raw(`case when ?? is not null and upper(??) <> upper(coalesce(?, '')) then ?? else ? end`, [
    service,
    service,
    requestFieldAt(db, field, table),
    service,
    written,
  ]);
}

/** shownMoney selected under the name `as`. */
export function shownMoneyAs(db: Database, field: WrittenMoneyField, as: string, table?: string): Knex.Raw {
  return db.raw('? as ??', [shownMoney(db, field, table), as]);
}

/** writtenMoney selected under the name `as`. */
export function writtenMoneyAs(db: Database, field: WrittenMoneyField, as: string, table?: string): Knex.Raw {
  return db.raw('? as ??', [writtenMoney(db, field, table), as]);
}

/** The request's currencies and amount of the batch's rows `which` keeps, added up (three fields read in SQL, not the whole request). */
export async function moneyOf(
  db: Database,
  batchId: string,
  which: (q: Knex.QueryBuilder) => Knex.QueryBuilder,
  pageSize = 10_000,
): Promise<ReadyMoney> {
  const field = (f: 'deductionCurrency' | 'payoutCurrency' | 'payoutAmount'): Knex.Raw => db.raw('? as ??', [requestFieldAt(db, f), f]);
  const rows = () =>
    db('payouts')
      .where({ batch_id: batchId })
      .modify(which)
      .select('line', field('deductionCurrency'), field('payoutCurrency'), field('payoutAmount'));
  const money = new ReadyMoney();
  type Row = { line: number; deductionCurrency: string; payoutCurrency: string; payoutAmount: string };
  for await (const page of pagesByLine<Row>(rows, pageSize))
    for (const r of page) money.add(r.deductionCurrency, r.payoutCurrency, r.payoutAmount);
  return money;
}

/** The money of a batch's READY rows (moneyOf). */
export function readyMoneyOf(db: Database, batchId: string, pageSize?: number): Promise<ReadyMoney> {
  return moneyOf(db, batchId, (q) => q.where('state', 'READY'), pageSize);
}

/** The fee a created payout was charged, with the stablecoin its request deducts. */
export interface ChargedFee {
  deductionCurrency: string;
  totalFee: string;
  feeCurrency: string;
}

/** The fees of the last `count` payouts created (newest first, along the (created_at_ms, id) index). */
export async function recentFees(db: Database, count: number): Promise<ChargedFee[]> {
  const rows = (await db('payouts')
    .whereNotNull('created_at_ms')
    .whereNotNull('total_fee')
    .whereNotNull('fee_currency')
    .orderBy([
      { column: 'created_at_ms', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .limit(count)
    .select(
      db.raw('? as ??', [requestFieldAt(db, 'deductionCurrency'), 'deductionCurrency']),
      'total_fee as totalFee',
      'fee_currency as feeCurrency',
    )) as {
    deductionCurrency: string | null;
    totalFee: string;
    feeCurrency: string;
  }[];
  // A row whose request retention cleared says nothing of its coin.
  return rows.filter((r): r is ChargedFee => r.deductionCurrency !== null);
}

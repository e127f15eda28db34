/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason only. */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { writtenMoney } from './request-fields.js';
import { rowPagesByLine } from './results.js';

export interface AckSourceRow {
  line: number;
  merchantReferenceId: string;
  state: RowState;
  reasonCode: string | null;
  reason: string | null;
}

/** Every row of a batch in line order, a page at a time. */
export function ackRowPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckSourceRow[]> {
  const columns = ['line', 'merchant_reference_id as merchantReferenceId', 'state', 'reason_code as reasonCode', 'reason'];
  return rowPagesByLine<AckSourceRow>(db, batchId, columns, pageSize);
}

/** What the totals lines of an acknowledgement add up per row: its state and its money cells as written. */
export interface AckMoneySourceRow {
  line: number;
  state: RowState;
  payoutCurrency: string | null;
  payoutAmount: string | null;
}

/**
 * Every row's state and money as written, a page at a time, for the totals
 * the ack starts with (read before the rows it lists: they come first).
 */
export function ackMoneyPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckMoneySourceRow[]> {
  const as = (field: 'payoutCurrency' | 'payoutAmount'): Knex.Raw => db.raw('? as ??', [writtenMoney(db, field), field]);
  return rowPagesByLine<AckMoneySourceRow>(db, batchId, ['line', 'state', as('payoutCurrency'), as('payoutAmount')], pageSize);
}

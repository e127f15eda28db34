/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason only. */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { pagesByLine } from './payouts.js';
import { writtenMoney } from './request-fields.js';

export interface AckSourceRow {
  line: number;
  merchantReferenceId: string;
  state: RowState;
  reasonCode: string | null;
  reason: string | null;
}

/** Every row of a batch in line order, a page at a time. */
export function ackRowPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckSourceRow[]> {
  const rows = () =>
    db('payouts')
      .select('line', 'merchant_reference_id as merchantReferenceId', 'state', 'reason_code as reasonCode', 'reason')
      .where({ batch_id: batchId });
  return pagesByLine<AckSourceRow>(rows, pageSize);
}

/** What the totals lines of an acknowledgement add up per row: its state and its money cells as written. */
export interface AckMoneySourceRow {
  line: number;
  state: RowState;
  payoutCurrency: string | null;
  payoutAmount: string | null;
}

/** Every row's state and money as written, a page at a time, for the totals the ack starts with (they come first). */
export function ackMoneyPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckMoneySourceRow[]> {
  const as = (field: 'payoutCurrency' | 'payoutAmount'): Knex.Raw => db.raw('? as ??', [writtenMoney(db, field), field]);
  const rows = () => db('payouts').select('line', 'state', as('payoutCurrency'), as('payoutAmount')).where({ batch_id: batchId });
  return pagesByLine<AckMoneySourceRow>(rows, pageSize);
}

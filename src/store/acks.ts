/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason only. */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { writtenMoney } from './request-fields.js';

export interface AckSourceRow {
  line: number;
  merchantReferenceId: string;
  state: RowState;
  reasonCode: string | null;
  reason: string | null;
}

/** Every row of a batch in line order, a page at a time. */
export async function* ackRowPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckSourceRow[]> {
  let afterLine = -1;
  for (;;) {
    const rows = (await db('payouts')
      .select('line', 'merchant_reference_id as merchantReferenceId', 'state', 'reason_code as reasonCode', 'reason')
      .where({ batch_id: batchId })
      .andWhere('line', '>', afterLine)
      .orderBy('line')
      .limit(pageSize)) as AckSourceRow[];
    const last = rows[rows.length - 1];
    if (last === undefined) return;
    yield rows;
    if (rows.length < pageSize) return;
    afterLine = last.line;
  }
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
export async function* ackMoneyPages(db: Database, batchId: string, pageSize = 5_000): AsyncGenerator<AckMoneySourceRow[]> {
  const as = (field: 'payoutCurrency' | 'payoutAmount'): Knex.Raw => db.raw('? as ??', [writtenMoney(db, field), field]);
  let afterLine = -1;
  for (;;) {
    const rows = (await db('payouts')
      .select('line', 'state', as('payoutCurrency'), as('payoutAmount'))
      .where({ batch_id: batchId })
      .andWhere('line', '>', afterLine)
      .orderBy('line')
      .limit(pageSize)) as AckMoneySourceRow[];
    const last = rows[rows.length - 1];
    if (last === undefined) return;
    yield rows;
    if (rows.length < pageSize) return;
    afterLine = last.line;
  }
}

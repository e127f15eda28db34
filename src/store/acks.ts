/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason, and for its one read the money. */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { pagesByLine } from './payouts.js';
import { requestFieldAt } from './request-fields.js';

export interface AckSourceRow {
  line: number;
  merchantReferenceId: string;
  state: RowState;
  reasonCode: string | null;
  reason: string | null;
  /** What the payout service said against the row since (it may contradict its state), and a check of it under way. */
  serviceNote: string | null;
  serviceCheck: string | null;
}

/** The columns of an AckSourceRow. */
const ACK_COLUMNS = [
  'line',
  'merchant_reference_id as merchantReferenceId',
  'state',
  'reason_code as reasonCode',
  'reason',
  'service_note as serviceNote',
  'service_check as serviceCheck',
] as const;

/**
 * A row as the pass that writes an ack reads it: its verdict's columns, its money cells as written (the
 * totals lines), and its request's money (what a READY row will cost; null for a row without a request).
 */
export interface AckMoneySourceRow extends AckSourceRow {
  writtenPayoutCurrency: string | null;
  writtenPayoutAmount: string | null;
  requestDeductionCurrency: string | null;
  requestPayoutCurrency: string | null;
  requestPayoutAmount: string | null;
}

/**
 * Every row of a batch in line order with its money, a page at a time: the ack's rows, its totals and the READY
 * rows' cost in one read. Pages are small: each stays alive while its records are written out, and larger ones
 * were kept into the old generation, growing the daemon's peak memory by the size of a large ack.
 */
export function ackMoneyPages(db: Database, batchId: string, pageSize = 1_000): AsyncGenerator<AckMoneySourceRow[]> {
  const request = (field: 'deductionCurrency' | 'payoutCurrency' | 'payoutAmount', as: string): Knex.Raw =>
    db.raw('? as ??', [requestFieldAt(db, field), as]);
  const rows = () =>
    db('payouts')
      .select(
        ...ACK_COLUMNS,
        'payout_currency as writtenPayoutCurrency',
        'payout_amount as writtenPayoutAmount',
        request('deductionCurrency', 'requestDeductionCurrency'),
        request('payoutCurrency', 'requestPayoutCurrency'),
        request('payoutAmount', 'requestPayoutAmount'),
      )
      .where({ batch_id: batchId });
  return pagesByLine<AckMoneySourceRow>(rows, pageSize);
}

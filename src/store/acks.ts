/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason only. */
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { pagesByLine } from './payouts.js';

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

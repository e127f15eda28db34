/** The rows of a batch as its acknowledgement needs them: line, reference, state and reason only. */
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';

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

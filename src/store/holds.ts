/** Holds on a batch: a balance hold that ends by itself, an operator's hold and release, and an operator's cancel. */
import { BALANCE_HOLD, OPERATOR_HOLD_CODES, waitsForOperator, type BatchHold } from '../domain/holds.js';
import type { Database } from './db.js';
import { moveRows } from './moves.js';

/**
 * Holds a batch (the decision is src/holds/'s). A hold that ends by itself never replaces one that waits for
 * an operator. An operator's hold is stated at the top of the ack, so the ack is written again.
 */
export async function holdBatch(db: Database, batchId: string, hold: BatchHold, now: number): Promise<void> {
  const q = db('batches').where({ id: batchId });
  const patch: Record<string, unknown> = { hold_code: hold.code, hold_reason: hold.reason, hold_until: hold.until, updated_at: now };
  if (waitsForOperator(hold.code)) patch['ack_written_at'] = null;
  else q.andWhere((w) => w.whereNull('hold_code').orWhereNotIn('hold_code', OPERATOR_HOLD_CODES));
  if (hold.code === 'FILE_CHANGED') patch['file_changed_at'] = db.raw('coalesce(file_changed_at, ?)', [now]);
  await q.update(patch);
}

export async function releaseBatchHold(db: Database, batchId: string, now: number): Promise<void> {
  await db('batches').where({ id: batchId }).update({ hold_code: null, hold_reason: null, hold_until: null, updated_at: now });
}

/** An operator's cancel: every READY row of the batch becomes final as NOT_SUBMITTED, and its hold ends (it can finish). */
export async function cancelReadyRows(db: Database, batchId: string, reason: string, now: number): Promise<number> {
  return db.transaction(async (trx) => {
    const ids = (await trx('payouts').where({ batch_id: batchId, state: 'READY' }).pluck('id')) as number[];
    const moved = await moveRows(
      trx,
      ids,
      'READY',
      'NOT_SUBMITTED',
      { reasonCode: 'CANCELLED_BY_OPERATOR', reason },
      { event: 'cancelled', detail: reason },
      now,
    );
    await releaseBatchHold(trx, batchId, now);
    return moved.length;
  });
}

/** Active batches held for their balance whose hold has run out by `now`. */
export async function listBalanceHoldsDue(db: Database, now: number): Promise<string[]> {
  return (await db('batches')
    .where({ state: 'ACTIVE', hold_code: BALANCE_HOLD })
    .andWhere('hold_until', '<=', now)
    .pluck('id')) as string[];
}

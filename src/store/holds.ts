/** Holds on a batch: a balance hold that ends by itself, an operator's hold and release. */
import { BALANCE_CHECK_HOLD, BALANCE_HOLD, OPERATOR_HOLD_CODES, waitsForOperator, type BatchHold, type HoldCode } from '../domain/holds.js';
import type { Knex } from 'knex';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { moveRows } from './moves.js';
import { recordBatchEvent } from './batch-events.js';

/** Who let a hold go, as its `released` event says. */
export type ReleasedBy = 'operator' | 'operator-cancel' | 'balance-covered';

async function currentHold(db: Database, batchId: string): Promise<string | null> {
  const r = (await db('batches').where({ id: batchId }).first('hold_code')) as { hold_code: string | null } | undefined;
  return r?.hold_code ?? null;
}

/** The batch's hold with its end; on PostgreSQL the batch row is locked, so two holders at once read in turn. */
async function heldNow(db: Database, batchId: string): Promise<{ code: string | null; until: number | null } | undefined> {
  const q = db('batches').where({ id: batchId }).first('hold_code', 'hold_until');
  const r = (await (isPostgres(db) ? q.forUpdate() : q)) as { hold_code: string | null; hold_until: number | string | null } | undefined;
  return r && { code: r.hold_code, until: r.hold_until === null ? null : Number(r.hold_until) };
}

/**
 * Holds a batch (the decision is src/holds/'s). A hold that ends by itself never replaces one that waits for
 * an operator. An operator's hold is stated at the top of the ack, so the ack is written again.
 * A new kind of hold is stored with its `held` event (`awaiting-approval` for that hold).
 * True when the hold is news: stored, and the batch was not held so (or that timed hold had run out), so
 * several creates refused at once tell of it once.
 */
export async function holdBatch(db: Database, batchId: string, hold: BatchHold, now: number): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    const before = await heldNow(trx, batchId);
    const n = await holdQuery(trx, batchId, hold, now);
    if (n > 0 && before?.code !== hold.code) {
      const until = hold.until === null ? null : new Date(hold.until).toISOString();
      // Waiting for an approval is a hold of its own kind to whoever is told: it is news of its own type.
      const type = hold.code === 'AWAITING_APPROVAL' ? 'awaiting-approval' : 'held';
      await recordBatchEvent(trx, { batchId, type, data: { code: hold.code, reason: hold.reason, until }, at: now });
    }
    return n > 0 && (before?.code !== hold.code || (before.until !== null && before.until <= now));
  });
}

async function holdQuery(db: Database, batchId: string, hold: BatchHold, now: number): Promise<number> {
  const q = db('batches').where({ id: batchId });
  const patch: Record<string, unknown> = { hold_code: hold.code, hold_reason: hold.reason, hold_until: hold.until, updated_at: now };
  if (waitsForOperator(hold.code)) patch['ack_written_at'] = null;
  else q.andWhere((w) => w.whereNull('hold_code').orWhereNotIn('hold_code', OPERATOR_HOLD_CODES));
  if (hold.code === 'FILE_CHANGED') patch['file_changed_at'] = db.raw('coalesce(file_changed_at, ?)', [now]);
  return q.update(patch);
}

/**
 * Lets a batch's hold go (only a hold `onlyIf` when given: one put on meanwhile stays); a batch that was held
 * gets its `released` event, saying which hold and who.
 */
export async function releaseBatchHold(
  db: Database,
  batchId: string,
  now: number,
  by: ReleasedBy = 'operator',
  onlyIf?: HoldCode,
): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    const before = onlyIf ?? (await currentHold(trx, batchId));
    const q = trx('batches').where({ id: batchId });
    // The guard is in the UPDATE itself, so no other writer's hold slips in between a read and the write.
    if (onlyIf !== undefined) q.andWhere({ hold_code: onlyIf });
    const n = await q.update({ hold_code: null, hold_reason: null, hold_until: null, updated_at: now });
    if (n > 0 && before !== null) await recordBatchEvent(trx, { batchId, type: 'released', data: { code: before, by }, at: now });
    return n > 0;
  });
}

/** Every READY row of the batch made final as NOT_SUBMITTED, with the reason and its history entry; how many. */
export async function readyRowsNotSubmitted(
  trx: Knex.Transaction,
  batchId: string,
  why: { code: string; reason: string; event: string },
  now: number,
): Promise<number> {
  const ids = (await trx('payouts').where({ batch_id: batchId, state: 'READY' }).pluck('id')) as number[];
  const moved = await moveRows(
    trx,
    ids,
    'READY',
    'NOT_SUBMITTED',
    { reasonCode: why.code, reason: why.reason },
    { event: why.event, detail: why.reason },
    now,
  );
  return moved.length;
}

/** Active batches whose balance is to be checked by `now`: held for it and due, or approved and not checked yet. */
export async function listBalanceHoldsDue(db: Database, now: number): Promise<{ id: string; holdCode: HoldCode }[]> {
  return (await db('batches')
    .where({ state: 'ACTIVE' })
    .andWhere((w) =>
      w.where((due) => due.where({ hold_code: BALANCE_HOLD }).andWhere('hold_until', '<=', now)).orWhere({ hold_code: BALANCE_CHECK_HOLD }),
    )
    .select('id', 'hold_code as holdCode')) as { id: string; holdCode: HoldCode }[];
}

/**
 * Database operations of sending creates and resolving their outcomes:
 * recording the intent before a create is sent, the answer after, and
 * finding the rows whose outcome is unknown.
 */
import type { RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { fromColumns, moveRow, moveRows, type HistoryEntry, type PayoutRow, type PayoutRowPatch } from './payouts.js';

/** After a crash, a create that was on the wire has an unknown outcome. */
export async function markInterruptedCreatesUnknown(db: Database, now: number): Promise<number> {
  return db.transaction(async (trx) => {
    const ids = (await trx('payouts').where({ state: 'CREATING' }).pluck('id')) as number[];
    const moved = await moveRows(
      trx,
      ids,
      'CREATING',
      'UNKNOWN',
      { nextAttemptAt: now, unknownSince: now },
      { event: 'interrupted', detail: 'the daemon stopped while this create may have been on the wire' },
      now,
    );
    return moved.length;
  });
}

/**
 * Claims up to `limit` READY rows of ACTIVE, unheld batches, oldest batch
 * first, and records the intent (READY -> CREATING, attempt counted) before
 * any create is sent.
 */
export async function claimReadyRows(db: Database, limit: number, now: number): Promise<PayoutRow[]> {
  return db.transaction(async (trx) => {
    const rows = (await trx('payouts as p')
      .join('batches as b', 'b.id', 'p.batch_id')
      .where('p.state', 'READY')
      .andWhere('b.state', 'ACTIVE')
      // Only a balance hold ends by itself; any other hold waits for an operator.
      .andWhere((q) =>
        q.whereNull('b.hold_code').orWhere((h) => h.where('b.hold_code', 'INSUFFICIENT_BALANCE').andWhere('b.hold_until', '<=', now)),
      )
      .andWhere((q) => q.whereNull('p.next_attempt_at').orWhere('p.next_attempt_at', '<=', now))
      .orderBy([{ column: 'b.received_at' }, { column: 'p.line' }])
      .limit(limit)
      .select('p.*')) as Record<string, unknown>[];
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id as number);
    await moveRows(trx, ids, 'READY', 'CREATING', {}, { event: 'intent', detail: 'create about to be sent' }, now);
    await trx('payouts').whereIn('id', ids).increment('create_attempts', 1);
    return rows.map((r) => ({ ...fromColumns(r), state: 'CREATING' as const, createAttempts: (r.create_attempts as number) + 1 }));
  });
}

export interface RowMove {
  row: PayoutRow;
  from: RowState;
  to: RowState;
  patch: PayoutRowPatch;
  history: HistoryEntry;
}

/** Applies many independent row moves in one transaction (group commit). */
export async function applyRowMoves(db: Database, moves: RowMove[], now: number): Promise<number> {
  if (moves.length === 0) return 0;
  return db.transaction(async (trx) => {
    let n = 0;
    for (const m of moves) if (await moveRow(trx, m.row.id, m.from, m.to, m.patch, m.history, now)) n++;
    return n;
  });
}

/** UNKNOWN rows due for a query. */
export async function listUnknownDue(db: Database, now: number, limit: number): Promise<PayoutRow[]> {
  const rows = (await db('payouts')
    .where({ state: 'UNKNOWN' })
    .andWhere((q) => q.whereNull('next_attempt_at').orWhere('next_attempt_at', '<=', now))
    .orderBy('id')
    .limit(limit)) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

/** The time of the last create attempt (intent) of a row. */
export async function lastIntentAt(db: Database, rowId: number): Promise<number | null> {
  const r = (await db('payout_history').where({ payout_row_id: rowId, event: 'intent' }).max({ at: 'at' }).first()) as
    { at: number | null } | undefined;
  return r?.at ?? null;
}

/**
 * Holds a batch. A balance hold (timed) never replaces a hold that waits
 * for an operator (FILE_CHANGED): only an operator lifts that one.
 */
export async function holdBatch(
  db: Database,
  batchId: string,
  code: string,
  reason: string,
  until: number | null,
  now: number,
): Promise<void> {
  const q = db('batches').where({ id: batchId });
  if (code === 'INSUFFICIENT_BALANCE') q.andWhere((w) => w.whereNull('hold_code').orWhere('hold_code', 'INSUFFICIENT_BALANCE'));
  await q.update({ hold_code: code, hold_reason: reason, hold_until: until, updated_at: now });
}

export async function releaseBatchHold(db: Database, batchId: string, now: number): Promise<void> {
  await db('batches').where({ id: batchId }).update({ hold_code: null, hold_reason: null, hold_until: null, updated_at: now });
}

/** Whether any READY row is waiting to be claimed now or later. */
export async function countRowsInState(db: Database, state: RowState): Promise<number> {
  const r = (await db('payouts').where({ state }).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(r?.n ?? 0);
}

/**
 * Database operations of sending creates and resolving their outcomes:
 * recording the intent before a create is sent, the answer after, and
 * finding the rows whose outcome is unknown.
 */
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import { isPostgres, type Database } from './db.js';
import { reproducibleTransaction } from './reproducible.js';
import { selectArrays } from './prepared.js';
import {
  fromColumns,
  rowsInState,
  moveEach,
  moveRows,
  recordMoved,
  stateGuard,
  type HistoryEntry,
  type IndexedState,
  type PayoutRow,
  type PayoutRowPatch,
} from './payouts.js';

/** Who claims work, and for how long (several instances on PostgreSQL). */
export interface Claimant {
  /** This process, unique among the instances sharing the database. */
  instanceId: string;
  /** A claim not renewed for this long is taken over. */
  leaseMs: number;
}

/**
 * A create that was on the wire when its process died has an unknown
 * outcome. With `all` (one instance: SQLite, at start-up) every CREATING
 * row is such a create; otherwise only rows whose lease has run out, so a
 * live instance's creates in flight are left alone.
 */
export async function markInterruptedCreatesUnknown(db: Database, now: number, all = true): Promise<number> {
  return db.transaction(async (trx) => {
    const q = rowsInState(trx, 'CREATING');
    if (!all) q.andWhere('lease_expires_at', '<', now);
    // A row another transaction holds is having its answer recorded right then (its lease ran out while the
    // create was out): it is about to leave CREATING, and waiting for it could close a circle of locks.
    if (isPostgres(db)) q.forUpdate().skipLocked();
    const ids = (await q.pluck('id')) as number[];
    if (ids.length === 0) return 0;
    const moved = await moveRows(
      trx,
      ids,
      'CREATING',
      'UNKNOWN',
      { nextAttemptAt: now, unknownSince: now, leaseOwner: null, leaseExpiresAt: null },
      { event: 'interrupted', detail: 'the process sending this create stopped while it may have been on the wire' },
      now,
    );
    return moved.length;
  });
}

/**
 * What an UPDATE … WHERE id IN (…) takes, given `first`: a SELECT id of the
 * first due rows, with a LIMIT. On PostgreSQL their ids are picked and locked
 * by a statement of their own (FOR UPDATE SKIP LOCKED, so instances share
 * the rows): as a subquery of the UPDATE, PostgreSQL may run it again for
 * each row it checks, and each run after a row moved skips that row and
 * takes another, past the limit (a query claim of 4 took all 12 due rows).
 * SQLite runs the subquery once. null: nothing to take. (The subquery comes
 * wrapped: a query builder is thenable, and a promise resolved with one runs it.)
 */
async function rowsToTake(trx: Knex.Transaction, first: Knex.QueryBuilder): Promise<{ ids: Knex.QueryBuilder | number[] } | null> {
  if (!isPostgres(trx)) return { ids: first };
  const ids = (await first.forUpdate().skipLocked().pluck('id')) as number[];
  return ids.length > 0 ? { ids } : null;
}

/** A row claimed for a create: what sending it needs, and its intent's lease. */
export type ClaimedRow = Pick<
  PayoutRow,
  'id' | 'batchId' | 'line' | 'merchantReferenceId' | 'requestValues' | 'state' | 'createAttempts' | 'leaseOwner' | 'leaseExpiresAt'
>;

/**
 * Claims up to `limit` READY rows of ACTIVE, unheld batches, oldest batch
 * first and in line order within a batch, and records the intent (READY ->
 * CREATING, attempt counted, lease taken) before any create is sent. The
 * batches come first (a handful), then each batch's due rows are moved by
 * one UPDATE … WHERE id IN (its first due rows by the index (batch_id,
 * state, line), `rowsToTake`) RETURNING what a create needs: a claim reads
 * only the rows it takes, once. The guard on the state decides who got each
 * row.
 */
export async function claimReadyRows(db: Database, limit: number, now: number, claimant: Claimant = LOCAL): Promise<ClaimedRow[]> {
  return db.transaction(async (trx) => {
    // A row is due once its next attempt time has come (null: at once).
    const due =
      (col: string) =>
      (w: Knex.QueryBuilder): Knex.QueryBuilder =>
        w.whereNull(col).orWhere(col, '<=', now);
    const batchIds = (await trx('batches as b')
      .where('b.state', 'ACTIVE')
      // Only a balance hold ends by itself; any other hold waits for an operator.
      .andWhere((w) =>
        w.whereNull('b.hold_code').orWhere((h) => h.where('b.hold_code', 'INSUFFICIENT_BALANCE').andWhere('b.hold_until', '<=', now)),
      )
      .whereExists((e) =>
        e
          .select(trx.raw('1'))
          .from('payouts as p')
          .whereRaw('p.batch_id = b.id')
          .andWhere('p.state', 'READY')
          .andWhere(due('p.next_attempt_at')),
      )
      .orderBy([{ column: 'b.received_at' }, { column: 'b.id' }])
      .pluck('b.id')) as string[];
    const leaseExpiresAt = now + claimant.leaseMs;
    const claimed: ClaimedRow[] = [];
    for (const batchId of batchIds) {
      if (claimed.length >= limit) break;
      const first = trx('payouts')
        .select('id')
        .where({ batch_id: batchId, state: 'READY' })
        .andWhere(due('next_attempt_at'))
        .orderBy('line')
        .limit(limit - claimed.length);
      const take = await rowsToTake(trx, first);
      if (take === null) continue;
      const intent = trx('payouts')
        .whereIn('id', take.ids)
        .andWhere(stateGuard(trx, 'READY'))
        .update({
          state: 'CREATING',
          create_attempts: trx.raw('create_attempts + 1'),
          lease_owner: claimant.instanceId,
          lease_expires_at: leaseExpiresAt,
          updated_at: now,
        })
        .returning(['id', 'line', 'merchant_reference_id', 'request_values', 'create_attempts']);
      const rows = (await selectArrays(trx, intent)) as [number | string, number, string, string | null, number | string][];
      const taken: ClaimedRow[] = rows.map(([id, line, merchantReferenceId, requestValues, attempts]) => ({
        id: Number(id),
        batchId,
        line: Number(line),
        merchantReferenceId,
        requestValues,
        state: 'CREATING',
        createAttempts: Number(attempts),
        leaseOwner: claimant.instanceId,
        leaseExpiresAt,
      }));
      // RETURNING comes in no promised order; creates go out in line order.
      taken.sort((a, b) => a.line - b.line);
      for (const r of taken) claimed.push(r);
    }
    await recordMoved(
      trx,
      claimed.map((r) => r.id),
      'READY',
      'CREATING',
      { event: 'intent', detail: `create about to be sent by ${claimant.instanceId}` },
      now,
    );
    return claimed;
  });
}

/** The claimant of a single-instance daemon. */
export const LOCAL: Claimant = { instanceId: 'local', leaseMs: 10 * 60_000 };

/**
 * Takes a batch of due rows for this instance by pushing their due time
 * `leaseMs` ahead (UPDATE … WHERE id IN (the first due rows, `rowsToTake`)
 * RETURNING): another instance skips them, and if this one dies they are
 * simply due again after the lease.
 */
export async function claimDueRows(
  db: Database,
  state: 'UNKNOWN' | 'PENDING',
  dueColumn: 'next_attempt_at' | 'next_poll_at',
  now: number,
  limit: number,
  leaseMs: number,
): Promise<PayoutRow[]> {
  return db.transaction(async (trx) => {
    const due = rowsInState(trx, state)
      .select('id')
      .andWhere((w) =>
        dueColumn === 'next_attempt_at' ? w.whereNull(dueColumn).orWhere(dueColumn, '<=', now) : w.where(dueColumn, '<=', now),
      )
      // Ties by id: the order of the state's partial index (migration 0007), and the same rows first on every engine.
      .orderBy([{ column: dueColumn }, { column: 'id' }])
      .limit(limit);
    const take = await rowsToTake(trx, due);
    if (take === null) return [];
    const rows = (await trx('payouts')
      .whereIn('id', take.ids)
      .andWhere(stateGuard(trx, state))
      .update({ [dueColumn]: now + leaseMs })
      .returning('*')) as Record<string, unknown>[];
    return rows.map(fromColumns).sort((a, b) => a.id - b.id);
  });
}

export interface RowMove {
  /** The row moved (its id; its batch, for whoever acts on the batches moved). */
  row: Pick<PayoutRow, 'id' | 'batchId'>;
  from: RowState;
  to: RowState;
  patch: PayoutRowPatch;
  /** null only where the state stays: see RowMoveSpec. */
  history: HistoryEntry | null;
}

/**
 * Applies many independent row moves in one transaction (group commit), with
 * few statements (see moveEach); a row no longer in its move's `from` is
 * skipped. Returns how many moves happened.
 */
export async function applyRowMoves(db: Database, moves: RowMove[], now: number): Promise<number> {
  if (moves.length === 0) return 0;
  return db.transaction((trx) => movesIn(trx, moves, now));
}

/** Moves that share the time they were decided at (one group commit, one poll call's answer). */
export interface AnswerMoves {
  moves: RowMove[];
  at: number;
}

/**
 * Records answers of the payout service (creates, polls) in one transaction
 * whose commit need not reach the disk at once: each is asked again after a
 * crash that lost it (./reproducible.ts). Returns how many rows moved.
 */
export async function recordAnswers(db: Database, answers: readonly AnswerMoves[]): Promise<number> {
  if (answers.every((a) => a.moves.length === 0)) return 0;
  return reproducibleTransaction(db, async (trx) => {
    await lockInIdOrder(
      trx,
      answers.flatMap((a) => a.moves.map((m) => m.row.id)),
    );
    let moved = 0;
    for (const a of answers) if (a.moves.length > 0) moved += await movesIn(trx, a.moves, a.at);
    return moved;
  });
}

/**
 * On PostgreSQL, locks the rows about to move in id order first. The moves
 * run as one UPDATE per patch, each locking its rows as it reaches them, and
 * two instances can hold answers for the same rows (a webhook or a
 * settlement sweep made a row due while another instance was asking about
 * it): taken in different orders, their locks could deadlock, which aborts
 * one of the answers. Taken in one order, the later answer waits, then finds
 * the rows already moved and skips them.
 */
async function lockInIdOrder(trx: Knex.Transaction, ids: number[]): Promise<void> {
  if (!isPostgres(trx) || ids.length < 2) return;
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i += 5000)
    await trx('payouts')
      .select('id')
      .whereIn('id', sorted.slice(i, i + 5000))
      .orderBy('id')
      .forUpdate();
}

async function movesIn(trx: Knex.Transaction, moves: RowMove[], now: number): Promise<number> {
  const done = await moveEach(
    trx,
    moves.map((m) => ({ id: m.row.id, from: m.from, to: m.to, patch: m.patch, history: m.history })),
    now,
  );
  return done.filter(Boolean).length;
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

/** Rows in a state (READY waiting to be claimed, PENDING being followed). */
export async function countRowsInState(db: Database, state: IndexedState): Promise<number> {
  const r = (await rowsInState(db, state).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(r?.n ?? 0);
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
    await trx('batches').where({ id: batchId }).update({ hold_code: null, hold_reason: null, hold_until: null, updated_at: now });
    return moved.length;
  });
}

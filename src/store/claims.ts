/**
 * Claims: taking rows for work, so that instances sharing the database never take the same row. A create's
 * claim records its intent (READY -> CREATING) before anything is sent; a claim of due rows leases them by
 * pushing their due time ahead. Also the creates a dead process left on the wire, which become UNKNOWN.
 */
import type { Knex } from 'knex';
import { BALANCE_HOLD, RELEASED_APPROVAL_STATES } from '../domain/holds.js';
import { lockInIdOrder } from './answers.js';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { fromColumns, rowsInState, type PayoutRow } from './payouts.js';
import { moveRows, recordMoved, type RowCondition } from './moves.js';
import { reproducibleTransaction } from './reproducible.js';
import { askBeforeSending } from './unfollowed-payouts.js';

/** Who claims work, and for how long (several instances on PostgreSQL). */
export interface Claimant {
  /** This process, unique among the instances sharing the database. */
  instanceId: string;
  /** A claim not renewed for this long is taken over. */
  leaseMs: number;
}

/**
 * A create on the wire when its process died has an unknown outcome. With `all` (one instance, at start-up)
 * every CREATING row is one; otherwise only rows whose lease ran out.
 */
export async function markInterruptedCreatesUnknown(db: Database, now: number, all = true): Promise<number> {
  return writeTransaction(db, async (trx) => {
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
 * The ids an UPDATE … WHERE id IN (…) takes, given `first` (a SELECT id with a LIMIT); null: none. On
 * PostgreSQL they are picked and locked by a statement of their own: as a subquery PostgreSQL may run it
 * again per row checked and take past the limit. (Wrapped: a query builder is thenable.)
 */
async function rowsToTake(trx: Knex.Transaction, first: Knex.QueryBuilder): Promise<{ ids: Knex.QueryBuilder | number[] } | null> {
  if (!isPostgres(trx)) return { ids: first };
  const ids = (await first.forUpdate().skipLocked().pluck('id')) as number[];
  return ids.length > 0 ? { ids } : null;
}

/**
 * `id NOT IN (ids)` with the list bound as one value, so a long one never nears the bound-value limit: a JSON
 * array read by json_each on SQLite, an array literal on PostgreSQL.
 */
function idNotIn(db: Knex.Transaction, ids: ReadonlySet<number>): Knex.Raw {
  const list = [...ids];
  return isPostgres(db)
    ? db.raw('id <> ALL(CAST(? AS bigint[]))', [`{${list.join(',')}}`])
    : db.raw('id NOT IN (SELECT value FROM json_each(?))', [JSON.stringify(list)]);
}

/**
 * The batches (`b`) whose rows may be sent at `now`: the one definition both the claim and the fence of each
 * create try apply, so a batch cancelled or held after its rows were claimed sends none of them.
 */
function sendableBatch(q: Knex.QueryBuilder, now: number): Knex.QueryBuilder {
  return (
    q
      .where('b.state', 'ACTIVE')
      // Only a balance hold ends by itself; any other hold waits for an operator.
      .andWhere((w) => w.whereNull('b.hold_code').orWhere((h) => h.where('b.hold_code', BALANCE_HOLD).andWhere('b.hold_until', '<=', now)))
      // Approval (src/approval): a batch that uses it is paid only once let go, whatever happened to its hold.
      .andWhere((w) => w.whereNull('b.approval_state').orWhereIn('b.approval_state', RELEASED_APPROVAL_STATES))
      // An operator's cancel is for good: a row back in READY since is made NOT_SUBMITTED, never sent.
      .whereNull('b.cancelled_at')
  );
}

/** A row claimed for a create: what sending it needs, and its intent's lease. */
export type ClaimedRow = Pick<
  PayoutRow,
  'id' | 'batchId' | 'line' | 'merchantReferenceId' | 'requestValues' | 'state' | 'createAttempts' | 'leaseOwner' | 'leaseExpiresAt'
>;

/**
 * What a move recording a claimed row's create (its answer, or that it was not sent) needs the row to still hold
 * (RowMove.still): this claim's instance and attempt. Once the lease ran out another instance may have taken the
 * row over and claimed it again, its own create on the wire; the state alone (CREATING) cannot tell the claims apart.
 */
export function claimOf(row: Pick<ClaimedRow, 'leaseOwner' | 'createAttempts'>): RowCondition {
  return { leaseOwner: row.leaseOwner, createAttempts: row.createAttempts };
}

const RETURNED_OF_CLAIM = [
  'id',
  'line',
  'merchant_reference_id as merchantReferenceId',
  'request_values as requestValues',
  'create_attempts as createAttempts',
];

/**
 * Claims up to `limit` READY rows of ACTIVE, unheld batches, oldest batch first and in line order, and
 * records the intent (READY -> CREATING, attempt counted, lease taken) before any create is sent. The guard
 * on the state decides who got each row.
 */
export async function claimReadyRows(db: Database, limit: number, now: number, claimant: Claimant = LOCAL): Promise<ClaimedRow[]> {
  return writeTransaction(db, async (trx) => {
    // A row is due once its next attempt time has come (null: at once).
    const due =
      (col: string) =>
      (w: Knex.QueryBuilder): Knex.QueryBuilder =>
        w.whereNull(col).orWhere(col, '<=', now);
    const batchIds = (await trx('batches as b')
      .modify(sendableBatch, now)
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
      const first = trx('payouts as p')
        .select('p.id', 'p.create_attempts as createAttempts', 'p.unknown_since as unknownSince')
        .select(trx.raw('case when exists ? then 1 else 0 end as "triedElsewhere"', [triedElsewhere(trx)]))
        .where({ 'p.batch_id': batchId, 'p.state': 'READY' })
        .andWhere(due('p.next_attempt_at'))
        .orderBy('p.line')
        .limit(limit - claimed.length);
      // Read once, by a statement of their own: as a subquery of the claim's UPDATE it would run again after the ask
      // below moved rows, and reach past them to rows it never looked at. Locked on PostgreSQL, as rowsToTake does.
      const looked = (await (isPostgres(trx) ? first.forUpdate().skipLocked() : first)) as ClaimCandidate[];
      const elsewhere = new Set(looked.filter((c) => Number(c.triedElsewhere) === 1).map((c) => c.id));
      const ask = looked.filter((c) => elsewhere.has(c.id) && c.createAttempts === 0 && c.unknownSince === null).map((c) => c.id);
      // Never tried nor asked about: its reference is asked first. Found absent, it is READY again with unknown_since
      // kept, and sent.
      if (ask.length > 0) {
        const detail =
          'a create under this reference was tried for an earlier row that holds no payout; its reference is asked before any create';
        await askBeforeSending(
          trx,
          ask.map((id) => ({ id, state: 'READY' as const })),
          { event: 'asked-before-sending', detail },
          now,
        );
      }
      const ids = looked.map((c) => c.id).filter((id) => !ask.includes(id));
      if (ids.length === 0) continue;
      const taken = (await trx('payouts')
        .whereIn('id', ids)
        .andWhere('state', 'READY')
        .update({
          state: 'CREATING',
          create_attempts: trx.raw('create_attempts + 1'),
          lease_owner: claimant.instanceId,
          lease_expires_at: leaseExpiresAt,
          updated_at: now,
        })
        .returning(RETURNED_OF_CLAIM)) as Omit<ClaimedRow, 'batchId' | 'state' | 'leaseOwner' | 'leaseExpiresAt'>[];
      // RETURNING comes in no promised order; creates go out in line order.
      taken.sort((a, b) => a.line - b.line);
      for (const r of taken) claimed.push({ ...r, batchId, state: 'CREATING', leaseOwner: claimant.instanceId, leaseExpiresAt });
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

/** A READY row a create claim looked at: tried or asked about before, and whether another row tried its reference. */
interface ClaimCandidate {
  id: number;
  createAttempts: number;
  unknownSince: number | null;
  triedElsewhere: number | string;
}

/**
 * Another row (not `p`) tried a create under `p`'s reference and holds no payout of it: found absent and made
 * NOT_SUBMITTED, `p` sending it again in a new file. That create may land yet.
 */
function triedElsewhere(trx: Knex.Transaction): Knex.QueryBuilder {
  return trx('payouts as o')
    .select(trx.raw('1'))
    .whereRaw('o.merchant_reference_id = p.merchant_reference_id')
    .andWhereRaw('o.id <> p.id')
    .andWhere('o.create_attempts', '>', 0)
    .whereNull('o.payout_id');
}

/** What the fence of a create try found: `sending` (it may go), `lost` (the claim), or `unsendable` (its batch). */
export type CreateFence = 'sending' | 'lost' | 'unsendable';

/**
 * The fence of one create try, right before it goes on the wire: the row is still this claim's (CREATING,
 * leased to this instance for the same attempt) and its batch still sendable (cancel, holds, approval:
 * sendableBatch). `lost`: the row may be another's by now (taken over as interrupted, perhaps created again).
 * `unsendable`: still ours, but an operator's cancel or a hold came after the claim. Either way the try must
 * not be sent. With `renew` the lease is renewed in the same guarded statement, so it then lasts longer than
 * one try can take (docs/high-availability.md); without, one indexed read, which also wants the lease not run
 * out (nothing stops a takeover between the read and the send).
 */
export async function fenceCreate(
  db: Database,
  row: Pick<ClaimedRow, 'id' | 'createAttempts'>,
  now: number,
  claimant: Claimant,
  renew: boolean,
): Promise<CreateFence> {
  // A takeover moves the row out of CREATING, and a new claim counts another attempt: a row still CREATING
  // under this owner and attempt was taken by nobody, even once its lease ran out while it waited for a slot
  // or a rate-limit pause. The renewal takes it back then in one statement: a takeover that commits first
  // leaves it nothing to match, one that comes after sees a fresh lease.
  const claimed = (q: Knex.QueryBuilder): Knex.QueryBuilder =>
    q.where({ 'p.id': row.id, 'p.state': 'CREATING', 'p.lease_owner': claimant.instanceId, 'p.create_attempts': row.createAttempts });
  const ours = (q: Knex.QueryBuilder): Knex.QueryBuilder => (renew ? claimed(q) : claimed(q).andWhere('p.lease_expires_at', '>=', now));
  const sendable = (trx: Knex): Knex.QueryBuilder =>
    trx('batches as b').select(trx.raw('1')).whereRaw('b.id = p.batch_id').modify(sendableBatch, now);
  const look = async (trx: Knex): Promise<CreateFence> => {
    const r = (await trx('payouts as p')
      .modify(ours)
      .first(trx.raw('case when exists ? then 1 else 0 end as sendable', [sendable(trx)]))) as { sendable: number | string } | undefined;
    if (r === undefined) return 'lost';
    return Number(r.sendable) === 1 ? 'sending' : 'unsendable';
  };
  if (!renew) return look(db);
  const renewed = async (trx: Knex.Transaction): Promise<CreateFence> => {
    const n = await trx('payouts as p')
      .modify(ours)
      .whereExists(sendable(trx))
      .update({ lease_expires_at: now + claimant.leaseMs });
    // Rarely reached: which of the two it was, for what the row's history says.
    return n > 0 ? 'sending' : look(trx);
  };
  // Shared, other instances judge the lease by what is committed, so it must survive a crash of the server.
  // Alone on SQLite, every start takes all CREATING rows as interrupted anyway: a lost renewal costs nothing.
  return isPostgres(db) ? writeTransaction(db, renewed) : reproducibleTransaction(db, renewed);
}

/**
 * Renews the leases of claimed rows whose creates are still waiting in this process (for a slot, say), on the
 * fence's terms: each row still CREATING under this owner and attempt, its lease run out or not, so none is
 * taken over as interrupted though it never left. Returns the ids renewed; a row taken over is left to its
 * holder (its fence then finds it lost).
 */
export async function renewClaims(
  db: Database,
  rows: readonly Pick<ClaimedRow, 'id' | 'createAttempts'>[],
  now: number,
  claimant: Claimant,
): Promise<number[]> {
  const renew = async (trx: Knex.Transaction): Promise<number[]> => {
    const renewed: number[] = [];
    // The update would lock them in the order it reads them (by lease), not in id order as an answer does.
    await lockInIdOrder(
      trx,
      rows.map((r) => r.id),
    );
    // Chunked: each pair is two bound values.
    for (let i = 0; i < rows.length; i += 400) {
      const pairs = rows.slice(i, i + 400).map((r) => [r.id, r.createAttempts]);
      const ids = (await trx('payouts')
        .whereIn(['id', 'create_attempts'], pairs)
        .andWhere({ state: 'CREATING', lease_owner: claimant.instanceId })
        .update({ lease_expires_at: now + claimant.leaseMs })
        .returning('id')) as { id: number }[];
      for (const r of ids) renewed.push(r.id);
    }
    return renewed;
  };
  // As the fence's renewal, and for the same reasons.
  return isPostgres(db) ? writeTransaction(db, renew) : reproducibleTransaction(db, renew);
}

/** The claimant of a single-instance daemon. */
export const LOCAL: Claimant = { instanceId: 'local', leaseMs: 10 * 60_000 };

/**
 * Leases due rows to this instance by pushing their due time `leaseMs` ahead; if it dies they come due again. Rows
 * in `asking` (this instance's queries of them are out) are left as they are: leased again, a row made due meanwhile
 * (a webhook) would wait the lease although no query of this claim asks about it.
 */
export async function claimDueRows(
  db: Database,
  state: 'UNKNOWN' | 'PENDING',
  dueColumn: 'next_attempt_at' | 'next_poll_at',
  now: number,
  limit: number,
  leaseMs: number,
  asking: ReadonlySet<number> = new Set(),
): Promise<PayoutRow[]> {
  return writeTransaction(db, async (trx) => {
    const due = rowsInState(trx, state)
      .select('id')
      .andWhere((w) =>
        dueColumn === 'next_attempt_at' ? w.whereNull(dueColumn).orWhere(dueColumn, '<=', now) : w.where(dueColumn, '<=', now),
      )
      .modify((q) => (asking.size > 0 ? q.andWhere(idNotIn(trx, asking)) : q))
      // Ties by id: the order of the state's partial index (migration 0007), and the same rows first on every engine.
      .orderBy([{ column: dueColumn }, { column: 'id' }])
      .limit(limit);
    const take = await rowsToTake(trx, due);
    if (take === null) return [];
    const rows = (await trx('payouts')
      .whereIn('id', take.ids)
      .andWhere('state', state)
      .update({ [dueColumn]: now + leaseMs })
      .returning('*')) as Record<string, unknown>[];
    return rows.map(fromColumns).sort((a, b) => a.id - b.id);
  });
}

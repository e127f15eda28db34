/** Following payouts to their final status: which PENDING payouts are due for a query, which batches are finished. */
import type { Knex } from 'knex';
import { OPERATOR_HOLD_CODES } from '../domain/holds.js';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { fromColumns, rowsInState, type PayoutRow } from './payouts.js';
import { lockInIdOrder } from './answers.js';
import { recordBatchEvent } from './batch-events.js';
import { requestFieldAt } from './request-fields.js';
import type { RequestedMoney } from '../domain/payout.js';
import { FINAL_ROW_STATES, type RowState } from '../domain/lifecycle.js';

/**
 * What polling a payout needs of its row (a claim reads a hundred of them per call), with the currency and
 * amount the row asked for (null: a row without its request). The payout its create was answered with may be
 * another's until a readable record of it was found to be the row's own (payoutCheckedAt); a later record
 * showing other figures is still the row's, and only reported.
 */
export type PollTarget = Pick<
  PayoutRow,
  | 'id'
  | 'batchId'
  | 'line'
  | 'merchantReferenceId'
  | 'payoutId'
  | 'serviceStatus'
  | 'payoutCheckedAt'
  | 'pollCount'
  | 'nextPollAt'
  | 'pollRound'
  | 'serviceCheck'
  | 'serviceCheckRound'
> & { [K in keyof RequestedMoney]: RequestedMoney[K] | null };

const POLL_TARGET_COLUMNS = [
  'id',
  'batch_id as batchId',
  'line',
  'merchant_reference_id as merchantReferenceId',
  'payout_id as payoutId',
  'service_status as serviceStatus',
  'payout_checked_at as payoutCheckedAt',
  'poll_count as pollCount',
  'next_poll_at as nextPollAt',
  'poll_round as pollRound',
  'service_check as serviceCheck',
  'service_check_round as serviceCheckRound',
];

/** Where a round of claims stands: the due time and id of the last row taken (rows are taken in that order). */
export interface PollCursor {
  at: number;
  id: number;
}

/**
 * PENDING rows whose next poll is due, most overdue first (ties by id), after `cursor` when given (the
 * last row a poller took in its round). Rows at the cursor's own time are read first by (next_poll_at, id),
 * which the partial index payouts_pending_due answers by a seek.
 */
export async function listDueForPoll(db: Database, now: number, limit: number, cursor: PollCursor | null = null): Promise<PollTarget[]> {
  const requested = (field: keyof RequestedMoney): Knex.Raw => db.raw('? as ??', [requestFieldAt(db, field), field]);
  const targets = () =>
    rowsInState(db, 'PENDING').select([
      ...POLL_TARGET_COLUMNS,
      requested('payoutCurrency'),
      requested('payoutAmount'),
      requested('deductionCurrency'),
    ]);
  const rows: PollTarget[] = [];
  if (cursor !== null && cursor.at <= now) {
    const same = await targets().andWhere('next_poll_at', cursor.at).andWhere('id', '>', cursor.id).orderBy('id').limit(limit);
    rows.push(...(same as PollTarget[]));
  }
  if (rows.length < limit) {
    const q = targets().andWhere('next_poll_at', '<=', now);
    if (cursor !== null) q.andWhere('next_poll_at', '>', cursor.at);
    const later = await q.orderBy([{ column: 'next_poll_at' }, { column: 'id' }]).limit(limit - rows.length);
    rows.push(...(later as PollTarget[]));
  }
  return rows;
}

/** Earliest time a PENDING row is due (null when none is pending). */
export async function nextPollDue(db: Database): Promise<number | null> {
  const r = (await rowsInState(db, 'PENDING').min({ at: 'next_poll_at' }).first()) as { at: number | null } | undefined;
  return r?.at ?? null;
}

/**
 * Makes the rows of `pending` due now. On PostgreSQL rows another instance holds are skipped (SKIP
 * LOCKED): they are being answered right then, and waiting for them could deadlock.
 */
async function makeDueNow(db: Database, pending: Knex.QueryBuilder, now: number): Promise<number> {
  if (!isPostgres(db)) return pending.update({ next_poll_at: now });
  const free = pending.clone().select('id').forUpdate().skipLocked();
  return db('payouts').whereIn('id', free).andWhere('state', 'PENDING').update({ next_poll_at: now });
}

/**
 * Makes the rows of `pending` due now in a new poll round: a query already on the wire may have been answered
 * before what made them due, so its answer no longer applies (the poller's moves need the round they claimed). On PostgreSQL
 * a row whose answer is being recorded is waited for, never skipped: once that commits, a row it settled is no
 * longer PENDING and the caller finds it final. Rows are locked in id order, as answers lock theirs.
 */
async function newPollRound(db: Database, pending: Knex.QueryBuilder, now: number): Promise<number> {
  const due = { next_poll_at: now, poll_round: db.raw('poll_round + 1') };
  if (!isPostgres(db)) return pending.update(due);
  const ids = (await pending.clone().select('id').orderBy('id').forUpdate().pluck('id')) as number[];
  if (ids.length === 0) return 0;
  return db('payouts').whereIn('id', ids).andWhere('state', 'PENDING').update(due);
}

/** A payout a webhook named: its payoutId and the merchant reference the event echoed (null when it gave none). */
export interface PayoutNamed {
  payoutId: string;
  merchantReferenceId: string | null;
  /** What the event said of it (informative only: a query decides). */
  status?: string | null;
  eventId?: string;
}

/** The columns of a row holding a payout as a webhook's follow-up reads it (FinalRowNamed's fields). */
export const NAMED_ROW_COLUMNS: readonly string[] = [
  'id',
  'batch_id as batchId',
  'line',
  'merchant_reference_id as merchantReferenceId',
  'payout_id as payoutId',
  'state',
];

/** A row already final that a webhook named by both its reference and its payoutId. */
export interface FinalRowNamed {
  id: number;
  batchId: string;
  line: number;
  merchantReferenceId: string;
  payoutId: string;
  state: RowState;
}

/**
 * The rows of payouts webhooks named. A row is found by its indexed reference and must carry the event's
 * payoutId too; a payout named without a reference finds none (payout_id has no index). Null: none has one.
 */
function rowsNamed(db: Database, named: readonly PayoutNamed[]): Knex.QueryBuilder | null {
  const found = named.filter((n): n is PayoutNamed & { merchantReferenceId: string } => n.merchantReferenceId !== null);
  if (found.length === 0) return null;
  return db('payouts')
    .whereIn(
      'merchant_reference_id',
      found.map((n) => n.merchantReferenceId),
    )
    .whereIn(
      'payout_id',
      found.map((n) => n.payoutId),
    );
}

/**
 * Ask about these payouts at the next poll (a webhook said something changed), in a new poll round: an answer to
 * a query sent before is not recorded. A payout named without a reference is left to its regular poll: an event
 * only hastens a query.
 */
export async function pollSoon(db: Database, named: readonly PayoutNamed[], now: number): Promise<number> {
  const rows = rowsNamed(db, named);
  return rows === null ? 0 : newPollRound(db, rows.andWhere('state', 'PENDING'), now);
}

/**
 * Ask about the reference of a row still waiting on an unknown create outcome at the next reconcile (a webhook named
 * a payout under it), in a new poll round and at a due time no claim set: a reconcile whose query is out applies its
 * answer only while the row keeps the round and due time its claim saw (applyClaimedMoves), so an answer older than
 * the event is dropped. Returns how many rows were made due.
 */
export async function reaskUnknownOfReference(db: Database, merchantReferenceId: string, now: number): Promise<number> {
  return (
    (await rowsInState(db, 'UNKNOWN')
      .andWhere('merchant_reference_id', merchantReferenceId)
      // Already due: one before it, so each event moves it on and two in one millisecond cannot bring a claim's back.
      .update({
        next_attempt_at: db.raw('CASE WHEN next_attempt_at <= ? THEN next_attempt_at - 1 ELSE CAST(? AS BIGINT) END', [now, now]),
        poll_round: db.raw('poll_round + 1'),
      })) as number
  );
}

/** The rows of these payouts that are already final (found as pollSoon finds them). */
export async function finalRowsNamed(db: Database, named: readonly PayoutNamed[]): Promise<FinalRowNamed[]> {
  const rows = rowsNamed(db, named);
  if (rows === null) return [];
  const final = (await rows.whereIn('state', FINAL_ROW_STATES).select([...NAMED_ROW_COLUMNS])) as FinalRowNamed[];
  // Each list is matched on its own above: keep only the pairs an event named.
  return final.filter((r) => named.some((n) => n.payoutId === r.payoutId && n.merchantReferenceId === r.merchantReferenceId));
}

/**
 * Ask about every PENDING payout of a batch at the next poll (most payouts of
 * a query answer just settled: the rest of their batch likely has too).
 * Rows already due stay as they are.
 */
export async function pollBatchNow(db: Database, batchId: string, now: number): Promise<number> {
  const pending = db('payouts').where({ batch_id: batchId, state: 'PENDING' }).andWhere('next_poll_at', '>', now);
  return makeDueNow(db, pending, now);
}

/** Ask about these PENDING payouts again at `at` (their query failed). */
export async function reschedulePolls(db: Database, ids: number[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await writeTransaction(db, async (trx) => {
    await lockInIdOrder(trx, ids);
    await trx('payouts').whereIn('id', ids).andWhere('state', 'PENDING').update({ next_poll_at: at });
  });
}

/** PENDING rows created before `createdBefore` and not flagged yet, in the PENDING index's order. */
export async function listStalePending(db: Database, createdBefore: number, limit: number): Promise<PayoutRow[]> {
  const rows = (await rowsInState(db, 'PENDING')
    .andWhere('created_at_ms', '<', createdBefore)
    .whereNull('stale_flagged_at')
    .orderBy([{ column: 'next_poll_at' }, { column: 'id' }])
    .limit(limit)) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

/**
 * Flags PENDING payouts as stale, with one `stale` event per batch they belong to (how many, since when); returns
 * the ids it flagged. Only rows still PENDING and not flagged yet are flagged and counted: another instance that
 * listed the same rows and flagged them first announced them, and a payout settled since is no longer stale.
 */
export async function flagStale(db: Database, ids: number[], now: number): Promise<number[]> {
  if (ids.length === 0) return [];
  return writeTransaction(db, async (trx) => {
    await lockInIdOrder(trx, ids);
    const flagged = (await trx('payouts')
      .whereIn('id', ids)
      .andWhere('state', 'PENDING')
      .whereNull('stale_flagged_at')
      .update({ stale_flagged_at: now })
      .returning(['id', 'batch_id as batchId', 'created_at_ms as createdAtMs'])) as {
      id: number;
      batchId: string;
      createdAtMs: number | null;
    }[];
    for (const [batchId, b] of staleBatches(flagged)) {
      const pendingSince = b.since === null ? null : new Date(b.since).toISOString();
      await recordBatchEvent(trx, { batchId, type: 'stale', data: { payouts: b.n, pendingSince }, at: now });
    }
    return flagged.map((r) => r.id);
  });
}

/** Rows flagged stale by batch, in batch id order: how many, and the earliest creation among them. */
function staleBatches(rows: readonly { batchId: string; createdAtMs: number | null }[]): [string, { n: number; since: number | null }][] {
  const batches = new Map<string, { n: number; since: number | null }>();
  for (const r of rows) {
    const b = batches.get(r.batchId) ?? { n: 0, since: null };
    b.n++;
    if (r.createdAtMs !== null && (b.since === null || r.createdAtMs < b.since)) b.since = r.createdAtMs;
    batches.set(r.batchId, b);
  }
  return [...batches].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * ACTIVE batches none of whose rows is still moving. A batch under an operator's hold (FILE_CHANGED) is not
 * finished while held: `payoutd release` or `payoutd cancel` ends the hold.
 */
export async function listFinishedActiveBatches(db: Database): Promise<string[]> {
  return (await db('batches as b')
    .where('b.state', 'ACTIVE')
    .where((held) => held.whereNull('b.hold_code').orWhereNotIn('b.hold_code', OPERATOR_HOLD_CODES))
    .whereNotExists(
      db('payouts as p')
        .select(db.raw('1'))
        .whereRaw('p.batch_id = b.id')
        .whereIn('p.state', ['VALIDATED', 'READY', 'CREATING', 'UNKNOWN', 'PENDING']),
    )
    .pluck('b.id')) as string[];
}

/** Age of the oldest PENDING payout (ms), for health and metrics. */
export async function oldestPendingCreatedAt(db: Database): Promise<number | null> {
  const r = (await rowsInState(db, 'PENDING').min({ at: 'created_at_ms' }).first()) as { at: number | null } | undefined;
  return r?.at ?? null;
}

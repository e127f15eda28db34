/**
 * Database operations of following payouts to their final status: which
 * PENDING payouts are due for a query, and which batches are finished.
 */
import type { Database } from './db.js';
import { fromColumns, stateGuard, type PayoutRow } from './payouts.js';

/** PENDING rows whose next poll is due, most overdue first, leaving out `except` (rows already being asked about). */
export async function listDueForPoll(db: Database, now: number, limit: number, except: Iterable<number> = []): Promise<PayoutRow[]> {
  const q = db('payouts').where({ state: 'PENDING' }).andWhere('next_poll_at', '<=', now);
  const skip = [...except];
  if (skip.length > 0) q.whereNotIn('id', skip);
  const rows = (await q.orderBy('next_poll_at').limit(limit)) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

/** Earliest time a PENDING row is due (null when none is pending). */
export async function nextPollDue(db: Database): Promise<number | null> {
  const r = (await db('payouts').where({ state: 'PENDING' }).min({ at: 'next_poll_at' }).first()) as { at: number | null } | undefined;
  return r?.at ?? null;
}

/** Ask about these payouts at the next poll (a webhook said something changed). */
export async function pollSoon(db: Database, payoutIds: string[], now: number): Promise<number> {
  if (payoutIds.length === 0) return 0;
  return db('payouts').whereIn('payout_id', payoutIds).andWhere(stateGuard(db, 'PENDING')).update({ next_poll_at: now });
}

/** Ask about these PENDING payouts again at `at` (their query failed). */
export async function reschedulePolls(db: Database, ids: number[], at: number): Promise<void> {
  if (ids.length > 0) await db('payouts').whereIn('id', ids).andWhere(stateGuard(db, 'PENDING')).update({ next_poll_at: at });
}

/** PENDING rows created before `createdBefore` and not flagged yet. */
export async function listStalePending(db: Database, createdBefore: number, limit: number): Promise<PayoutRow[]> {
  const rows = (await db('payouts')
    .where({ state: 'PENDING' })
    .andWhere('created_at_ms', '<', createdBefore)
    .whereNull('stale_flagged_at')
    .limit(limit)) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

export async function flagStale(db: Database, ids: number[], now: number): Promise<void> {
  if (ids.length > 0) await db('payouts').whereIn('id', ids).update({ stale_flagged_at: now });
}

/** ACTIVE batches none of whose rows is still moving. */
export async function listFinishedActiveBatches(db: Database): Promise<string[]> {
  return (await db('batches as b')
    .where('b.state', 'ACTIVE')
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
  const r = (await db('payouts').where({ state: 'PENDING' }).min({ at: 'created_at_ms' }).first()) as { at: number | null } | undefined;
  return r?.at ?? null;
}

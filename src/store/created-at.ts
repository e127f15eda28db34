/**
 * When a payout was created (created_at_ms), the time the reconciliation report selects on, and the end of a
 * report's period. A report fixes its end, then reads what is committed: a creation stamped before that end but
 * committed after the read would be in neither that report nor the next, which starts at the end. So
 * - a write that records a creation reads its time inside its transaction, once it holds the lock a report's end
 *   waits for (SQLite: the write lock, which writeTransaction takes first; PostgreSQL: a shared advisory lock that
 *   only such writes take, so a report waits for none of the others);
 * - a report fixes its end holding that lock alone, which waits out every such write in flight, and records it;
 * - a creation is stamped no earlier than the latest end recorded: another instance's clock may be behind the
 *   report's, or this one set back (by minutes at most: an end further ahead came from a wrong clock).
 * A creation stamped before a report's end is then committed before the report reads, and one written after it
 * is stamped at or after that end: it is the next report's.
 */
import type { Knex } from 'knex';
import type { Clock } from '../domain/clock.js';
import { DatabaseBusyError, isPostgres, writeTransaction, type Database } from './db.js';

/** A created_at_ms read from `clock` by the write that records it, once that write holds the lock (creationTimes). */
export interface CreatedWhenWritten {
  readonly createdWhenWritten: Clock;
}

/** The created_at_ms of a payout the service just confirmed or a query just found: read when it is written. */
export function createdWhenWritten(clock: Clock): CreatedWhenWritten {
  return { createdWhenWritten: clock };
}

// Per schema, as the migrations' lock: instances of payoutd in other schemas of one database do not wait for each other.
const CREATIONS_LOCK = 'hashtext(current_schema() || ?)';
const CREATIONS_LOCK_NAME = '.payoutd_creations';

/** The latest end a report fixed (migration 0037), or null before the first; read under the lock. */
async function latestEnd(trx: Knex.Transaction): Promise<number | null> {
  const r = (await trx('report_ends').where({ id: 1 }).first('latest_end_ms')) as { latest_end_ms: number | string } | undefined;
  return r === undefined ? null : Number(r.latest_end_ms);
}

/**
 * The time of each clock `stamps` read from, read once the transaction holds the lock a report's end waits for
 * (taken here on PostgreSQL; on SQLite the transaction's first statement took the write lock), and no earlier
 * than the latest end a report fixed.
 */
export async function creationTimes(trx: Knex.Transaction, stamps: readonly CreatedWhenWritten[]): Promise<Map<Clock, number>> {
  const times = new Map<Clock, number>();
  if (stamps.length === 0) return times;
  if (isPostgres(trx)) await trx.raw(`select pg_advisory_xact_lock_shared(${CREATIONS_LOCK})`, [CREATIONS_LOCK_NAME]);
  const floor = (await latestEnd(trx)) ?? Number.NEGATIVE_INFINITY;
  for (const { createdWhenWritten: clock } of stamps) if (!times.has(clock)) times.set(clock, stampedAt(clock.now(), floor));
  return times;
}

/**
 * How far a creation is stamped ahead of its own clock to fall after a report's end: clocks in step differ by
 * seconds. An end further ahead came from a clock that was wrong (a report run while the host's clock had jumped
 * ahead): following it would date every later creation by it, and take it out of the reports of its real period.
 */
const MAX_STAMP_LEAD_MS = 5 * 60_000;

/** A creation's time: its clock's, or the latest report end when that is ahead of it by no more than MAX_STAMP_LEAD_MS. */
function stampedAt(now: number, latestEnd: number): number {
  return latestEnd > now && latestEnd - now <= MAX_STAMP_LEAD_MS ? latestEnd : now;
}

/** PostgreSQL's lock_not_available: lock_timeout passed. */
const LOCK_NOT_AVAILABLE = '55P03';

interface SqliteConnection {
  pragma(source: string, options?: { simple: boolean }): unknown;
}

/** Reads the end under the lock, and records it as the latest unless a report (on a clock ahead) fixed a later one. */
async function endNow(trx: Knex.Transaction, clock: Clock): Promise<number> {
  const end = clock.now();
  const latest = await latestEnd(trx);
  if (latest === null) await trx('report_ends').insert({ id: 1, latest_end_ms: end });
  else if (end > latest) await trx('report_ends').where({ id: 1 }).update({ latest_end_ms: end });
  return end;
}

/**
 * The end of a report's period: `clock` read once every write of a creation in flight has committed, waiting
 * for them up to `waitMs`. A creation written after it is stamped at or after it.
 */
export async function fixPeriodEnd(db: Database, clock: Clock, waitMs: number): Promise<number> {
  try {
    if (isPostgres(db)) {
      return await writeTransaction(db, async (trx) => {
        await trx.raw(`set local lock_timeout = ${Math.trunc(waitMs)}`);
        await trx.raw(`select pg_advisory_xact_lock(${CREATIONS_LOCK})`, [CREATIONS_LOCK_NAME]);
        return endNow(trx, clock);
      });
    }
    // The write lock, held by another process's write of any kind, waited for `waitMs` rather than busy_timeout.
    // Set on the one connection, which the transaction is then given.
    const client = db.client as Knex.Client;
    const conn = (await client.acquireConnection()) as SqliteConnection;
    const configured = Number(conn.pragma('busy_timeout', { simple: true }));
    try {
      conn.pragma(`busy_timeout = ${Math.trunc(waitMs)}`);
      return await writeTransaction(db, (trx) => endNow(trx, clock), { connection: conn });
    } finally {
      conn.pragma(`busy_timeout = ${configured}`);
      await client.releaseConnection(conn);
    }
  } catch (err) {
    const code = String((err as { code?: unknown }).code);
    if (!(err instanceof DatabaseBusyError) && code !== LOCK_NOT_AVAILABLE) throw err;
    throw new DatabaseBusyError(
      'DATABASE_BUSY',
      `the state database stayed locked by a write of the daemon or a payoutd command for longer than ${Math.ceil(waitMs / 1000)} s, ` +
        'so the end of the period could not be fixed with every payout created before it recorded: no report written; try again',
      { cause: err },
    );
  }
}

/**
 * Transactions for records the next start re-derives by asking the payout
 * service: a create's answer (until it is recorded the row is CREATING, and
 * after a crash a CREATING row becomes UNKNOWN and is resolved by its
 * reference, never re-created blindly) and a poll's answer (the payout is
 * simply asked about again). Their commits need not reach the disk before
 * the call returns: on SQLite the commit skips its fsync (synchronous
 * NORMAL for that one transaction), on PostgreSQL it does not wait for the
 * WAL flush (`synchronous_commit = off`). A process crash loses nothing
 * (the data is with the operating system); a power loss can lose only the
 * last of these records, never an intent: both engines keep commits in
 * order, so the next durable commit (an intent is always one) makes every
 * earlier commit durable with it.
 *
 * On SQLite the one connection is held for the whole transaction and the
 * configured level put back before it is released, so no other transaction
 * (an intent above all) can commit under the relaxed level.
 */
import type { Knex } from 'knex';
import { isPostgres, type Database } from './db.js';

interface SqliteConnection {
  pragma(source: string, options?: { simple: boolean }): unknown;
}

/** SQLite's `synchronous` levels: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
const NORMAL = 1;

export async function reproducibleTransaction<T>(db: Database, write: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (isPostgres(db)) {
    return db.transaction(async (trx) => {
      await trx.raw('SET LOCAL synchronous_commit = off');
      return write(trx);
    });
  }
  // knex's pool holds SQLite's one connection: taken here, and handed to the transaction.
  const client = db.client as Knex.Client;
  const conn = (await client.acquireConnection()) as SqliteConnection;
  try {
    const configured = Number(conn.pragma('synchronous', { simple: true }));
    if (configured <= NORMAL) return await db.transaction(write, { connection: conn });
    conn.pragma(`synchronous = ${NORMAL}`);
    try {
      return await db.transaction(write, { connection: conn });
    } finally {
      conn.pragma(`synchronous = ${configured}`);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

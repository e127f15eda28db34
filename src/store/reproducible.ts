/**
 * Transactions for records the next start re-derives by asking the payout service (a create's or a poll's
 * answer): their commits need not reach the disk (SQLite synchronous NORMAL for that transaction, PostgreSQL
 * synchronous_commit off). A power loss can lose only the last of these, never an intent: both engines keep
 * commits in order. On SQLite the one connection is held throughout, so nothing else commits relaxed.
 */
import type { Knex } from 'knex';
import { isPostgres, writeTransaction, type Database } from './db.js';

interface SqliteConnection {
  pragma(source: string, options?: { simple: boolean }): unknown;
}

const NORMAL = 1;

export async function reproducibleTransaction<T>(db: Database, write: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (isPostgres(db)) {
    return writeTransaction(db, async (trx) => {
      await trx.raw('SET LOCAL synchronous_commit = off');
      return write(trx);
    });
  }
  // knex's pool holds SQLite's one connection: taken here, and handed to the transaction.
  const client = db.client as Knex.Client;
  const conn = (await client.acquireConnection()) as SqliteConnection;
  try {
    const configured = Number(conn.pragma('synchronous', { simple: true }));
    if (configured <= NORMAL) return await writeTransaction(db, write, { connection: conn });
    conn.pragma(`synchronous = ${NORMAL}`);
    try {
      return await writeTransaction(db, write, { connection: conn });
    } finally {
      conn.pragma(`synchronous = ${configured}`);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

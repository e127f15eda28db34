/**
 * Prepared statements kept per SQLite connection, for the statement run once
 * per row on the hot paths (the UPDATE recording one create's answer or one
 * settlement). knex builds and better-sqlite3 prepares every statement anew,
 * which costs more than running it; these are prepared once per connection
 * and SQL text. They run on the transaction's own connection, only while the
 * transaction is open (the checks knex makes before each of its queries).
 * PostgreSQL keeps knex's path.
 */
import type { Knex } from 'knex';
import { PayoutdError } from '../domain/errors.js';

interface SqliteStatement {
  run(params: unknown[]): { changes: number | bigint };
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

/** SQL texts kept per connection; the hot paths use a handful (one per patch shape). */
const MAX_PER_CONNECTION = 32;

const statements = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();

export class PreparedStatementError extends PayoutdError {
  override readonly name = 'PreparedStatementError';
}

/** Runs a write on the SQLite connection of `trx`; returns how many rows it changed. */
export async function runPrepared(trx: Knex.Transaction, sql: string, values: readonly (string | number | null)[]): Promise<number> {
  if (!trx.isTransaction || trx.isCompleted())
    throw new PreparedStatementError('NOT_IN_TRANSACTION', 'a prepared statement runs only inside an open transaction');
  const conn = (await trx.client.acquireConnection()) as SqliteConnection;
  let cache = statements.get(conn);
  if (!cache) statements.set(conn, (cache = new Map()));
  let st = cache.get(sql);
  if (!st) {
    if (cache.size >= MAX_PER_CONNECTION) cache.clear();
    st = conn.prepare(sql);
    cache.set(sql, st);
  }
  return Number(st.run([...values]).changes);
}

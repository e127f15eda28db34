/**
 * Prepared statements kept per SQLite connection, for the statements the hot
 * paths run again and again: the UPDATE recording one create's answer or one
 * settlement, and the intake's multi-row INSERTs (tens of thousands of
 * placeholders each). knex builds and better-sqlite3 prepares every
 * statement anew, which costs more than running it; these are prepared once
 * per connection and SQL text and run on the transaction's own connection,
 * only while the transaction is open. PostgreSQL keeps knex's path.
 */
import type { Knex } from 'knex';
import { PayoutdError } from '../domain/errors.js';
import type { Database } from './db.js';

interface SqliteStatement {
  run(params: unknown[]): { changes: number | bigint };
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

/** SQL texts kept per connection; the hot paths use a handful (one per patch shape, two insert sizes). */
const MAX_PER_CONNECTION = 32;

const statements = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();

export class PreparedStatementError extends PayoutdError {
  override readonly name = 'PreparedStatementError';
}

/** Runs one write, given its SQL text and values; returns how many rows it changed. */
export type PreparedWrite = (sql: string, values: readonly unknown[]) => number;

/**
 * Writes on the SQLite connection of an open transaction, each statement
 * prepared once per connection; null on PostgreSQL or outside a transaction
 * (only a transaction hands out its own connection without taking one from
 * the pool), where the caller goes through knex.
 */
export async function sqliteWriter(db: Database | Knex.Transaction): Promise<PreparedWrite | null> {
  const client = db.client as { driverName?: string; acquireConnection(): Promise<unknown> };
  if (!db.isTransaction || (db as Knex.Transaction).isCompleted() || client.driverName !== 'better-sqlite3') return null;
  const conn = (await client.acquireConnection()) as SqliteConnection;
  let cache = statements.get(conn);
  if (!cache) statements.set(conn, (cache = new Map()));
  const known = cache;
  return (sql, values) => {
    let st = known.get(sql);
    if (!st) {
      if (known.size >= MAX_PER_CONNECTION) known.clear();
      st = conn.prepare(sql);
      known.set(sql, st);
    }
    return Number(st.run([...values]).changes);
  };
}

/** Runs a write on the SQLite connection of `trx`; returns how many rows it changed. */
export async function runPrepared(trx: Knex.Transaction, sql: string, values: readonly (string | number | null)[]): Promise<number> {
  const write = await sqliteWriter(trx);
  if (!write) throw new PreparedStatementError('NOT_IN_TRANSACTION', 'a prepared statement runs only inside an open SQLite transaction');
  return write(sql, values);
}

const insertTexts = new Map<string, string>();

/**
 * `INSERT INTO table (columns) VALUES (?,…),(?,…)…` for `rowCount` rows. The
 * texts are kept (an ingest uses two sizes), so a chunk neither rebuilds tens
 * of kilobytes of placeholders nor makes the statement cache hash a new copy.
 */
export function multiRowInsertSql(table: string, columns: readonly string[], rowCount: number): string {
  const key = `${table}(${columns.join(',')})x${rowCount}`;
  let sql = insertTexts.get(key);
  if (sql === undefined) {
    const one = `(${columns.map(() => '?').join(',')})`;
    sql = `INSERT INTO ${table} (${columns.join(',')}) VALUES ${new Array<string>(rowCount).fill(one).join(',')}`;
    if (insertTexts.size >= MAX_PER_CONNECTION) insertTexts.clear();
    insertTexts.set(key, sql);
  }
  return sql;
}

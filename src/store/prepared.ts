/**
 * Prepared statements kept per SQLite connection, for the statements the hot
 * paths run again and again: the UPDATE recording one create's answer or one
 * settlement, and the intake's multi-row INSERTs (tens of thousands of
 * placeholders each). knex builds and better-sqlite3 prepares every
 * statement anew, which costs more than running it; these are prepared once
 * per connection and SQL text and run on the transaction's own connection,
 * only while the transaction is open. PostgreSQL keeps knex's path.
 * Also here: large reads as arrays of values (`selectArrays`), on either engine,
 * and the statements knex itself runs, kept per connection (`keepKnexStatements`).
 */
import type { Knex } from 'knex';
import type { Database } from './db.js';

interface SqliteStatement {
  run(...params: (readonly unknown[] | Readonly<Record<string, unknown>>)[]): { changes: number | bigint };
  raw(on: boolean): SqliteStatement;
  all(params: unknown[]): unknown[][];
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

/** better-sqlite3's own prepare, kept when `keepKnexStatements` wraps the connection's. */
const ownPrepare = new WeakMap<SqliteConnection, (sql: string) => SqliteStatement>();

/** Statements knex runs, kept per connection (most recently used last). */
const KNEX_STATEMENTS = 128;

/**
 * Makes a SQLite connection keep the statements knex runs on it, by SQL text: knex prepares every
 * statement anew, and better-sqlite3's prepare parses and plans the SQL each time (in the follow bench
 * 16,000 prepares, 15-20% of those statements' time). A statement kept is reset after each run, holds no
 * lock, and is recompiled by SQLite itself after a schema change; knex sets no mode on it (no raw, pluck or
 * safeIntegers). The statements of this module (`statementOf`, raw mode for `selectArrays`) come from the
 * connection's own prepare, so the two never share one. Called as the pool opens the connection.
 */
export function keepKnexStatements(connection: object): void {
  const conn = connection as SqliteConnection;
  const prepare = conn.prepare.bind(conn);
  ownPrepare.set(conn, prepare);
  const kept = new Map<string, SqliteStatement>();
  conn.prepare = (sql: string): SqliteStatement => {
    let st = kept.get(sql);
    if (st !== undefined) {
      kept.delete(sql);
    } else {
      st = prepare(sql);
      if (kept.size >= KNEX_STATEMENTS) kept.delete(kept.keys().next().value as string);
    }
    kept.set(sql, st);
    return st;
  };
}

/** knex's client as the store uses it: which driver, and its pool. */
export interface PooledClient {
  driverName?: string;
  acquireConnection(): Promise<unknown>;
  releaseConnection(conn: unknown): Promise<unknown>;
}

/** SQL texts kept per connection; the hot paths use a few dozen (one per patch shape, the insert sizes, the result reader). */
const MAX_PER_CONNECTION = 64;

const statements = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();

/**
 * Runs one write, given its SQL text, the values of its `?` in order and, when it has any, the values of
 * its named parameters (`@name`: a value every row of a multi-row statement shares is bound once, not once
 * a row); returns how many rows it changed.
 */
export type PreparedWrite = (sql: string, values: readonly unknown[], named?: Readonly<Record<string, unknown>>) => number;

/**
 * Writes on the SQLite connection of an open transaction, each statement
 * prepared once per connection; null on PostgreSQL or outside a transaction
 * (only a transaction hands out its own connection without taking one from
 * the pool), where the caller goes through knex.
 */
export async function sqliteWriter(db: Database | Knex.Transaction): Promise<PreparedWrite | null> {
  const client = db.client as PooledClient;
  if (!db.isTransaction || (db as Knex.Transaction).isCompleted() || client.driverName !== 'better-sqlite3') return null;
  const conn = (await client.acquireConnection()) as SqliteConnection;
  return (sql, values, named) => {
    const st = statementOf(conn, sql);
    // better-sqlite3 binds an array's items to the `?` in order and a plain object's keys to the named parameters.
    return Number((named === undefined ? st.run(values) : st.run(values, named)).changes);
  };
}

/** The statement of `sql` on `conn`, prepared on first use. */
function statementOf(conn: SqliteConnection, sql: string): SqliteStatement {
  let known = statements.get(conn);
  if (!known) statements.set(conn, (known = new Map()));
  let st = known.get(sql);
  if (!st) {
    if (known.size >= MAX_PER_CONNECTION) known.clear();
    st = (ownPrepare.get(conn) ?? conn.prepare.bind(conn))(sql);
    known.set(sql, st);
  }
  return st;
}

/**
 * The rows of a SELECT as arrays of values, in the order selected. Row
 * objects cost better-sqlite3 about as much as the read itself (100k rows
 * of 17 columns: ~0.5 s as objects, ~0.25 s as arrays), so a reader of many
 * rows takes arrays: on SQLite from a statement prepared once per connection
 * in raw mode, on PostgreSQL from pg's array row mode. The query's bindings
 * must be plain strings and numbers (knex's conversions are bypassed on SQLite).
 */
export async function selectArrays(db: Database | Knex.Transaction, query: Knex.QueryBuilder): Promise<unknown[][]> {
  const client = db.client as PooledClient;
  if (client.driverName !== 'better-sqlite3') return (await query.options({ rowMode: 'array' })) as unknown[][];
  const { sql, bindings } = query.toSQL().toNative();
  // From the pool (or the transaction's own connection) for this one statement, as knex would.
  const conn = (await client.acquireConnection()) as SqliteConnection;
  try {
    return statementOf(conn, sql)
      .raw(true)
      .all([...bindings]);
  } finally {
    await client.releaseConnection(conn);
  }
}

const insertTexts = new Map<string, string>();

/**
 * `INSERT INTO table (columns) VALUES (?,…),(?,…)…` for `rowCount` rows,
 * followed by `tail` (an ON CONFLICT clause) when given. A column in
 * `sameInEveryRow` takes the SQL given there in every row instead of a `?`:
 * a named parameter (`@name`, bound once for the whole statement; SQLite
 * only) or NULL. The texts are kept (an ingest uses a few), so a chunk
 * neither rebuilds tens of kilobytes of placeholders nor makes the
 * statement cache hash a new copy.
 */
export function multiRowInsertSql(
  table: string,
  columns: readonly string[],
  rowCount: number,
  tail = '',
  sameInEveryRow: Readonly<Record<string, string>> = {},
): string {
  const key = `${table}(${columns.map((c) => (sameInEveryRow[c] ? `${c}=${sameInEveryRow[c]}` : c)).join(',')})x${rowCount}${tail}`;
  let sql = insertTexts.get(key);
  if (sql === undefined) {
    const one = `(${columns.map((c) => sameInEveryRow[c] ?? '?').join(',')})`;
    sql = `INSERT INTO ${table} (${columns.join(',')}) VALUES ${new Array<string>(rowCount).fill(one).join(',')}${tail ? ` ${tail}` : ''}`;
    if (insertTexts.size >= MAX_PER_CONNECTION) insertTexts.clear();
    insertTexts.set(key, sql);
  }
  return sql;
}

const updateTexts = new Map<string, string>();

/**
 * `UPDATE table SET "column" = ?, … WHERE id = ? AND state = ?` for a guarded update of one row, kept per
 * list of columns as the INSERT texts are: a create's answer or a settlement runs one per row, and a text
 * built anew each time also had the statement cache hash it anew.
 */
export function singleRowUpdateSql(table: string, columns: readonly string[]): string {
  const key = `${table}(${columns.join(',')})`;
  let sql = updateTexts.get(key);
  if (sql === undefined) {
    sql = `UPDATE ${table} SET ${columns.map((c) => `"${c}" = ?`).join(', ')} WHERE id = ? AND state = ?`;
    if (updateTexts.size >= MAX_PER_CONNECTION) updateTexts.clear();
    updateTexts.set(key, sql);
  }
  return sql;
}

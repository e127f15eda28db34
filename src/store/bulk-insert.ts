/**
 * Multi-row INSERTs as prepared statements on SQLite. knex prepares every
 * statement anew and rewrites its bindings; for the intake's inserts (tens
 * of thousands of placeholders per statement, ~100 statements per million
 * rows) that is a measurable share of the work. Inside a knex transaction on
 * better-sqlite3 the statement is prepared once per connection and row count
 * and run directly on the transaction's own connection; anything else
 * (PostgreSQL, no transaction) returns null and the caller goes through knex.
 */
import type { Knex } from 'knex';
import type { Database } from './db.js';

interface SqliteStatement {
  run(params: unknown[]): unknown;
}

interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
}

/** Statements kept per connection; an ingest uses two sizes (full pieces and the chunk's tail). */
const MAX_CACHED = 8;
const cache = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();

/** A bulk inserter on the transaction's SQLite connection, or null when knex must do it. */
export async function sqliteBulkInserter(
  db: Database | Knex.Transaction,
): Promise<((table: string, columns: readonly string[], rowCount: number, values: unknown[]) => void) | null> {
  const client = db.client as { driverName?: string; acquireConnection(): Promise<unknown> };
  // Only a transaction hands out its own connection without taking one from the pool.
  if (!db.isTransaction || client.driverName !== 'better-sqlite3') return null;
  const conn = (await client.acquireConnection()) as SqliteConnection;
  let statements = cache.get(conn);
  if (!statements) {
    statements = new Map();
    cache.set(conn, statements);
  }
  const known = statements;
  return (table, columns, rowCount, values) => {
    const key = `${table}(${columns.join(',')})x${rowCount}`;
    let statement = known.get(key);
    if (!statement) {
      if (known.size >= MAX_CACHED) known.clear();
      const one = `(${columns.map(() => '?').join(',')})`;
      statement = conn.prepare(`INSERT INTO ${table} (${columns.join(',')}) VALUES ${new Array<string>(rowCount).fill(one).join(',')}`);
      known.set(key, statement);
    }
    statement.run(values);
  };
}

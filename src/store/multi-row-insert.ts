/**
 * Multi-row INSERT … VALUES statements through knex.raw. knex's own insert of
 * several rows compiles on SQLite to SELECT … UNION ALL, which fails above
 * 500 rows; these statements hold as many rows as SQLite's variable limit
 * allows, and a statement per chunk keeps each under it.
 */
import type { Knex } from 'knex';
import type { Database } from './db.js';

/** SQLite's limit on the values one statement binds (since 3.32; PostgreSQL allows more). */
export const MAX_BOUND_VALUES = 32_766;

/**
 * Inserts `rows` (each the values of `columns`, in order) into `table`, `tail` (an ON CONFLICT clause)
 * after each statement; returns how many rows the statements inserted.
 */
export async function insertValueRows(
  db: Database | Knex.Transaction,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly Knex.Value[])[],
  tail = '',
): Promise<number> {
  const perStatement = Math.floor(MAX_BOUND_VALUES / columns.length);
  const one = `(${columns.map(() => '?').join(',')})`;
  let inserted = 0;
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    const sql = `INSERT INTO ${table} (${columns.join(',')}) VALUES ${new Array<string>(chunk.length).fill(one).join(',')} ${tail}`;
    const result = (await db.raw(sql, chunk.flat())) as { rowCount?: number; changes?: number };
    inserted += Number(result.rowCount ?? result.changes);
  }
  return inserted;
}

/**
 * Multi-row INSERT … VALUES statements through knex.raw: knex's own multi-row insert compiles on SQLite to
 * SELECT … UNION ALL, which fails above 500 rows. A statement per chunk stays under the variable limit.
 */
import type { Knex } from 'knex';
import type { Database } from './db.js';

/** SQLite's limit on the values one statement binds (since 3.32; PostgreSQL allows more). */
export const MAX_BOUND_VALUES = 32_766;

/**
 * Inserts rows into `table`: `values` holds each row's values of `columns` in order, row after row. `tail`
 * (an ON CONFLICT clause) ends each statement. Returns how many rows the statements inserted.
 */
export async function insertValueRows(
  db: Database | Knex.Transaction,
  table: string,
  columns: readonly string[],
  values: readonly Knex.Value[],
  tail = '',
): Promise<number> {
  const perStatement = Math.floor(MAX_BOUND_VALUES / columns.length) * columns.length;
  const one = `(${columns.map(() => '?').join(',')})`;
  let inserted = 0;
  for (let i = 0; i < values.length; i += perStatement) {
    const part = values.slice(i, i + perStatement);
    const rows = new Array<string>(part.length / columns.length).fill(one).join(',');
    const result = (await db.raw(`INSERT INTO ${table} (${columns.join(',')}) VALUES ${rows} ${tail}`, part)) as {
      rowCount?: number;
      changes?: number;
    };
    inserted += Number(result.rowCount ?? result.changes);
  }
  return inserted;
}

/**
 * Many rows in one INSERT through knex.raw. On SQLite the rows go as one JSON parameter read by jsonb_each:
 * the statement's text stays short whatever the row count, so preparing and binding it costs next to
 * nothing. jsonb_each rather than json_each: each row comes out in SQLite's binary JSON, which `->>` reads
 * as it is, where a row as JSON text is written out again and parsed again for every column taken from it.
 * PostgreSQL takes them as multi-row VALUES, a statement per chunk under the bound-value limit.
 */
import type { Knex } from 'knex';
import { isPostgres, type Database } from './db.js';

/** SQLite's limit on the values one statement binds (since 3.32; PostgreSQL allows more). */
export const MAX_BOUND_VALUES = 32_766;

/** A value of an inserted row: text or a number (JSON carries exactly these to SQLite). */
export type InsertedValue = string | number | null;

/**
 * Inserts `rows` into `table`, each row's values in `columns` order. `tail` (an ON CONFLICT clause) ends each
 * statement. Returns how many rows the statements inserted.
 */
export async function insertValueRows(
  db: Database | Knex.Transaction,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly InsertedValue[])[],
  tail = '',
): Promise<number> {
  if (rows.length === 0) return 0;
  const into = `INSERT INTO ${table} (${columns.join(',')})`;
  if (!isPostgres(db)) {
    // `WHERE true` keeps SQLite from reading an upsert's ON as a join's.
    const picks = columns.map((_, i) => `value->>${i}`).join(',');
    return changesOf(await db.raw(`${into} SELECT ${picks} FROM jsonb_each(?) WHERE true ${tail}`, [JSON.stringify(rows)]));
  }
  const perStatement = Math.floor(MAX_BOUND_VALUES / columns.length);
  const one = `(${columns.map(() => '?').join(',')})`;
  let inserted = 0;
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    inserted += changesOf(await db.raw(`${into} VALUES ${new Array<string>(part.length).fill(one).join(',')} ${tail}`, part.flat()));
  }
  return inserted;
}

function changesOf(result: unknown): number {
  const r = result as { rowCount?: number; changes?: number };
  return Number(r.rowCount ?? r.changes);
}

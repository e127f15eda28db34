/**
 * Multi-row guarded UPDATEs through knex.raw: rows picked by id, each with its own values of the same columns,
 * set by one statement (SQLite) or one per chunk (PostgreSQL) rather than one statement each. Like a single
 * guarded UPDATE, a row is set only while its guard still holds (a column's expected value, and columns still
 * NULL or still holding the row's own value), and the statement returns the ids it set: a row another actor
 * moved meanwhile is skipped, and the caller knows which.
 *
 * SQLite takes the rows as one JSON parameter read by jsonb_each, as inserts do (./multi-row-insert.ts): the
 * statement stays short, so preparing and binding it costs next to nothing. PostgreSQL takes
 * `WITH v(id, …) AS (VALUES …) UPDATE … FROM v`; it types VALUES parameters as text, which a bigint column
 * does not take: a column holding numbers is cast in the first row, which types the whole column (as in a
 * UNION), and a column null in every row is set to NULL outright, there being no value to type it by.
 */
import type { Knex } from 'knex';
import { isPostgres, type Database } from './db.js';
import { MAX_BOUND_VALUES, type InsertedValue } from './multi-row-insert.js';

/** Rows a PostgreSQL statement sets at most (fewer when the columns are so many that the bound values would pass the limit). */
const ROWS_PER_STATEMENT = 500;

type Kind = 'number' | 'text' | 'null';

/** Whether column `c` of the rows holds numbers, other values (text), or only nulls. */
function kindOf(rows: readonly (readonly InsertedValue[])[], c: number): Kind {
  let kind: Kind = 'null';
  for (const row of rows) {
    const v = row[1 + c];
    if (typeof v === 'number') return 'number';
    if (v !== null && v !== undefined) kind = 'text';
  }
  return kind;
}

/**
 * What a row must still hold to be set: `column` equal to `value`, each of `nulls` NULL, and each of `matched`
 * equal to the row's own value (not null), given in its row after its values of the columns set.
 */
export interface RowGuard {
  column: string;
  value: InsertedValue;
  nulls?: readonly string[];
  matched?: readonly string[];
}

/** The name a row's own value of a `matched` column goes by in the statement (the column may be set too). */
const heldName = (column: string): string => `held_${column}`;

/** The conditions of `guard` beyond the id, the one bound value (`guard.value`) first. */
function guardSql(table: string, guard: RowGuard): string {
  return [
    `${table}.${guard.column} = ?`,
    ...(guard.nulls ?? []).map((name) => `${table}.${name} IS NULL`),
    ...(guard.matched ?? []).map((name) => `${table}.${name} = v.${heldName(name)}`),
  ].join(' AND ');
}

/**
 * Sets `columns` of the rows of `table` that `rows` names, where `guard` still holds: each of `rows` holds a
 * row's id, then its values of `columns` in order, then those of `guard.matched` (each id once). Returns the
 * ids of the rows set.
 */
export async function updateValueRows(
  db: Database | Knex.Transaction,
  table: string,
  columns: readonly string[],
  rows: readonly (readonly InsertedValue[])[],
  guard: RowGuard,
): Promise<number[]> {
  if (rows.length === 0) return [];
  const matched = guard.matched ?? [];
  const names = [...columns, ...matched.map(heldName)];
  if (!isPostgres(db)) {
    const picks = ['id', ...names].map((name, i) => `value->>${i} AS ${name}`).join(',');
    const set = columns.map((name) => `${name} = v.${name}`).join(', ');
    const result = (await db.raw(
      `WITH v AS (SELECT ${picks} FROM jsonb_each(?)) ` +
        `UPDATE ${table} SET ${set} FROM v WHERE ${table}.id = v.id AND ${guardSql(table, guard)} RETURNING ${table}.id`,
      [JSON.stringify(rows), guard.value],
    )) as { id: number }[];
    return result.map((r) => Number(r.id));
  }
  const perStatement = Math.min(ROWS_PER_STATEMENT, Math.floor((MAX_BOUND_VALUES - 1) / (names.length + 1)));
  const moved: number[] = [];
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    const kinds = names.map((_, c) => kindOf(part, c));
    // The columns given a value per row; the others are set to null in every row (a matched one is always given).
    const listed = names.flatMap((_, c) => (kinds[c] === 'null' && c < columns.length ? [] : [c]));
    const bound: InsertedValue[] = [];
    for (const row of part) {
      bound.push(row[0] as InsertedValue);
      for (const c of listed) bound.push(row[1 + c] as InsertedValue);
    }
    bound.push(guard.value);
    const first = ['CAST(? AS bigint)', ...listed.map((c) => (kinds[c] === 'number' ? 'CAST(? AS bigint)' : '?'))].join(',');
    const other = `,(${new Array<string>(listed.length + 1).fill('?').join(',')})`;
    const given = ['id', ...listed.map((c) => names[c])].join(',');
    const set = columns.map((name, c) => `${name} = ${kinds[c] === 'null' ? 'NULL' : `v.${name}`}`).join(', ');
    const result = (await db.raw(
      `WITH v(${given}) AS (VALUES (${first})${other.repeat(part.length - 1)}) ` +
        `UPDATE ${table} SET ${set} FROM v WHERE ${table}.id = v.id AND ${guardSql(table, guard)} RETURNING ${table}.id`,
      bound,
    )) as { rows: { id: number }[] };
    for (const r of result.rows) moved.push(Number(r.id));
  }
  return moved;
}

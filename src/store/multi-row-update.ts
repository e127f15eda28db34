/**
 * Multi-row guarded UPDATEs through knex.raw: rows picked by id, each with its own values of the same columns,
 * set by one statement per chunk rather than one statement each (every statement costs knex's building and the
 * driver's preparing, whatever its size). Like a single guarded UPDATE, a row is set only while its guard
 * column still holds the value expected, and the statement returns the ids it set: a row another actor moved
 * meanwhile is skipped, and the caller knows which.
 *
 * `WITH v(id, …) AS (VALUES …) UPDATE … FROM v` runs on SQLite (3.33 and later) and PostgreSQL alike. PostgreSQL
 * types VALUES parameters as text, which a bigint column does not take: a column holding numbers is cast in
 * the first row, which types the whole column (as in a UNION), and a column null in every row is set to NULL
 * outright, there being no value to type it by.
 */
import type { Knex } from 'knex';
import type { Database } from './db.js';
import { MAX_BOUND_VALUES } from './multi-row-insert.js';

/** Rows a statement sets at most (fewer when the columns are so many that the bound values would pass the limit). */
const ROWS_PER_STATEMENT = 500;

type Kind = 'number' | 'text' | 'null';

/** Whether column `c` of the rows holds numbers, other values (text), or only nulls. */
function kindOf(rows: readonly Knex.Value[], width: number, c: number): Kind {
  let kind: Kind = 'null';
  for (let i = 1 + c; i < rows.length; i += width) {
    const v = rows[i];
    if (typeof v === 'number' || typeof v === 'bigint') return 'number';
    if (v !== null && v !== undefined) kind = 'text';
  }
  return kind;
}

/**
 * Sets `columns` of the rows of `table` that `values` names, where `guard.column` still equals `guard.value`:
 * `values` holds each row's id and then its values of `columns` in order, row after row (each id once).
 * Returns the ids of the rows set.
 */
export async function updateValueRows(
  db: Database | Knex.Transaction,
  table: string,
  columns: readonly string[],
  values: readonly Knex.Value[],
  guard: { column: string; value: Knex.Value },
): Promise<number[]> {
  const width = columns.length + 1;
  const perStatement = Math.min(ROWS_PER_STATEMENT, Math.floor((MAX_BOUND_VALUES - 1) / width)) * width;
  const moved: number[] = [];
  for (let i = 0; i < values.length; i += perStatement) {
    const part = values.slice(i, i + perStatement);
    const kinds = columns.map((_, c) => kindOf(part, width, c));
    // The columns given a value per row; the others are null in every row.
    const listed = columns.flatMap((_, c) => (kinds[c] === 'null' ? [] : [c]));
    const bound: Knex.Value[] = [];
    for (let r = 0; r < part.length; r += width) {
      bound.push(part[r] as Knex.Value);
      for (const c of listed) bound.push(part[r + 1 + c] as Knex.Value);
    }
    bound.push(guard.value);
    const first = ['CAST(? AS bigint)', ...listed.map((c) => (kinds[c] === 'number' ? 'CAST(? AS bigint)' : '?'))].join(',');
    const other = `,(${new Array<string>(listed.length + 1).fill('?').join(',')})`;
    const names = ['id', ...listed.map((c) => columns[c])].join(',');
    const set = columns.map((name, c) => `${name} = ${kinds[c] === 'null' ? 'NULL' : `v.${name}`}`).join(', ');
    const result = (await db.raw(
      `WITH v(${names}) AS (VALUES (${first})${other.repeat(part.length / width - 1)}) ` +
        `UPDATE ${table} SET ${set} FROM v WHERE ${table}.id = v.id AND ${table}.${guard.column} = ? RETURNING ${table}.id`,
      bound,
    )) as { id: number }[] | { rows: { id: number }[] };
    for (const r of Array.isArray(result) ? result : result.rows) moved.push(Number(r.id));
  }
  return moved;
}

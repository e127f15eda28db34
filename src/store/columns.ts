/**
 * Records in code use camelCase fields; tables use snake_case columns. One
 * map per table says which is which, and these two functions apply it.
 */

/** Columns of the fields set in `patch` (undefined fields are left out). */
export function toColumnValues<T>(columns: Readonly<Record<keyof T, string>>, patch: Partial<T>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in patch) {
    const v = patch[k];
    if (v !== undefined) out[columns[k]] = v;
  }
  return out;
}

/** Each map's [field, column] pairs, listed once: a claim or poll reads hundreds of rows a second. */
const pairsOf = new WeakMap<object, readonly (readonly [string, string])[]>();

/** The record of a table row (absent columns read as null). */
export function fromColumnValues<T>(columns: Readonly<Record<keyof T, string>>, row: Record<string, unknown>): T {
  let pairs = pairsOf.get(columns);
  if (!pairs) pairsOf.set(columns, (pairs = Object.entries(columns) as [string, string][]));
  const out: Record<string, unknown> = {};
  for (const [k, col] of pairs) out[k] = row[col] ?? null;
  return out as T;
}

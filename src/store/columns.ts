/** Records use camelCase fields, tables snake_case columns: one map per table, applied by these two functions. */

/** Columns of the fields set in `patch` (undefined fields are left out). */
export function toColumnValues<T>(columns: Readonly<Record<keyof T, string>>, patch: Partial<T>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k in patch) {
    const v = patch[k];
    if (v !== undefined) out[columns[k]] = v;
  }
  return out;
}

const pairsOf = new WeakMap<object, readonly (readonly [string, string])[]>();

/** The record of a table row (absent columns read as null). */
export function fromColumnValues<T>(columns: Readonly<Record<keyof T, string>>, row: Record<string, unknown>): T {
  let pairs = pairsOf.get(columns);
  if (!pairs) pairsOf.set(columns, (pairs = Object.entries(columns) as [string, string][]));
  const out: Record<string, unknown> = {};
  for (const [k, col] of pairs) out[k] = row[col] ?? null;
  return out as T;
}

/**
 * Records in code use camelCase fields; tables use snake_case columns. One
 * map per table says which is which, and these two functions apply it.
 */

/** Columns of the fields set in `patch` (undefined fields are left out). */
export function toColumnValues<T>(columns: Readonly<Record<keyof T, string>>, patch: Partial<T>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) out[columns[k as keyof T]] = v;
  return out;
}

/** The record of a table row (absent columns read as null). */
export function fromColumnValues<T>(columns: Readonly<Record<keyof T, string>>, row: Record<string, unknown>): T {
  const out: Record<string, unknown> = {};
  for (const [k, col] of Object.entries(columns)) out[k] = row[col as string] ?? null;
  return out as T;
}

/** A file's validation errors: every error of every row and of the file, with its line, column and what to do. */
import type { Database } from './db.js';

export interface BatchErrorRecord {
  line: number | null;
  column: string | null;
  field: string | null;
  code: string;
  message: string;
}

export async function insertBatchErrors(db: Database, batchId: string, errors: BatchErrorRecord[]): Promise<void> {
  if (errors.length === 0) return;
  const rows = errors.map((e) => ({
    batch_id: batchId,
    line: e.line,
    column_name: e.column,
    field: e.field,
    code: e.code,
    message: e.message,
  }));
  // 6 columns per row: stay far below SQLite's variable limit.
  for (let i = 0; i < rows.length; i += 500) await db('batch_errors').insert(rows.slice(i, i + 500));
}

export async function listBatchErrors(db: Database, batchId: string): Promise<BatchErrorRecord[]> {
  const rows = (await db('batch_errors')
    .where({ batch_id: batchId })
    .orderBy([{ column: 'line' }, { column: 'id' }])) as Record<string, unknown>[];
  return rows.map((r) => ({
    line: (r.line as number | null) ?? null,
    column: (r.column_name as string | null) ?? null,
    field: (r.field as string | null) ?? null,
    code: r.code as string,
    message: r.message as string,
  }));
}

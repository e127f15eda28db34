/** A file's validation errors: every error of every row and of the file, with its line, column and what to do. */
import { writeTransaction, type Database } from './db.js';
import { insertValueRows } from './multi-row-insert.js';
import type { ReaderFence } from './batches.js';

const ERROR_COLUMNS = ['batch_id', 'file', 'line', 'column_name', 'column_index', 'field', 'code', 'message'];

export interface BatchErrorRecord {
  /** The file the error is in when that is not the batch's own (its sidecar `<name>.ctl`), or the batch's; null: the batch's. */
  file?: string | null;
  line: number | null;
  /** The header as written. */
  column: string | null;
  /** The column's position (0 = column A), for its letter; null when no column applies or it is not known. */
  columnIndex?: number | null;
  field: string | null;
  code: string;
  message: string;
}

/** Stores the errors; with `fence`, only while the batch is still the caller's to read (see clearBatchContents). */
export async function insertBatchErrors(db: Database, batchId: string, errors: BatchErrorRecord[], fence?: ReaderFence): Promise<void> {
  if (fence) {
    await writeTransaction(db, async (trx) => {
      await fence(trx);
      await insertBatchErrors(trx, batchId, errors);
    });
    return;
  }
  // A file sent again can have an error on every row: one multi-row statement, not one per few hundred rows.
  const rows = errors.map((e) => [batchId, e.file ?? null, e.line, e.column, e.columnIndex ?? null, e.field, e.code, e.message]);
  await insertValueRows(db, 'batch_errors', ERROR_COLUMNS, rows);
}

export async function listBatchErrors(db: Database, batchId: string): Promise<BatchErrorRecord[]> {
  const rows = (await db('batch_errors')
    .where({ batch_id: batchId })
    .orderBy([{ column: 'line' }, { column: 'id' }])) as Record<string, unknown>[];
  return rows.map((r) => ({
    file: (r.file as string | null) ?? null,
    line: (r.line as number | null) ?? null,
    column: (r.column_name as string | null) ?? null,
    columnIndex: r.column_index === null || r.column_index === undefined ? null : Number(r.column_index),
    field: (r.field as string | null) ?? null,
    code: r.code as string,
    message: r.message as string,
  }));
}

/** A file's validation errors: every error of every row and of the file, with its line, column and what to do. */
import { writeTransaction, type Database } from './db.js';
import { insertValueRows } from './multi-row-insert.js';
import type { ReaderFence } from './batches.js';

const ERROR_COLUMNS = ['batch_id', 'line', 'column_name', 'field', 'code', 'message'];

export interface BatchErrorRecord {
  line: number | null;
  column: string | null;
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
  const rows = errors.map((e) => [batchId, e.line, e.column, e.field, e.code, e.message]);
  await insertValueRows(db, 'batch_errors', ERROR_COLUMNS, rows);
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

/**
 * Retry rows checked against the rows they retry (read through the caller's database lookup): an account
 * that lost its original's leading zeros in a spreadsheet would pay another account, so the row is refused.
 */
import { paddingsOf, type StoredOriginal } from '../../domain/leading-zeros.js';
import { decodeRequestValues } from '../../domain/request-values.js';
import { retriedReferences } from '../../domain/retry-reference.js';
import { FIELD_PATHS, type FieldPath } from '../rules/fields.js';
import { zerosLostProblem, type RetriedOriginal } from '../rules/damage.js';
import type { RowError } from '../rules/row-error.js';
import type { ReadRow } from './parse-batch.js';

/** The stored rows holding each reference looked up (absent: none). */
export type OriginalsFound = ReadonlyMap<string, readonly StoredOriginal[]>;

/** The stored rows holding each of these references. */
export type RetryOriginals = (references: readonly string[]) => Promise<OriginalsFound>;

const fieldIndex = (field: FieldPath): number => FIELD_PATHS.indexOf(field);

/** Where a refusal is reported: the file, and the header as written of each field. */
export interface RetryRowContext {
  file: string;
  columns: Partial<Record<FieldPath, string>>;
  /** The column of each field (0 = A). */
  indexOf: Partial<Record<FieldPath, number>>;
}

/** The values a retry row is compared with: a valid row's request, an invalid one's cells as read (trimmed). */
function valuesOf(row: ReadRow): readonly string[] | null {
  if (row.requestValues !== null) return decodeRequestValues(row.requestValues);
  return row.invalidCells?.map((cell) => cell.trim()) ?? null;
}

function compared(reference: string, stored: StoredOriginal): RetriedOriginal {
  if ('removed' in stored) return { reference, removed: stored.removed };
  return { reference, paddings: paddingsOf('values' in stored ? { values: decodeRequestValues(stored.values) } : stored) };
}

/**
 * The rows with each damaged retry row replaced by its refusal (`refused` says which, with its error). A row
 * already invalid for something else is compared too: finance learns of every problem of it at once.
 */
export async function checkRetryRows(
  rows: ReadRow[],
  lookup: RetryOriginals,
  at: RetryRowContext,
  refused: (row: ReadRow, error: RowError) => ReadRow,
): Promise<ReadRow[]> {
  const retries = rows.filter((r) => retriedReferences(r.merchantReferenceId).length > 0);
  if (retries.length === 0) return rows;
  const originals = await lookup(retries.flatMap((r) => retriedReferences(r.merchantReferenceId)));
  if (originals.size === 0) return rows;
  return rows.map((row) => {
    const candidates = retriedReferences(row.merchantReferenceId).flatMap((reference) =>
      (originals.get(reference) ?? []).map((stored) => compared(reference, stored)),
    );
    if (candidates.length === 0) return row;
    const values = valuesOf(row);
    if (values === null) return row;
    const found = zerosLostProblem(values, candidates, fieldIndex);
    if (found === null) return row;
    const error: RowError = {
      file: at.file,
      line: row.line,
      column: at.columns[found.field] ?? null,
      columnIndex: at.indexOf[found.field] ?? null,
      field: found.field,
      ...found.problem,
    };
    return refused(row, error);
  });
}

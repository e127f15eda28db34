/**
 * Rows of a batch file in the form the intake stores them, a chunk at a
 * time, one array per column: what a reader hands over, from a worker
 * thread as a structured clone (columns cost a fraction of row objects,
 * whose keys would be sent again with every row). And the same rows' lines
 * of the acknowledgement, drafted as if the batch is accepted as read.
 */
import { encodeRequestValues } from '../../domain/request-values.js';
import { ackDraftText, reasonText, type AckRow, type BatchIdentity } from '../../report/index.js';
import type { ParsedBatchRow } from '../csv/index.js';
import type { RowError } from '../rules/index.js';
import type { AckDraftFile } from './ack-draft.js';

export interface ReadRows {
  /** Physical line where each row starts. */
  lines: number[];
  /** The reference as written (trimmed), '' if absent. */
  references: string[];
  /** The request's values as the store keeps them; null for a row that failed validation. */
  requests: (string | null)[];
  /** Money cells as written (trimmed), null when empty: the result files show what the sender wrote. */
  payoutCurrencies: (string | null)[];
  payoutAmounts: (string | null)[];
  deductionCurrencies: (string | null)[];
  /** An invalid row's first error code, and all its errors in one text. */
  reasonCodes: (string | null)[];
  reasons: (string | null)[];
}

/** Every error of a row with its code and column (the line has its own column in every output). */
export function reasonOf(errors: readonly RowError[]): string | null {
  return errors.length > 0 ? errors.map((e) => `${e.code}${e.column ? ` [${e.column}]` : ''}: ${e.message}`).join('; ') : null;
}

export function readRowsOf(rows: readonly ParsedBatchRow[]): ReadRows {
  const out: ReadRows = {
    lines: [],
    references: [],
    requests: [],
    payoutCurrencies: [],
    payoutAmounts: [],
    deductionCurrencies: [],
    reasonCodes: [],
    reasons: [],
  };
  for (const r of rows) {
    out.lines.push(r.line);
    out.references.push(r.merchantReferenceId);
    out.requests.push(r.requestValues ? encodeRequestValues(r.requestValues) : null);
    out.payoutCurrencies.push(r.written.payoutCurrency || null);
    out.payoutAmounts.push(r.written.payoutAmount || null);
    out.deductionCurrencies.push(r.written.deductionCurrency || null);
    out.reasonCodes.push(r.errors[0]?.code ?? null);
    out.reasons.push(reasonOf(r.errors));
  }
  return out;
}

/**
 * The acknowledgement's lines for these rows if the batch is accepted as
 * read: a valid row ACCEPTED, an invalid one REJECTED with its reason, as
 * the acknowledgement written from the stored rows says when the acceptance
 * changed none of them. Drafted from the columns that are stored, as that
 * acknowledgement is (src/daemon/outbox.ts): the same code and reason text.
 */
export function ackDraftOf(identity: Pick<BatchIdentity, 'batchId' | 'fileName'>, rows: ReadRows): string {
  return ackDraftText(
    identity,
    rows.lines.map((line, i): AckRow => {
      const merchantReferenceId = rows.references[i] as string;
      return (rows.requests[i] ?? null) !== null
        ? { line, merchantReferenceId, verdict: 'ACCEPTED', reason: null }
        : { line, merchantReferenceId, verdict: 'REJECTED', reason: reasonText(rows.reasonCodes[i] ?? null, rows.reasons[i] ?? null) };
    }),
  );
}

/**
 * What a reader does with each chunk it reads, in one thread or on its own:
 * the chunk's acknowledgement lines go to the part's draft, and the rows come
 * back in the form the intake stores them.
 */
export async function draftedRows(
  draft: AckDraftFile,
  identity: Pick<BatchIdentity, 'batchId' | 'fileName'>,
  rows: readonly ParsedBatchRow[],
): Promise<ReadRows> {
  const read = readRowsOf(rows);
  await draft.append(ackDraftOf(identity, read));
  return read;
}

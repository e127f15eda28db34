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

function emptyReadRows(): ReadRows {
  return {
    lines: [],
    references: [],
    requests: [],
    payoutCurrencies: [],
    payoutAmounts: [],
    deductionCurrencies: [],
    reasonCodes: [],
    reasons: [],
  };
}

/** The rows as columns: added to the end of `into`, or to new columns. */
export function readRowsOf(rows: readonly ParsedBatchRow[], into: ReadRows = emptyReadRows()): ReadRows {
  for (const r of rows) {
    into.lines.push(r.line);
    into.references.push(r.merchantReferenceId);
    into.requests.push(r.requestValues ? encodeRequestValues(r.requestValues) : null);
    into.payoutCurrencies.push(r.written.payoutCurrency || null);
    into.payoutAmounts.push(r.written.payoutAmount || null);
    into.deductionCurrencies.push(r.written.deductionCurrency || null);
    into.reasonCodes.push(r.errors[0]?.code ?? null);
    into.reasons.push(reasonOf(r.errors));
  }
  return into;
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
 * Rows parsed few at a time for a reader that hands them over many at a time.
 *
 * Why few: V8 tracks the objects made at each place in the code and, once
 * most of them outlive a young-generation collection, makes that place's
 * objects in the old generation from then on. Parsed rows gathered until a
 * chunk of a thousand was handed over outlived one, so they went to the old
 * generation, and each held its field strings alive until a full
 * collection: a reader promoted 1.1 KB a row and ran about 50 full
 * collections for half a million rows. Taken from the parser 64 at a time
 * and turned into columns at once, a parsed row dies young: 0.25-0.45 KB a
 * row promoted, 13-22 full collections, and 10-20% less CPU a reader (128
 * at a time was as bad as a thousand).
 */
export const PARSED_ROWS_AT_A_TIME = 64;

/**
 * The rows a reader has read and not yet handed over, as the columns the
 * intake stores (see PARSED_ROWS_AT_A_TIME), handed over `size` at a time
 * with their lines of the acknowledgement appended to the part's draft: the
 * draft holds exactly the rows handed over.
 */
export class ReadChunk {
  private rows = emptyReadRows();
  /** The rows to ask the parser for at a time. */
  readonly parsedAtATime: number;

  constructor(
    private readonly draft: AckDraftFile,
    private readonly identity: Pick<BatchIdentity, 'batchId' | 'fileName'>,
    private readonly size: number,
  ) {
    this.parsedAtATime = Math.min(PARSED_ROWS_AT_A_TIME, size);
  }

  /**
   * Adds rows as parsed (at most `parsedAtATime`); the chunk of `size` rows
   * once it is full, drafted, else null. The rows past it begin the next.
   */
  async add(parsed: readonly ParsedBatchRow[]): Promise<ReadRows | null> {
    const room = this.size - this.rows.lines.length;
    if (parsed.length < room) {
      readRowsOf(parsed, this.rows);
      return null;
    }
    readRowsOf(parsed.slice(0, room), this.rows);
    const full = await this.take();
    readRowsOf(parsed.slice(room), this.rows);
    return full;
  }

  /** The rows added since the last full chunk, drafted (a part read to its end); null when there are none. */
  async rest(): Promise<ReadRows | null> {
    return this.rows.lines.length > 0 ? this.take() : null;
  }

  private async take(): Promise<ReadRows> {
    const rows = this.rows;
    this.rows = emptyReadRows();
    await this.draft.append(ackDraftOf(this.identity, rows));
    return rows;
  }
}

/**
 * Rows of a batch file in the form the intake stores them, a chunk at a
 * time, one array per column: what a reader hands over, from a worker
 * thread as a structured clone (columns cost a fraction of row objects,
 * whose keys would be sent again with every row). And the same rows' lines
 * of the acknowledgement, drafted as if the batch is accepted as read.
 */
import { encodeRequestValues, REQUEST_VALUE_INDEX } from '../../domain/request-values.js';
import { AckDraftLines, reasonText, type BatchIdentity } from '../../report/index.js';
import type { ParsedBatchRow } from '../csv/index.js';
import { readBatchPart, type BatchFilePart, type PartReadOptions, type PartSummary } from '../csv/parse-batch.js';
import type { RowError } from '../rules/index.js';
import type { AckDraftFile } from './ack-draft.js';

export interface ReadRows {
  /** Physical line where each row starts. */
  lines: number[];
  /** The reference as written (trimmed), '' if absent. */
  references: string[];
  /** The request's values as the store keeps them; null for a row that failed validation. */
  requests: (string | null)[];
  /**
   * Money cells as written (trimmed) where that is not the request's value (an amount written 1001.50,
   * sent as 1001.5), else null (empty, or as the request has it): the result files show what the sender
   * wrote, reading the request's value where the row keeps none (src/store/request-fields.ts).
   */
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

/** The rows from `at` on, taken out of `rows`. */
function rowsFrom(rows: ReadRows, at: number): ReadRows {
  return {
    lines: rows.lines.splice(at),
    references: rows.references.splice(at),
    requests: rows.requests.splice(at),
    payoutCurrencies: rows.payoutCurrencies.splice(at),
    payoutAmounts: rows.payoutAmounts.splice(at),
    deductionCurrencies: rows.deductionCurrencies.splice(at),
    reasonCodes: rows.reasonCodes.splice(at),
    reasons: rows.reasons.splice(at),
  };
}

const PAYOUT_CURRENCY = REQUEST_VALUE_INDEX.payoutCurrency;
const PAYOUT_AMOUNT = REQUEST_VALUE_INDEX.payoutAmount;
const DEDUCTION_CURRENCY = REQUEST_VALUE_INDEX.deductionCurrency;

/**
 * A money cell as the row keeps it: null when empty or the same text as the request's value at `at`.
 * Nearly every cell is, and a NULL is the one value SQLite binds without converting and copying a text:
 * storing alone took about a tenth less CPU, and the hand-over between threads carries three texts a row
 * fewer (docs/performance.md, item 62).
 */
function writtenUnlessAsRequested(written: string, values: readonly string[] | null, at: number): string | null {
  if (written === '') return null;
  return values !== null && values[at] === written ? null : written;
}

/** The rows as columns: added to the end of `into`, or to new columns. */
export function readRowsOf(rows: readonly ParsedBatchRow[], into: ReadRows = emptyReadRows()): ReadRows {
  for (const r of rows) {
    into.lines.push(r.line);
    into.references.push(r.merchantReferenceId);
    into.requests.push(r.requestValues ? encodeRequestValues(r.requestValues) : null);
    const values = r.requestValues;
    into.payoutCurrencies.push(writtenUnlessAsRequested(r.written.payoutCurrency, values, PAYOUT_CURRENCY));
    into.payoutAmounts.push(writtenUnlessAsRequested(r.written.payoutAmount, values, PAYOUT_AMOUNT));
    into.deductionCurrencies.push(writtenUnlessAsRequested(r.written.deductionCurrency, values, DEDUCTION_CURRENCY));
    into.reasonCodes.push(r.errors[0]?.code ?? null);
    into.reasons.push(reasonOf(r.errors));
  }
  return into;
}

/**
 * The acknowledgement's lines for these rows (from row `from` on) if the batch is accepted as
 * read: a valid row ACCEPTED, an invalid one REJECTED with its reason, as
 * the acknowledgement written from the stored rows says when the acceptance
 * changed none of them. Drafted from the columns that are stored, as that
 * acknowledgement is (src/daemon/outbox.ts): the same code and reason text.
 */
export function ackDraftOf(lines: AckDraftLines, rows: ReadRows, from = 0): string {
  let text = '';
  for (let i = from; i < rows.lines.length; i++) {
    const line = rows.lines[i] as number;
    const merchantReferenceId = rows.references[i] as string;
    text +=
      (rows.requests[i] ?? null) !== null
        ? lines.line(line, merchantReferenceId, 'ACCEPTED', null)
        : lines.line(line, merchantReferenceId, 'REJECTED', reasonText(rows.reasonCodes[i] ?? null, rows.reasons[i] ?? null));
  }
  return text;
}

/**
 * Rows parsed few at a time for a reader that hands them over many at a time.
 *
 * Why few: V8 watches the objects made at each place in the code, and when a
 * collection finds most of those made since the one before still alive (and
 * at least a hundred of them), it makes that place's objects in the old
 * generation from then on (allocation-site pretenuring). There each keeps
 * what it points to, a row's field strings, alive until a full collection.
 * A place that makes a hundred objects or more at once, all kept until the
 * last is done, is judged so whenever a collection falls inside the batch:
 * parsed rows gathered a thousand to a chunk, their acknowledgement lines
 * drafted a thousand at once, the parser's records of a 64 KiB read (about
 * 380). In a million-row read a reader then promoted 1.1 KB a row instead of
 * 0.25 and ran about 50 full collections instead of 14, in one run in three
 * or more, at random. So rows come from the parser 64 at a time and are
 * turned into columns and drafted at once, and the file is read 8 KiB at a
 * time (READ_CHUNK_BYTES, src/ingest/csv/parse-batch.ts): under a hundred
 * records for rows of 80 bytes or more, which a payout row's twelve fields
 * rarely are not. (128 rows at a time was as bad as a thousand.)
 */
export const PARSED_ROWS_AT_A_TIME = 64;

/**
 * The rows a reader has read and not yet handed over, as the columns the
 * intake stores (see PARSED_ROWS_AT_A_TIME), handed over `size` at a time.
 * Their lines of the acknowledgement go to the part's draft as they are
 * added, in the same few at a time: drafted a chunk at once, a thousand rows'
 * lines were just as likely to be judged long-lived. The draft is used only
 * once every row is handed over (a read stopped short is read again, or
 * refused as a file).
 */
class ReadChunk {
  private rows = emptyReadRows();
  private readonly ackLines: AckDraftLines;
  /** The rows to ask the parser for at a time. */
  readonly parsedAtATime: number;

  constructor(
    private readonly draft: AckDraftFile,
    identity: Pick<BatchIdentity, 'batchId' | 'fileName'>,
    private readonly size: number,
  ) {
    this.ackLines = new AckDraftLines(identity);
    this.parsedAtATime = Math.min(PARSED_ROWS_AT_A_TIME, size);
  }

  /**
   * Adds rows as parsed (at most `parsedAtATime`) and drafts their lines;
   * the chunk of `size` rows once it is full, else null. The rows past it
   * begin the next.
   */
  async add(parsed: readonly ParsedBatchRow[]): Promise<ReadRows | null> {
    const from = this.rows.lines.length;
    readRowsOf(parsed, this.rows);
    await this.draft.append(ackDraftOf(this.ackLines, this.rows, from));
    if (this.rows.lines.length < this.size) return null;
    const full = this.rows;
    this.rows = rowsFrom(full, this.size);
    return full;
  }

  /** The rows added since the last full chunk (a part read to its end); null when there are none. */
  rest(): ReadRows | null {
    if (this.rows.lines.length === 0) return null;
    const rest = this.rows;
    this.rows = emptyReadRows();
    return rest;
  }
}

/**
 * Reads one part of a batch file (the whole file, or a reader thread's part)
 * and hands its rows to `handOver` as the columns the intake stores,
 * `chunkSize` rows at a time (see ReadChunk), drafting their lines of the
 * acknowledgement into `draft`. A part stopped short (a file error) hands
 * over nothing after its last full chunk, as the parser does.
 */
export async function readPartInChunks(
  path: string,
  displayName: string,
  part: BatchFilePart,
  opts: Omit<PartReadOptions, 'chunkSize' | 'onRows' | 'headerOnly'>,
  chunking: { draft: AckDraftFile; identity: Pick<BatchIdentity, 'batchId' | 'fileName'>; chunkSize: number },
  handOver: (rows: ReadRows) => Promise<void>,
): Promise<PartSummary> {
  const chunk = new ReadChunk(chunking.draft, chunking.identity, chunking.chunkSize);
  const summary = await readBatchPart(path, displayName, part, {
    ...opts,
    chunkSize: chunk.parsedAtATime,
    onRows: async (rows) => {
      const full = await chunk.add(rows);
      if (full) await handOver(full);
    },
  });
  const rest = summary.stopped ? null : chunk.rest();
  if (rest) await handOver(rest);
  return summary;
}

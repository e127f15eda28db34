/**
 * A batch file read on a thread of its own while the intake stores the rows already read. On one thread,
 * reading and validating (csv-parse, the rules) and storing (the database, on the intake's thread) take
 * turns; here they overlap. The thread runs parseBatchFile as it is (./read-worker.ts): only its rows, its
 * lookups of retried rows and its result cross, and a read never runs more than two chunks ahead of the store.
 * The rows cross a few hundred at a time and are gathered here into the chunks the store takes: a whole
 * chunk waiting on the reading thread would outlive its young generation's collections, each copying it
 * again, and the thread would spend much of its time collecting.
 */
import { Worker } from 'node:worker_threads';
import type { ValidationRules } from '../rules/options.js';
import { BatchReadError, type BatchParseResult, type ParseBatchOptions, type ReadRow } from './parse-batch.js';
import type { OriginalsFound, RetryOriginals } from './retry-rows.js';

/** A read row as the store takes it (what crosses from the reading thread). */
export type ReadRowValues = Pick<
  ReadRow,
  | 'batchId'
  | 'line'
  | 'merchantReferenceId'
  | 'state'
  | 'requestValues'
  | 'payoutCurrency'
  | 'payoutAmount'
  | 'deductionCurrency'
  | 'reasonCode'
  | 'reason'
>;

export interface ThreadReadOptions extends Omit<ParseBatchOptions, 'rules' | 'onRows'> {
  rules: ValidationRules;
  onRows: (rows: ReadRowValues[]) => Promise<void>;
}

/** What the reading thread is given (everything but the callbacks, which stay here). */
export interface ReaderData {
  path: string;
  displayName: string;
  /** As given, but `chunkSize`: the rows of one message (at most ROWS_PER_MESSAGE). */
  options: Omit<ThreadReadOptions, 'onRows' | 'retryOriginals' | 'signal'>;
  lookups: boolean;
  /** Rows handed over and not yet stored, at most (then one message more): CHUNKS_AHEAD chunks. */
  rowsAhead: number;
}

export type FromReader =
  | { kind: 'rows'; rows: ReadRowValues[] }
  | { kind: 'originals'; id: number; references: string[] }
  | { kind: 'done'; result: BatchParseResult }
  | { kind: 'failed'; error: { name: string; code?: string; message: string } };

export type ToReader = { kind: 'stored'; ok: boolean; rows: number } | { kind: 'originals'; id: number; originals: OriginalsFound | null };

/**
 * A reading that failed in reading the file (on the reading thread, or the thread itself ending: out of memory), not
 * in storing its rows here. `errorName` and `code` are those of the error the reader met; its message may quote the
 * file's cells.
 */
export class FileReadFailure extends Error {
  override readonly name = 'FileReadFailure';

  constructor(
    message: string,
    readonly errorName: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Chunks handed over and not yet stored, at most: the rows waiting between the threads stay bounded. */
export const CHUNKS_AHEAD = 2;

/** Rows one message from the reading thread carries, at most: the rows it holds die young. */
export const ROWS_PER_MESSAGE = 500;

/** Rows per `onRows` call when the caller does not say (parseBatchFile's default). */
const DEFAULT_CHUNK_ROWS = 500;

/**
 * The reading thread's heap: its garbage dies young, and V8 would size a thread's young generation for the
 * machine; a small one keeps the daemon's memory within its budget while a large file is read.
 */
const READER_LIMITS = { maxYoungGenerationSizeMb: 8 };

/** The thread's module, beside this one in the build; from the TypeScript sources (tests) the build's copy (`npm test` builds first). */
const READER_MODULE = import.meta.url.endsWith('.ts')
  ? new URL('../../../dist/ingest/csv/read-worker.js', import.meta.url)
  : new URL('./read-worker.js', import.meta.url);

/**
 * parseBatchFile on a thread of its own; `onRows` and `retryOriginals` run on this one, in order. `onRows` is
 * given `chunkSize` rows a call, as parseBatchFile gives them, whatever the rows of each message.
 */
export function readBatchFileOnThread(path: string, displayName: string, opts: ThreadReadOptions): Promise<BatchParseResult> {
  const { onRows, retryOriginals, signal, ...options } = opts;
  const chunkRows = Math.max(1, options.chunkSize ?? DEFAULT_CHUNK_ROWS);
  return new Promise<BatchParseResult>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const data: ReaderData = {
      path,
      displayName,
      options: { ...options, chunkSize: Math.min(chunkRows, ROWS_PER_MESSAGE) },
      lookups: retryOriginals !== undefined,
      rowsAhead: CHUNKS_AHEAD * chunkRows,
    };
    const reader = new Worker(READER_MODULE, { workerData: data, resourceLimits: READER_LIMITS });
    const tell = (m: ToReader): void => reader.postMessage(m);
    // The first failure of storing or looking up is the read's failure, whatever the reader makes of it.
    let failure: { error: unknown } | null = null;
    let storing = Promise.resolve();
    /** The rows of the chunk being gathered, in order. */
    let gathered: ReadRowValues[] = [];
    let settled = false;
    // Once the read failed or was stopped, no chunk is stored after the one being stored.
    let ended = false;
    // Settles once the chunks handed to the store are in, or (ended) the one being stored is.
    const settle = (done: () => void): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      void reader.terminate();
      void storing.then(done);
    };
    // A read that is done already (its thread then exits) is not ended by it: its last chunk is still stored.
    const end = (done: () => void): void => {
      if (settled) return;
      ended = true;
      settle(done);
    };
    const fail = (error: unknown): void => end(() => reject(failure ? failure.error : error));
    const onAbort = (): void => end(() => reject(signal?.reason));
    signal?.addEventListener('abort', onAbort, { once: true });
    const store = (rows: ReadRowValues[]): void => {
      storing = storing.then(async () => {
        if (failure || ended) return;
        try {
          await onRows(rows);
          tell({ kind: 'stored', ok: true, rows: rows.length });
        } catch (err) {
          failure = { error: err };
          tell({ kind: 'stored', ok: false, rows: rows.length });
        }
      });
    };

    reader.on('message', (m: FromReader) => {
      switch (m.kind) {
        case 'rows':
          if (settled) return;
          for (const row of m.rows) gathered.push(row);
          while (gathered.length >= chunkRows) {
            store(gathered.slice(0, chunkRows));
            gathered = gathered.slice(chunkRows);
          }
          return;
        case 'originals':
          (retryOriginals as RetryOriginals)(m.references).then(
            (originals) => tell({ kind: 'originals', id: m.id, originals }),
            (err: unknown) => {
              failure ??= { error: err };
              tell({ kind: 'originals', id: m.id, originals: null });
            },
          );
          return;
        case 'done':
          // The read is done once every row it handed over is stored: the last chunk gathered too.
          if (gathered.length > 0) store(gathered);
          gathered = [];
          settle(() => (failure ? reject(failure.error) : resolve(m.result)));
          return;
        case 'failed':
          // Marked as the file's reading failing: the daemon refuses a file whose reading fails the same way each time.
          fail(
            m.error.name === 'BatchReadError'
              ? new BatchReadError(m.error.code ?? 'BATCH_READ_FAILED', m.error.message)
              : new FileReadFailure(m.error.message, m.error.name, m.error.code),
          );
      }
    });
    reader.on('error', (err) => fail(new FileReadFailure(err.message, err.name, (err as NodeJS.ErrnoException).code)));
    reader.on('exit', (code) =>
      fail(new FileReadFailure(`the reading thread stopped before the end of the file (exit code ${code})`, 'Error')),
    );
  });
}

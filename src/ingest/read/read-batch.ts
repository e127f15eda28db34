/**
 * Reading a claimed batch file into the rows the intake stores, with the
 * acknowledgement drafted on the way: in the intake's own thread, or, for a
 * large file, in parts on worker threads (./worker.ts) while the intake's
 * thread stores what they read. Two cores then share what one did: reading
 * and validating on one side, SQLite on the other.
 *
 * Reading in parts gives the same rows, sums and errors as reading the file
 * whole, or nothing: whenever a part finds anything that concerns the file
 * as a whole (a file error, control lines before the last part, more rows
 * than allowed in all) or a reader thread fails, the caller is told to read
 * the file again in one part, which reports it exactly as ever. The rows the
 * parts handed over are then the caller's to discard.
 */
import { availableParallelism } from 'node:os';
import type { Worker } from 'node:worker_threads';
import {
  batchDelimiter,
  finishBatchParse,
  readBatchPart,
  WHOLE_FILE,
  type BatchFilePart,
  type BatchParseResult,
  type PartSummary,
} from '../csv/parse-batch.js';
import type { BatchFormatOptions } from '../csv/options.js';
import type { CompiledRules } from '../rules/compiled.js';
import type { ValidationRules } from '../rules/options.js';
import { AckDraftFile, ackDraftPaths, removeAckDrafts } from './ack-draft.js';
import { cutsOf } from './cuts.js';
import { readPartInChunks, type ReadRows } from './rows.js';
import { ReaderThreads } from './reader-threads.js';
import type { ReadWorkerData, ReadWorkerMessage, ToReadWorker } from './worker.js';

export interface BatchReadOptions {
  format: BatchFormatOptions;
  /** As configured (a reader thread compiles its own) and compiled (for this thread). */
  rules: ValidationRules;
  compiledRules: CompiledRules;
  /** The batch, for the acknowledgement's lines. */
  identity: { batchId: string; fileName: string };
  /** Where the acknowledgement is drafted while the file is read (the state directory's). */
  draftDir: string;
  /** Sidecar control file; null = none. */
  sidecarPath: string | null;
  /** Rows per chunk handed over. */
  chunkSize: number;
  /** Stops a read (shutdown): the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Takes each chunk; awaited before more is handed over. */
  onRows: (rows: ReadRows) => Promise<void>;
  /** Reader threads started ahead of the read (the daemon's); without them a read in parts starts its own. */
  readers?: ReaderThreads;
}

export interface BatchRead {
  parse: BatchParseResult;
  /** The acknowledgement as drafted while reading (files in line order): exact when the acceptance changes no row. */
  ackDrafts: string[];
}

/** Reads the whole file in this thread. */
export async function readBatchInThread(path: string, opts: BatchReadOptions): Promise<BatchRead> {
  const { format, identity } = opts;
  const delimiter = await batchDelimiter(path, identity.fileName, format);
  const ackDrafts = ackDraftPaths(opts.draftDir, identity.batchId, 1);
  const draft = await AckDraftFile.create(ackDrafts[0] as string);
  let summary: PartSummary;
  try {
    summary = await readPartInChunks(
      path,
      identity.fileName,
      WHOLE_FILE,
      { format, rules: opts.compiledRules, delimiter, signal: opts.signal },
      { draft, identity, chunkSize: opts.chunkSize },
      opts.onRows,
    );
  } finally {
    await draft.close();
  }
  const parse = await finishBatchParse(path, identity.fileName, delimiter, [summary], { format, sidecarPath: opts.sidecarPath });
  return { parse, ackDrafts };
}

/** How many reader threads, and from what size a file is read in parts (config `batch.read`). */
export interface PartsSettings {
  /** Reader threads, one per part; 'auto': two on a machine with two cores or more, else none. */
  workers: number | 'auto';
  minBytes: number;
}

/** Reader threads for a setting: 0 when files are read in one thread (one thread is no parts). */
export function readerThreads(workers: PartsSettings['workers']): number {
  const threads = workers === 'auto' ? (availableParallelism() >= 2 ? 2 : 0) : workers;
  return threads >= 2 ? threads : 0;
}

/**
 * Chunks a reader thread may send ahead of what the intake has taken: enough to keep it busy while a
 * transaction commits, few enough that the rows between the threads stay a small share of the heap.
 */
const CREDIT = 12;

/**
 * Reads the file of `size` bytes in parts on reader threads. Null when it is
 * not read in parts (smaller than `minBytes`, fewer than two threads, a
 * header with problems, no place to cut): read it in this thread. `again`:
 * the parts were read, but the file must be read again in one part, for the
 * reason given.
 */
export async function readBatchInParts(
  path: string,
  size: number,
  settings: PartsSettings,
  opts: BatchReadOptions,
): Promise<BatchRead | { again: string } | null> {
  const threads = readerThreads(settings.workers);
  if (threads === 0 || size < settings.minBytes) return null;
  const { format, identity } = opts;
  const delimiter = await batchDelimiter(path, identity.fileName, format);
  // The header, read as the first part will read it, for the parts after it.
  const head = await readBatchPart(path, identity.fileName, WHOLE_FILE, {
    format,
    rules: opts.compiledRules,
    delimiter,
    chunkSize: 1,
    headerOnly: true,
    signal: opts.signal,
    onRows: () => Promise.resolve(),
  });
  if (head.header === null || head.headerLine === null || head.fileErrors.length > 0) return null;
  const header = { header: head.header, line: head.headerLine };
  const cuts = await cutsOf(path, size, threads);
  if (cuts.length === 0) return null;
  const parts: BatchFilePart[] = [{ ...WHOLE_FILE, end: cuts[0]?.at ?? null }];
  cuts.forEach((cut, k) => parts.push({ start: cut.at, end: cuts[k + 1]?.at ?? null, lineOffset: cut.lineOffset, header }));
  const ackDrafts = ackDraftPaths(opts.draftDir, identity.batchId, parts.length);

  const summaries = await readParts(
    parts.map((part, k): ReadWorkerData => ({
      path,
      displayName: identity.fileName,
      part,
      delimiter,
      format,
      rules: opts.rules,
      chunkSize: opts.chunkSize,
      credit: CREDIT,
      identity,
      draftPath: ackDrafts[k] as string,
    })),
    opts,
  );
  // The summaries, or why the file must be read again in one part.
  const read = Array.isArray(summaries) ? (readAgainBecause(summaries, format) ?? summaries) : summaries.again;
  if (typeof read === 'string') {
    // The parts' drafts are given up with them (the read in one part drafts its own, under part 0's name only).
    await removeAckDrafts(ackDrafts);
    return { again: read };
  }
  const parse = await finishBatchParse(path, identity.fileName, delimiter, read, { format, sidecarPath: opts.sidecarPath });
  return { parse, ackDrafts };
}

/** Why parts read without a failure must still be read as one, or null. */
function readAgainBecause(summaries: readonly PartSummary[], format: BatchFormatOptions): string | null {
  if (summaries.some((s) => s.stopped || s.fileErrors.length > 0)) return 'a part has a problem of the whole file';
  if (summaries.slice(0, -1).some((s) => s.controlLines)) return 'control lines before the last part';
  const rows = summaries.reduce((n, s) => n + s.rowCount, 0);
  if (rows > format.maxRows) return `more than ${format.maxRows} rows`;
  return null;
}

/**
 * Runs one reader thread per part and hands their chunks to `onRows` one at
 * a time, in the order they come (each part's in its own order); a chunk's
 * credit goes back once `onRows` has taken it. Resolves with the summaries
 * in part order, or `again` when a thread failed. A failure of `onRows` (the
 * database) or the signal stops every thread and rejects. The threads come
 * from `opts.readers` (started ahead, when it has them) and are ended when
 * the read is over.
 */
async function readParts(work: ReadWorkerData[], opts: BatchReadOptions): Promise<PartSummary[] | { again: string }> {
  const readers = opts.readers ?? new ReaderThreads(0);
  const workers = readers.take(work.length);
  let ended = false;
  const stopAll = (): void => {
    if (ended) return;
    ended = true;
    for (const w of workers) readers.end(w);
  };
  let taking: Promise<void> = Promise.resolve();
  let takeFailed: { error: unknown } | null = null;
  const take = (worker: Worker, rows: ReadRows): void => {
    taking = taking
      .then(async () => {
        // Nothing more is stored once the read failed or was stopped.
        if (takeFailed !== null || opts.signal?.aborted) return;
        await opts.onRows(rows);
        worker.postMessage({ credit: 1 } satisfies ToReadWorker);
      })
      .catch((error: unknown) => {
        takeFailed ??= { error };
        stopAll();
      });
  };
  const finished = (worker: Worker, k: number): Promise<PartSummary> =>
    new Promise((resolve, reject) => {
      worker.on('message', (m: ReadWorkerMessage) => {
        if ('rows' in m) take(worker, m.rows);
        else resolve(m.done);
      });
      worker.on('error', reject);
      // After the summary this changes nothing; before it, the thread stopped short.
      worker.on('exit', (code) => reject(new Error(`reader thread ${k + 1} stopped before its part was read (exit code ${code})`)));
      worker.postMessage({ read: work[k] as ReadWorkerData } satisfies ToReadWorker);
    });
  const onAbort = (): void => stopAll();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const summaries = await Promise.all(workers.map(finished));
    await taking;
    if (takeFailed !== null) throw (takeFailed as { error: unknown }).error;
    return summaries;
  } catch (err) {
    stopAll();
    await taking;
    if (takeFailed !== null) throw (takeFailed as { error: unknown }).error;
    opts.signal?.throwIfAborted();
    return { again: `a reader thread failed: ${(err as Error).message ?? String(err)}` };
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    stopAll();
  }
}

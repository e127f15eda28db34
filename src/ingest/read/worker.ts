/**
 * A reader thread (started by ./reader-threads.ts, ahead of the read that
 * takes it): waits for the part of a batch file it is to read, reads it with
 * src/ingest/csv's readBatchPart, drafts the part's acknowledgement lines
 * into a file of its own, and hands its rows to the intake a chunk at a
 * time, never more chunks ahead than the intake has given it credit for (so
 * a million-row file does not pile up between the threads). Its last message
 * is what it found (the part's summary). It writes nothing else: storing,
 * logging and every decision stay with the intake's thread.
 */
import { parentPort } from 'node:worker_threads';
import type { BatchFilePart, PartSummary } from '../csv/parse-batch.js';
import type { Delimiter } from '../csv/delimiter.js';
import type { BatchFormatOptions } from '../csv/options.js';
import { compileRules } from '../rules/compiled.js';
import type { ValidationRules } from '../rules/options.js';
import { AckDraftFile } from './ack-draft.js';
import { readPartInChunks, type ReadRows } from './rows.js';

export interface ReadWorkerData {
  path: string;
  displayName: string;
  part: BatchFilePart;
  delimiter: Delimiter;
  format: BatchFormatOptions;
  rules: ValidationRules;
  chunkSize: number;
  /** Chunks it may send before the intake gives more credit. */
  credit: number;
  /** The batch, for the acknowledgement's lines. */
  identity: { batchId: string; fileName: string };
  draftPath: string;
}

/** From the reader: a chunk of rows, or (last) the part's summary. */
export type ReadWorkerMessage = { rows: ReadRows } | { done: PartSummary };

/** To the reader: the part to read (once), or chunks it may send on. */
export type ToReadWorker = { read: ReadWorkerData } | { credit: number };

const port = parentPort;
if (port === null) throw new Error('src/ingest/read/worker runs only as a worker thread');

let credit = 0;
let wake: (() => void) | null = null;
let given: (part: ReadWorkerData) => void = () => undefined;
const part = new Promise<ReadWorkerData>((resolve) => (given = resolve));
port.on('message', (m: ToReadWorker) => {
  if ('read' in m) {
    credit = m.read.credit;
    given(m.read);
    return;
  }
  credit += m.credit;
  wake?.();
  wake = null;
});

/** Sends a chunk once the intake has given credit for it. */
const handOver = async (rows: ReadRows): Promise<void> => {
  while (credit <= 0) await new Promise<void>((resolve) => (wake = resolve));
  credit--;
  port.postMessage({ rows } satisfies ReadWorkerMessage);
};

const data = await part;
const draft = await AckDraftFile.create(data.draftPath);
let summary: PartSummary;
try {
  summary = await readPartInChunks(
    data.path,
    data.displayName,
    data.part,
    { format: data.format, rules: compileRules(data.rules), delimiter: data.delimiter },
    { draft, identity: data.identity, chunkSize: data.chunkSize },
    handOver,
  );
} finally {
  await draft.close();
}
port.postMessage({ done: summary } satisfies ReadWorkerMessage);

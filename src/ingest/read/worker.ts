/**
 * A reader thread (started by ./reader-threads.ts): reads the parts of batch
 * files it is given, one at a time, with src/ingest/csv's readBatchPart,
 * drafts each part's acknowledgement lines into a file of its own, and hands
 * its rows to the intake a chunk at a time, never more chunks ahead than the
 * intake has given it credit for (so a million-row file does not pile up
 * between the threads). Its last message for a part is what it found (the
 * part's summary); then it waits for the next part. It writes nothing else:
 * storing, logging and every decision stay with the intake's thread.
 */
import { parentPort } from 'node:worker_threads';
import type { BatchFilePart, PartSummary } from '../csv/parse-batch.js';
import type { Delimiter } from '../csv/delimiter.js';
import type { BatchFormatOptions } from '../csv/options.js';
import { compileRules, type ValidationRules } from '../rules/options.js';
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

/** To the reader: a part to read, or chunks it may send on. */
export type ToReadWorker = { read: ReadWorkerData } | { credit: number };

const port = parentPort;
if (port === null) throw new Error('src/ingest/read/worker runs only as a worker thread');

let credit = 0;
let wake: (() => void) | null = null;
const parts: ReadWorkerData[] = [];
let partGiven: (() => void) | null = null;
port.on('message', (m: ToReadWorker) => {
  if ('read' in m) {
    parts.push(m.read);
    partGiven?.();
    partGiven = null;
    return;
  }
  // Credit the intake sent for a part already read comes before the next part (messages keep their order),
  // and that part starts from its own credit.
  credit += m.credit;
  wake?.();
  wake = null;
});

const nextPart = async (): Promise<ReadWorkerData> => {
  while (parts.length === 0) await new Promise<void>((resolve) => (partGiven = resolve));
  return parts.shift() as ReadWorkerData;
};

/** Sends a chunk once the intake has given credit for it. */
const handOver = async (rows: ReadRows): Promise<void> => {
  while (credit <= 0) await new Promise<void>((resolve) => (wake = resolve));
  credit--;
  port.postMessage({ rows } satisfies ReadWorkerMessage);
};

/** Reads one part. A failure ends the thread (an error event for the intake, which reads the file again in one part). */
async function readPart(data: ReadWorkerData): Promise<PartSummary> {
  credit = data.credit;
  const draft = await AckDraftFile.create(data.draftPath);
  try {
    return await readPartInChunks(
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
}

for (;;) {
  const data = await nextPart();
  port.postMessage({ done: await readPart(data) } satisfies ReadWorkerMessage);
}

/**
 * The reading thread of ./read-thread.ts: reads one batch file with parseBatchFile and hands its rows over a
 * chunk at a time, never more than CHUNKS_AHEAD chunks ahead of their storing. It stores, logs and decides
 * nothing itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseBatchFile, type ReadRow } from './parse-batch.js';
import { CHUNKS_AHEAD, type FromReader, type ReaderData, type ReadRowValues, type ToReader } from './read-thread.js';

const port = parentPort;
if (port === null) throw new Error('read-worker runs as a worker thread');
const data = workerData as ReaderData;
const tell = (m: FromReader): void => port.postMessage(m);

interface Waiting<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

/** Chunks handed over, oldest first, each settled once it is stored. */
const unstored: Waiting<void>[] = [];
const handedOver: Promise<void>[] = [];
const lookups = new Map<number, Waiting<ReadonlyMap<string, readonly string[]>>>();
let nextLookup = 0;

port.on('message', (m: ToReader) => {
  if (m.kind === 'stored') {
    const chunk = unstored.shift();
    if (m.ok) chunk?.resolve();
    else chunk?.reject(new Error('the rows read were not stored'));
    return;
  }
  const lookup = lookups.get(m.id);
  lookups.delete(m.id);
  if (m.originals === null) lookup?.reject(new Error('the retried rows could not be looked up'));
  else lookup?.resolve(m.originals);
});

function valuesOf(r: ReadRow): ReadRowValues {
  return {
    batchId: r.batchId,
    line: r.line,
    merchantReferenceId: r.merchantReferenceId,
    state: r.state,
    requestValues: r.requestValues,
    payoutCurrency: r.payoutCurrency,
    payoutAmount: r.payoutAmount,
    deductionCurrency: r.deductionCurrency,
    reasonCode: r.reasonCode,
    reason: r.reason,
  };
}

/** Hands a chunk over; waits only when more than CHUNKS_AHEAD are still being stored. */
async function handOver(rows: ReadRow[]): Promise<void> {
  const stored = new Promise<void>((resolve, reject) => unstored.push({ resolve, reject }));
  stored.catch(() => undefined);
  handedOver.push(stored);
  tell({ kind: 'rows', rows: rows.map(valuesOf) });
  if (handedOver.length > CHUNKS_AHEAD) await handedOver.shift();
}

function lookUp(references: readonly string[]): Promise<ReadonlyMap<string, readonly string[]>> {
  const id = nextLookup++;
  const answer = new Promise<ReadonlyMap<string, readonly string[]>>((resolve, reject) => lookups.set(id, { resolve, reject }));
  tell({ kind: 'originals', id, references: [...references] });
  return answer;
}

try {
  const result = await parseBatchFile(data.path, data.displayName, {
    ...data.options,
    onRows: handOver,
    ...(data.lookups ? { retryOriginals: lookUp } : {}),
  });
  await Promise.all(handedOver);
  tell({ kind: 'done', result });
} catch (err) {
  const e = err as Error & { code?: unknown };
  tell({ kind: 'failed', error: { name: e.name, message: e.message, ...(typeof e.code === 'string' ? { code: e.code } : {}) } });
}

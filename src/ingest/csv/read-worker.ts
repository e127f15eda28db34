/**
 * The reading thread of ./read-thread.ts: reads one batch file with parseBatchFile and hands its rows over a
 * message at a time, never more than `rowsAhead` rows (CHUNKS_AHEAD chunks) ahead of their storing. It stores,
 * logs and decides nothing itself.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseBatchFile, type ReadRow } from './parse-batch.js';
import type { FromReader, ReaderData, ReadRowValues, ToReader } from './read-thread.js';
import type { OriginalsFound } from './retry-rows.js';

const port = parentPort;
if (port === null) throw new Error('read-worker runs as a worker thread');
const data = workerData as ReaderData;
const tell = (m: FromReader): void => port.postMessage(m);

interface Waiting<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

/** Rows handed over, and of them those stored; a failure to store them, once told. */
let handedRows = 0;
let storedRows = 0;
let storeFailed = false;
/** The hand-over waiting for rows to be stored. */
let waiting: Waiting<void> | null = null;
const lookups = new Map<number, Waiting<OriginalsFound>>();
let nextLookup = 0;

port.on('message', (m: ToReader) => {
  if (m.kind === 'stored') {
    if (m.ok) storedRows += m.rows;
    else storeFailed = true;
    const waiter = waiting;
    waiting = null;
    if (storeFailed) waiter?.reject(new Error('the rows read were not stored'));
    else waiter?.resolve();
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

/** Hands rows over; waits while more than `rowsAhead` handed over are not stored yet. */
async function handOver(rows: ReadRow[]): Promise<void> {
  if (storeFailed) throw new Error('the rows read were not stored');
  tell({ kind: 'rows', rows: rows.map(valuesOf) });
  handedRows += rows.length;
  while (handedRows - storedRows > data.rowsAhead) {
    await new Promise<void>((resolve, reject) => (waiting = { resolve, reject }));
  }
}

function lookUp(references: readonly string[]): Promise<OriginalsFound> {
  const id = nextLookup++;
  const answer = new Promise<OriginalsFound>((resolve, reject) => lookups.set(id, { resolve, reject }));
  tell({ kind: 'originals', id, references: [...references] });
  return answer;
}

try {
  const result = await parseBatchFile(data.path, data.displayName, {
    ...data.options,
    onRows: handOver,
    ...(data.lookups ? { retryOriginals: lookUp } : {}),
  });
  // The rows handed over are stored, and the last chunk gathered, by the other side before it takes the result.
  tell({ kind: 'done', result });
} catch (err) {
  const e = err as Error & { code?: unknown };
  tell({ kind: 'failed', error: { name: e.name, message: e.message, ...(typeof e.code === 'string' ? { code: e.code } : {}) } });
}

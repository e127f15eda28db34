/**
 * A batch file read on its own thread (src/ingest/csv/read-thread.ts, the build's worker module): the same
 * rows and result as a read on this thread, handed over in order; a failure to store them is the read's
 * failure; and once a read has ended (failed, stopped) no more rows are handed over. The thread holds few rows:
 * it hands them over a message at a time, and they are gathered here into the chunks the store takes.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_BATCH_FORMAT, readBatchFileOnThread, type ReadRowValues } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { HEADER, parseCollect, row, tempCsv } from './helpers.js';

const ROWS = 1_000;
const CHUNK = 50;

async function batchFile(): Promise<string> {
  const lines = [HEADER];
  for (let i = 1; i <= ROWS; i++) lines.push(row(`RT-${i}`, i % 97 === 0 ? { payoutAmount: '12,50' } : {}));
  return tempCsv(`${lines.join('\n')}\n`);
}

function options(onRows: (rows: ReadRowValues[]) => Promise<void>, signal?: AbortSignal) {
  return {
    format: DEFAULT_BATCH_FORMAT,
    rules: DEFAULT_VALIDATION_RULES,
    batchId: 'B-RT',
    chunkSize: CHUNK,
    onRows,
    ...(signal ? { signal } : {}),
  };
}

const stored = (r: ReadRowValues) => [r.line, r.merchantReferenceId, r.state, r.requestValues, r.payoutAmount, r.reasonCode, r.reason];

describe('ingest: a batch file read on its own thread', () => {
  it('hands over every row in order, as a read on this thread does, and the same result', async () => {
    const path = await batchFile();
    const here = await parseCollect(path, { chunkSize: CHUNK });
    const chunks: ReadRowValues[][] = [];
    const result = await readBatchFileOnThread(
      path,
      'batch.csv',
      options(async (rows) => {
        chunks.push(rows);
      }),
    );
    expect(chunks.map((c) => c.length)).toEqual(here.chunks);
    expect(chunks.flat().map(stored)).toEqual(here.rows.map(stored));
    expect(result).toEqual(here.result);
    expect(result.invalidCount).toBe(Math.floor(ROWS / 97));
  });

  it('fails with the failure to store a chunk, and hands nothing over after it', async () => {
    const path = await batchFile();
    const failure = new Error('disk full');
    let calls = 0;
    let callsAfterFailure = 0;
    let failed = false;
    const read = readBatchFileOnThread(
      path,
      'batch.csv',
      options(async () => {
        if (failed) callsAfterFailure++;
        if (++calls === 3) {
          failed = true;
          throw failure;
        }
      }),
    );
    await expect(read).rejects.toBe(failure);
    await new Promise((r) => setTimeout(r, 200));
    expect(callsAfterFailure).toBe(0);
    expect(calls).toBe(3);
  });

  it('stops when told to: the read ends after the chunk being stored, and nothing is handed over after', async () => {
    const path = await batchFile();
    const stop = new AbortController();
    let calls = 0;
    let storing = false;
    let callsAfterEnd = 0;
    let ended = false;
    const read = readBatchFileOnThread(
      path,
      'batch.csv',
      options(async () => {
        if (ended) callsAfterEnd++;
        calls++;
        if (calls === 2) {
          storing = true;
          stop.abort(new Error('stopping'));
          await new Promise((r) => setTimeout(r, 100));
          storing = false;
        }
      }, stop.signal),
    );
    await expect(read).rejects.toThrow('stopping');
    ended = true;
    // The chunk being stored when the stop came was stored before the read ended.
    expect(storing).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(callsAfterEnd).toBe(0);
    expect(calls).toBe(2);
  });

  it('hands rows over a message at a time, never a whole chunk, while the store still takes a chunk a call', async () => {
    const lines = [HEADER];
    for (let i = 1; i <= 1_200; i++) lines.push(row(`RT-${i}-R1`));
    const path = await tempCsv(`${lines.join('\n')}\n`);
    // The thread looks up the rows it is about to hand over: each lookup names the retries of one message.
    const lookups: number[] = [];
    const chunks: ReadRowValues[][] = [];
    const result = await readBatchFileOnThread(path, 'batch.csv', {
      ...options(async (rows) => {
        chunks.push(rows);
      }),
      chunkSize: 1_000,
      retryOriginals: async (references) => {
        lookups.push(references.length);
        return new Map();
      },
    });
    expect(result.validCount).toBe(1_200);
    expect(chunks.map((c) => c.length)).toEqual([1_000, 200]);
    expect(chunks.flat().map((r) => r.line)).toEqual(Array.from({ length: 1_200 }, (_, i) => i + 2));
    expect(lookups.reduce((a, b) => a + b, 0)).toBe(1_200);
    expect(Math.max(...lookups)).toBeLessThan(1_000);
  });

  it('reports a file it cannot read as a BatchReadError', async () => {
    await expect(
      readBatchFileOnThread(
        '/nonexistent/batch.csv',
        'batch.csv',
        options(async () => undefined),
      ),
    ).rejects.toMatchObject({
      name: 'BatchReadError',
      code: 'BATCH_READ_FAILED',
    });
  });
});

import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BATCH_FORMAT, parseBatchFile } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { tempDir } from './helpers.js';

const run = promisify(execFile);

/** A real `gc()` without restarting the test runner with --expose-gc. */
function gcFunction(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('streaming a large file', () => {
  it('hands 200,000 rows over in awaited chunks without holding the file in memory', async () => {
    const dir = await tempDir();
    const path = join(dir, 'big.csv');
    const rows = 200_000;
    await run(process.execPath, [
      'samples/generate-batch.mjs',
      '--rows',
      String(rows),
      '--out',
      path,
      '--seed',
      '11',
      '--control',
      'trailer',
    ]);
    const fileBytes = (await stat(path)).size;

    const gc = gcFunction();
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peakRetained = 0;
    let calls = 0;
    let inFlight = 0;
    let maxInFlight = 0;
    let seen = 0;
    let lastRowNumber = 0;
    const result = await parseBatchFile(path, 'big.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      chunkSize: 1000,
      onRows: async (chunk) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        calls++;
        seen += chunk.length;
        expect(chunk.length).toBeLessThanOrEqual(1000);
        expect(chunk[0]?.rowNumber).toBe(lastRowNumber + 1);
        lastRowNumber = chunk[chunk.length - 1]?.rowNumber ?? lastRowNumber;
        // Yield to the event loop: a parser that did not await us would run ahead here.
        await new Promise((resolve) => setImmediate(resolve));
        if (calls % 25 === 0) {
          gc();
          peakRetained = Math.max(peakRetained, process.memoryUsage().heapUsed - baseline);
        }
        inFlight--;
      },
    });

    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(rows);
    expect(result.validCount).toBe(rows);
    expect(seen).toBe(rows);
    expect(calls).toBe(rows / 1000);
    expect(maxInFlight).toBe(1);
    expect(result.controlTotals[0]?.rows).toBe(rows);
    // The file is tens of megabytes (and its rows as objects several times that);
    // what stays reachable while parsing must be a small fraction of it.
    expect(fileBytes).toBeGreaterThan(15 * 1024 * 1024);
    expect(peakRetained).toBeLessThan(fileBytes / 4);
  });
});

/**
 * Reading a batch file in parts on reader threads (src/ingest/read) must
 * give what reading it whole in one thread gives: the same rows with the
 * same line numbers, the same errors, sums and control totals, and the same
 * acknowledgement draft, byte for byte. Whatever a part cannot decide alone
 * (a cut inside a quoted value, control lines before the last part, more
 * rows than allowed in all) must come back as "read it again in one part",
 * never as a different answer. And the cuts themselves are checked against
 * a plain count of line breaks, across the reader's buffer edges.
 *
 * The reader threads run the build's worker module (`npm test` builds first).
 */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { batchFormatSchema, DEFAULT_BATCH_FORMAT, type BatchFormatOptionsInput } from '../../src/ingest/csv/index.js';
import { compileRules, DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import {
  cutsOf,
  ReaderThreads,
  readBatchInParts,
  readerThreads,
  readBatchInThread,
  type BatchRead,
  type BatchReadOptions,
  type ReadRows,
} from '../../src/ingest/read/index.js';
import { HEADER, row, tempCsv, tempDir } from './helpers.js';
import { prng } from '../../samples/prng.mjs';

const run = promisify(execFile);

type RowTuple = [number, string, string | null, string | null, string | null, string | null, string | null, string | null];

/** Every row handed over, as one tuple each, in line order (parts hand theirs over interleaved). */
function tuples(chunks: readonly ReadRows[]): RowTuple[] {
  const out: RowTuple[] = [];
  for (const c of chunks) {
    c.lines.forEach((line, i) =>
      out.push([
        line,
        c.references[i] as string,
        c.requests[i] ?? null,
        c.payoutCurrencies[i] ?? null,
        c.payoutAmounts[i] ?? null,
        c.deductionCurrencies[i] ?? null,
        c.reasonCodes[i] ?? null,
        c.reasons[i] ?? null,
      ]),
    );
  }
  return out.sort((a, b) => a[0] - b[0]);
}

async function draftText(read: BatchRead): Promise<string> {
  let text = '';
  for (const path of read.ackDrafts) text += await readFile(path, 'utf8');
  return text;
}

interface Reads {
  whole: BatchRead;
  wholeRows: RowTuple[];
  parts: BatchRead | { again: string } | null;
  partRows: RowTuple[];
  /** The folder the read in parts drafted into. */
  partsDraftDir: string;
}

/** A read of batch.csv with the default format and rules, drafting into a fresh folder; the rest as given. */
async function readOptions(given: Partial<BatchReadOptions>): Promise<BatchReadOptions> {
  return {
    format: DEFAULT_BATCH_FORMAT,
    rules: DEFAULT_VALIDATION_RULES,
    compiledRules: compileRules(DEFAULT_VALIDATION_RULES),
    identity: { batchId: 'B20261125-000000-abcdef', fileName: 'batch.csv' },
    draftDir: await tempDir(),
    sidecarPath: null,
    chunkSize: 50,
    onRows: () => Promise.resolve(),
    ...given,
  };
}

/** `content` in a fresh file, and its size. */
async function fileOf(content: string | Buffer): Promise<{ path: string; size: number }> {
  const path = await tempCsv(content);
  return { path, size: (await stat(path)).size };
}

/** The file read whole in this thread, and in `threads` parts (from any size). */
async function readBoth(content: string | Buffer, format: BatchFormatOptionsInput = {}, threads = 3): Promise<Reads> {
  const { path, size } = await fileOf(content);
  const options = (collect: ReadRows[]): Promise<BatchReadOptions> =>
    readOptions({
      format: batchFormatSchema.parse(format),
      chunkSize: 37,
      onRows: (rows) => {
        collect.push(rows);
        return Promise.resolve();
      },
    });
  const wholeChunks: ReadRows[] = [];
  const whole = await readBatchInThread(path, await options(wholeChunks));
  const partChunks: ReadRows[] = [];
  const partsOptions = await options(partChunks);
  const parts = await readBatchInParts(path, size, { workers: threads, minBytes: 0 }, partsOptions);
  return { whole, wholeRows: tuples(wholeChunks), parts, partRows: tuples(partChunks), partsDraftDir: partsOptions.draftDir };
}

/** Expects the read in parts to be the read of the whole file, drafts included. */
async function expectSameAsWhole(r: Reads, parts: number): Promise<void> {
  expect(r.parts).not.toBeNull();
  expect(r.parts && 'again' in r.parts ? r.parts.again : null).toBeNull();
  const inParts = r.parts as BatchRead;
  expect(inParts.ackDrafts).toHaveLength(parts);
  expect(inParts.parse).toEqual(r.whole.parse);
  expect(r.partRows).toEqual(r.wholeRows);
  expect(await draftText(inParts)).toBe(await draftText(r.whole));
}

function lines(rows: readonly string[], eol = '\n'): string {
  return [HEADER, ...rows].join(eol) + eol;
}

describe('reading a batch file in parts', () => {
  it('gives the rows, sums and acknowledgement draft of reading it whole', async () => {
    const rows = Array.from({ length: 600 }, (_, i) => row(`REF-${i}`, { payoutAmount: `${i + 1}.${i % 100}` }));
    const r = await readBoth(lines(rows));
    await expectSameAsWhole(r, 3);
    expect(r.whole.parse.rowCount).toBe(600);
    expect(r.wholeRows[0]?.[0]).toBe(2);
    expect(r.wholeRows.at(-1)?.[0]).toBe(601);
  });

  it('hands rows over in chunks of exactly the chunk size, each part its rest last', async () => {
    // 2,500 rows: the parser hands a reader 64 at a time (or fewer), which fill the chunks across their edges.
    const rows = Array.from({ length: 2500 }, (_, i) => (i % 7 === 3 ? row(`BAD-${i}`, { payoutAmount: 'x' }) : row(`OK-${i}`)));
    const { path, size } = await fileOf(lines(rows));
    for (const chunkSize of [1000, 37]) {
      const whole: ReadRows[] = [];
      await readBatchInThread(path, await readOptions({ chunkSize, onRows: (c) => Promise.resolve(void whole.push(c)) }));
      const sizes = whole.map((c) => c.lines.length);
      const full = Math.floor(2500 / chunkSize);
      expect(sizes).toEqual([...Array.from({ length: full }, () => chunkSize), 2500 - full * chunkSize]);
      expect(whole.flatMap((c) => c.lines)).toEqual(Array.from({ length: 2500 }, (_, i) => i + 2));

      const inParts: ReadRows[] = [];
      const read = await readBatchInParts(
        path,
        size,
        { workers: 2, minBytes: 0 },
        await readOptions({ chunkSize, onRows: (c) => Promise.resolve(void inParts.push(c)) }),
      );
      expect(read).not.toBeNull();
      expect(read && 'again' in read).toBe(false);
      // Each part's chunks are full but its last; a part's chunks come in line order.
      const short = inParts.filter((c) => c.lines.length !== chunkSize);
      expect(short.length).toBeLessThanOrEqual(2);
      expect(Math.max(...inParts.map((c) => c.lines.length))).toBe(chunkSize);
      expect(tuples(inParts)).toEqual(tuples(whole));
    }
  });

  it('numbers lines as a read of the whole file does, with CRLF, a BOM, blank lines and invalid rows in every part', async () => {
    const random = prng(20261125);
    const rows: string[] = [];
    for (let i = 0; i < 900; i++) {
      const pick = random();
      if (pick < 0.05) rows.push('');
      else if (pick < 0.15) rows.push(row(`BAD-${i}`, { payoutAmount: 'twelve' }));
      else if (pick < 0.2) rows.push(row(`BAD-${i}`, { 'beneficiary.accountNumber': '', payoutCurrency: 'XXX' }));
      else if (pick < 0.25) rows.push(row(`Q-${i}`, { 'beneficiary.accountName': '"Smith, John ""JJ"""' }));
      else rows.push(row(`OK-${i}`));
    }
    const r = await readBoth(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines(rows, '\r\n'))]), { maxStoredErrors: 7 });
    await expectSameAsWhole(r, 3);
    expect(r.whole.parse.invalidCount).toBeGreaterThan(50);
    // Errors kept are the file's first, whichever part found them.
    expect(r.whole.parse.storedErrors).toHaveLength(7);
    expect(r.whole.parse.errorCount).toBeGreaterThan(7);
  });

  it('reads a control trailer in the last part as the whole file does', async () => {
    const dir = await tempDir();
    const path = join(dir, 'gen.csv');
    await run(process.execPath, ['samples/generate-batch.mjs', '--rows', '3000', '--out', path, '--seed', '5', '--control', 'trailer']);
    const r = await readBoth(await readFile(path), {}, 2);
    await expectSameAsWhole(r, 2);
    expect(r.whole.parse.controlTotals).toHaveLength(1);
    expect(r.whole.parse.fileErrors).toEqual([]);
  });

  it('is read again in one part when a cut falls inside a quoted value that holds line breaks', async () => {
    const longName = Array.from({ length: 400 }, (_, i) => `line ${i}`).join('\n');
    const rows = [...Array.from({ length: 10 }, (_, i) => row(`A-${i}`)), row('LONG', { 'beneficiary.accountName': `"${longName}"` })];
    rows.push(...Array.from({ length: 10 }, (_, i) => row(`B-${i}`)));
    const r = await readBoth(lines(rows), {}, 2);
    expect(r.parts).toMatchObject({ again: 'a part has a problem of the whole file' });
    // The parts' drafts are given up with them: the read in one part drafts its own.
    expect(await readdir(r.partsDraftDir)).toEqual([]);
    // Read whole, the value is one row's (invalid: it holds line breaks), and every line is numbered past it.
    expect(r.whole.parse.fileErrors).toEqual([]);
    expect(r.whole.parse.rowCount).toBe(21);
    expect(r.wholeRows.at(-1)?.[0]).toBe(1 + 10 + 400 + 10);
  });

  it('is read again in one part when control lines come before the last part, or the parts hold more rows than allowed', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => row(`REF-${i}`));
    const trailerFirst = [...rows.slice(0, 10), '#CONTROL,rows,10', ...rows.slice(10)];
    const early = await readBoth(lines(trailerFirst), {}, 2);
    // Found by the part that holds the rows after it, or by the check of every part's summary: read again either way.
    expect(early.parts).toHaveProperty('again');
    expect(early.whole.parse.fileErrors.length).toBeGreaterThan(0);

    // A control line long enough that the cut falls right after it: the part before ends well, on it.
    const atCut = await readBoth(lines([...rows.slice(0, 5), `#CONTROL,rows,5${','.repeat(3000)}`, ...rows.slice(5, 10)]), {}, 2);
    expect(atCut.parts).toMatchObject({ again: 'control lines before the last part' });
    expect(atCut.whole.parse.fileErrors.length).toBeGreaterThan(0);

    const tooMany = await readBoth(lines(rows), { maxRows: 250 }, 2);
    expect(tooMany.parts).toMatchObject({ again: 'more than 250 rows' });
    for (const r of [early, atCut, tooMany]) expect(await readdir(r.partsDraftDir)).toEqual([]);
    expect(tooMany.whole.parse.fileErrors.map((e) => e.code)).toContain('TOO_MANY_ROWS');
  });

  it('is not read in parts when the file has no line feed to cut at, or is smaller than the setting', async () => {
    const rows = Array.from({ length: 200 }, (_, i) => row(`REF-${i}`));
    const crOnly = await readBoth(lines(rows, '\r'));
    expect(crOnly.parts).toBeNull();
    const { path, size } = await fileOf(lines(rows));
    const opts = await readOptions({ chunkSize: 100 });
    expect(await readBatchInParts(path, size, { workers: 2, minBytes: size + 1 }, opts)).toBeNull();
    expect(await readBatchInParts(path, size, { workers: 1, minBytes: 0 }, opts)).toBeNull();
  });

  it('stops its reader threads and rejects when the intake cannot take a chunk (the database failed)', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => row(`REF-${i}`));
    const { path, size } = await fileOf(lines(rows));
    let taken = 0;
    const opts = await readOptions({ onRows: () => (++taken === 3 ? Promise.reject(new Error('disk full')) : Promise.resolve()) });
    await expect(readBatchInParts(path, size, { workers: 2, minBytes: 0 }, opts)).rejects.toThrow('disk full');
    expect(taken).toBe(3);
  });

  it('stops its reader threads and rejects with the reason when the read is aborted (shutdown)', async () => {
    const rows = Array.from({ length: 2000 }, (_, i) => row(`REF-${i}`));
    const { path, size } = await fileOf(lines(rows));
    const stop = new AbortController();
    let taken = 0;
    const opts = await readOptions({
      signal: stop.signal,
      onRows: () => {
        if (++taken === 2) stop.abort(new Error('shutting down'));
        return Promise.resolve();
      },
    });
    await expect(readBatchInParts(path, size, { workers: 2, minBytes: 0 }, opts)).rejects.toThrow('shutting down');
    // Chunks already sent by the readers are not taken once the read is stopped.
    expect(taken).toBe(2);
  });
});

describe('reader threads started ahead of the read', () => {
  /** Threads that remember which of them a read ended. */
  class WatchedReaders extends ReaderThreads {
    readonly ended: number[] = [];
    override end(worker: Worker): void {
      this.ended.push(worker.threadId);
      super.end(worker);
    }
  }

  /** A file of `n` rows, read in 2 parts with `readers`; the rows handed over, in line order. */
  async function readWith(readers: ReaderThreads, n: number, given: Partial<BatchReadOptions> = {}): Promise<RowTuple[]> {
    const rows = Array.from({ length: n }, (_, i) => row(`REF-${n}-${i}`, { payoutAmount: `${i + 1}.25` }));
    const { path, size } = await fileOf(lines(rows));
    const chunks: ReadRows[] = [];
    const opts = await readOptions({
      readers,
      onRows: (r) => {
        chunks.push(r);
        return Promise.resolve();
      },
      ...given,
    });
    const read = await readBatchInParts(path, size, { workers: 2, minBytes: 0 }, opts);
    expect(read).not.toBeNull();
    expect(read && 'again' in read ? read.again : null).toBeNull();
    return tuples(chunks);
  }

  it('are taken by the read, which gives what threads of its own give, and ended with it', async () => {
    const readers = new WatchedReaders(2);
    try {
      readers.prestart();
      readers.prestart();
      const started = readers.readyThreadIds;
      expect(started).toHaveLength(2);
      const read = await readWith(readers, 450);
      expect(readers.readyThreadIds).toEqual([]);
      expect(readers.ended.sort()).toEqual([...started].sort());
      expect(read).toEqual(await readWith(new ReaderThreads(0), 450));
      expect(read.map((t) => t[0])).toEqual(Array.from({ length: 450 }, (_, i) => i + 2));
      // Started again for the next file: new threads, and that file read as its own.
      readers.prestart();
      expect(readers.readyThreadIds).toHaveLength(2);
      expect(await readWith(readers, 120)).toEqual(await readWith(new ReaderThreads(0), 120));
    } finally {
      await readers.close();
    }
    readers.prestart();
    expect(readers.readyThreadIds).toEqual([]);
  });

  it('are as many as the setting says, and none for a setting of one (one thread is no parts)', async () => {
    expect([readerThreads(0), readerThreads(1), readerThreads(2), readerThreads(3)]).toEqual([0, 0, 2, 3]);
    const one = new ReaderThreads(readerThreads(1));
    one.prestart();
    expect(one.readyThreadIds).toEqual([]);
    const { path, size } = await fileOf(lines(Array.from({ length: 50 }, (_, i) => row(`REF-${i}`))));
    expect(await readBatchInParts(path, size, { workers: 1, minBytes: 0 }, await readOptions({}))).toBeNull();
  });

  it('are ended with a read that was stopped, and a read finding none starts its own', async () => {
    const readers = new WatchedReaders(2);
    try {
      readers.prestart();
      const started = readers.readyThreadIds;
      const stop = new AbortController();
      let taken = 0;
      const stopped = readWith(readers, 2000, {
        signal: stop.signal,
        onRows: () => {
          if (++taken === 2) stop.abort(new Error('shutting down'));
          return Promise.resolve();
        },
      });
      await expect(stopped).rejects.toThrow('shutting down');
      expect(readers.readyThreadIds).toEqual([]);
      expect(readers.ended.sort()).toEqual([...started].sort());
      expect(await readWith(readers, 200)).toHaveLength(200);
      expect(readers.ended).toHaveLength(4);
    } finally {
      await readers.close();
    }
  });
});

/** Line breaks before `at`, counted as src/ingest/csv/lines.ts counts them: CRLF, LF and a lone CR are one each. */
function breaksBefore(bytes: Buffer, at: number): number {
  let n = 0;
  for (let i = 0; i < at; i++) {
    if (bytes[i] === 0x0a) n++;
    else if (bytes[i] === 0x0d && bytes[i + 1] !== 0x0a) n++;
  }
  return n;
}

describe('where a file is cut', () => {
  it('cuts right after the first line feed at or past each share, with the line breaks before it', async () => {
    const random = prng(7);
    const endings = ['\n', '\r\n', '\r'];
    // Over 2 MiB, so the scan crosses its 1 MiB buffer's edges; a CRLF and a lone CR are put across them.
    const parts: string[] = [];
    let size = 0;
    while (size < 2.5 * 1024 * 1024) {
      const text = 'x'.repeat(Math.floor(random() * 300)) + (endings[Math.floor(random() * 3)] as string);
      parts.push(text);
      size += text.length;
    }
    let bytes = Buffer.from(parts.join(''));
    const MIB = 1024 * 1024;
    bytes[MIB - 1] = 0x0d;
    bytes[MIB] = 0x0a;
    bytes[2 * MIB - 1] = 0x0d;
    bytes[2 * MIB] = 0x78;
    const path = await tempCsv(bytes);
    bytes = await readFile(path);
    for (const n of [2, 3, 4, 7]) {
      const cuts = await cutsOf(path, bytes.length, n);
      expect(cuts).toHaveLength(n - 1);
      cuts.forEach((cut, k) => {
        const share = Math.floor((bytes.length * (k + 1)) / n);
        const lf = bytes.indexOf(0x0a, share);
        expect(cut.at, `cut ${k + 1} of ${n}`).toBe(lf + 1);
        expect(cut.lineOffset, `cut ${k + 1} of ${n}`).toBe(breaksBefore(bytes, cut.at));
      });
    }
  });

  it("counts a CRLF split across the scan's buffer edge as one break, and a lone CR at the edge as one", async () => {
    const MIB = 1024 * 1024;
    const crlf = `${'x'.repeat(MIB - 1)}\r\n${'y'.repeat(100)}\n`;
    expect(await cutsOf(await tempCsv(crlf), crlf.length, 2)).toEqual([{ at: MIB + 1, lineOffset: 1 }]);
    const loneCr = `${'x'.repeat(MIB - 1)}\r${'y'.repeat(10)}\n${'z'.repeat(MIB)}\n`;
    expect(await cutsOf(await tempCsv(loneCr), loneCr.length, 2)).toEqual([{ at: MIB + 11, lineOffset: 2 }]);
  });

  it('makes fewer cuts when lines are longer than a share, and none without a line feed', async () => {
    const long = `${'a'.repeat(5000)}\n${'b'.repeat(10)}\n${'c'.repeat(10)}\n`;
    const path = await tempCsv(long);
    const cuts = await cutsOf(path, long.length, 4);
    expect(cuts).toEqual([{ at: 5001, lineOffset: 1 }]);
    const crOnly = await tempCsv('a\rb\rc\r'.repeat(100));
    expect(await cutsOf(crOnly, 600, 3)).toEqual([]);
    const dir = await tempDir();
    await writeFile(join(dir, 'one.csv'), 'no line feed at all');
    expect(await cutsOf(join(dir, 'one.csv'), 19, 2)).toEqual([]);
  });
});

import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isTempName, writeFileAtomic } from '../../src/report/index.js';
import { listDir, useTempDirs } from './tmp.js';

const tempDir = useTempDirs();

/** Yields enough to force writes to the temp file, then fails like a dropped database cursor. */
async function* failingMidStream(dir: string, seen: string[][]): AsyncGenerator<string> {
  for (let i = 0; i < 50; i++) yield `${'x'.repeat(9_999)}\n`;
  seen.push(await listDir(dir));
  throw new Error('cursor lost');
}

describe('writeFileAtomic', () => {
  it('writes the whole content, leaves no temp file, and uses mode 0640', async () => {
    const dir = await tempDir();
    const path = join(dir, 'out.csv');
    await writeFileAtomic(path, ['a,b\r\n', Buffer.from('1,2\r\n')]);
    expect(await readFile(path, 'utf8')).toBe('a,b\r\n1,2\r\n');
    expect(await listDir(dir)).toEqual(['out.csv']);
    expect((await stat(path)).mode & 0o777).toBe(0o640);
  });

  it('writes chunks larger and smaller than a write in order, byte for byte', async () => {
    const dir = await tempDir();
    const path = join(dir, 'out.csv');
    const big = (fill: number, n: number): Buffer => Buffer.alloc(n, fill);
    // A large chunk alone, one after small ones, a string over a write's size, and a small tail.
    const chunks = [big(0x41, 300_000), 'b', big(0x43, 65_535), big(0x44, 70_000), 'é'.repeat(40_000), big(0x46, 10)];
    await writeFileAtomic(path, chunks);
    expect((await readFile(path)).equals(Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))))).toBe(true);
  });

  it('writes to a hidden .tmp file while streaming, never under the final name', async () => {
    const dir = await tempDir();
    const during: string[][] = [];
    async function* chunks(): AsyncGenerator<string> {
      yield 'x'.repeat(200_000);
      during.push(await listDir(dir));
      yield 'end';
    }
    await writeFileAtomic(join(dir, 'out.csv'), chunks());
    expect(during[0]).toHaveLength(1);
    const [name = ''] = during[0] ?? [];
    expect(isTempName(name)).toBe(true);
    expect(name.startsWith('.out.csv.')).toBe(true);
    expect(await listDir(dir)).toEqual(['out.csv']);
  });

  it('on a failure mid-stream leaves neither the final file nor the temp file', async () => {
    const dir = await tempDir();
    const seen: string[][] = [];
    await expect(writeFileAtomic(join(dir, 'out.csv'), failingMidStream(dir, seen))).rejects.toThrow('cursor lost');
    expect(seen[0]?.some(isTempName)).toBe(true); // the failure really happened mid-write
    expect(await listDir(dir)).toEqual([]);
  });

  it('on a failure mid-stream keeps the previous file whole', async () => {
    const dir = await tempDir();
    const path = join(dir, 'out.csv');
    await writeFile(path, 'previous');
    await expect(writeFileAtomic(path, failingMidStream(dir, []))).rejects.toThrow('cursor lost');
    expect(await readFile(path, 'utf8')).toBe('previous');
    expect(await listDir(dir)).toEqual(['out.csv']);
  });

  it('replaces an existing file', async () => {
    const dir = await tempDir();
    const path = join(dir, 'out.csv');
    await writeFileAtomic(path, ['one']);
    await writeFileAtomic(path, ['two']);
    expect(await readFile(path, 'utf8')).toBe('two');
    expect(await listDir(dir)).toEqual(['out.csv']);
  });

  it('stops on abort and leaves nothing behind', async () => {
    const dir = await tempDir();
    const ctl = new AbortController();
    async function* chunks(): AsyncGenerator<string> {
      yield 'x'.repeat(100_000);
      ctl.abort(new Error('shutting down'));
      yield 'more';
    }
    await expect(writeFileAtomic(join(dir, 'out.csv'), chunks(), { signal: ctl.signal })).rejects.toThrow('shutting down');
    expect(await listDir(dir)).toEqual([]);
  });
});

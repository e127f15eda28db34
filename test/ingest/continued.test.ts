/**
 * Reading a taken file whose upload went on (src/ingest/csv/continued.ts):
 * appended or rewritten, the line cut where the file was taken, and the
 * complete records after it with their own bytes and lines: quoted line
 * breaks, CRLF, a BOM, blank and control lines, a trailing partial line or
 * an unclosed quote, and records across read chunks.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { continuationOf, headerRecord, restRecords, type RestTally } from '../../src/ingest/csv/index.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-continued-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const OPTS = { delimiter: ',', maxRecordBytes: 65_536 };

/** The file now, and what was taken of it: its first `taken` bytes as they were. */
async function taken(text: string, takenText: string): Promise<{ path: string; part: { size: number; sha256: string }; size: number }> {
  const path = join(dir, 'f.csv');
  await writeFile(path, text);
  const bytes = Buffer.from(takenText);
  return { path, part: { size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') }, size: Buffer.byteLength(text) };
}

async function rest(text: string, takenText: string, wholeFile = false) {
  const f = await taken(text, takenText);
  const continuation = await continuationOf(f.path, f.part, f.size, { ...OPTS, wholeFile });
  const tally: RestTally = { controlLines: 0, partial: null };
  const records = [];
  for await (const r of restRecords(f.path, continuation, f.size, OPTS, tally))
    records.push({ line: r.line, text: r.bytes.toString('utf8'), end: r.end });
  return { continuation, records, tally };
}

describe('a taken file that went on', () => {
  it('appended at a line end: the records after the cut, each with its bytes and line, control and blank lines left out', async () => {
    const head = 'a,b\n1,2\n';
    const more = '3,"x\ny"\n\n#CONTROL,rows,3\n4,5\n';
    const r = await rest(head + more, head);
    expect(r.continuation).toEqual({ rewritten: false, cutLine: null, restFrom: head.length, restLine: 3 });
    expect(r.records).toEqual([
      { line: 3, text: '3,"x\ny"\n', end: head.length + 8 },
      { line: 7, text: '4,5\n', end: head.length + more.length },
    ]);
    expect(r.tally).toEqual({ controlLines: 1, partial: null });
  });

  it('cut inside a line: that line is named and its rest is not a record of the remainder; a CRLF split by the cut is no cut', async () => {
    const cut = await rest('a,b\r\n1,2\r\n3,45\r\n6,7\r\n', 'a,b\r\n1,2\r\n3,4');
    expect(r(cut)).toEqual({ cutLine: 3, lines: [4], texts: ['6,7\r\n'] });
    const split = await rest('a,b\r\n1,2\r\n6,7\r\n', 'a,b\r\n1,2\r');
    expect(r(split)).toEqual({ cutLine: null, lines: [3], texts: ['6,7\r\n'] });
    function r(x: Awaited<ReturnType<typeof rest>>) {
      return { cutLine: x.continuation.cutLine, lines: x.records.map((y) => y.line), texts: x.records.map((y) => y.text) };
    }
  });

  it('a last line without its line break, or an unclosed quote, is left out and noted', async () => {
    const head = 'a,b\n1,2\n';
    const unterminated = await rest(`${head}3,4\n5,6`, head);
    expect(unterminated.records.map((x) => x.text)).toEqual(['3,4\n']);
    expect(unterminated.tally.partial).toEqual({ line: 4, fromByte: head.length + 4, toByte: head.length + 7 });
    const open = await rest(`${head}3,4\n5,"6\n7,8\n`, head);
    expect(open.records.map((x) => x.text)).toEqual(['3,4\n']);
    expect(open.tally.partial).toEqual({ line: 4, fromByte: head.length + 4, toByte: head.length + 13 });
  });

  it('rewritten (the bytes taken differ) or shorter now: rewritten', async () => {
    expect((await rest('a,b\n9,2\n3,4\n', 'a,b\n1,2\n')).continuation.rewritten).toBe(true);
    expect((await rest('a,b\n', 'a,b\n1,2\n')).continuation.rewritten).toBe(true);
  });

  it('the whole file (nothing of it was paid): every record after the header; the header keeps its BOM', async () => {
    const text = '\uFEFFa,b\n1,2\n3,4\n';
    const r = await rest(text, '\uFEFFa,b\n1,', true);
    expect(r.records.map((x) => [x.line, x.text])).toEqual([
      [2, '1,2\n'],
      [3, '3,4\n'],
    ]);
    const f = await taken(text, text);
    expect((await headerRecord(f.path, f.size, OPTS))?.bytes.toString('utf8')).toBe('\uFEFFa,b\n');
  });

  it('records across read chunks keep their bytes whole', async () => {
    const head = 'a,b\n';
    const lines = Array.from({ length: 20_000 }, (_, i) => `${i},"name ${i}, ü"\n`);
    const r = await rest(head + lines.join(''), head);
    expect(r.records.map((x) => x.text)).toEqual(lines);
    expect(r.records.at(-1)?.line).toBe(20_001);
  });
});

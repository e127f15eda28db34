/**
 * Encodings and compression: UTF-8 stays strict by default (a Latin-1 file
 * is refused with the byte, the line and what to do); `encoding: auto`
 * reads UTF-16 with a byte order mark and Windows-1252 where the bytes
 * cannot be UTF-8, saying which; a named encoding is decoded as such; a
 * `.csv.gz` is decompressed as it is read, and a cut or broken one refused.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { batchFormatSchema } from '../../src/ingest/csv/index.js';
import { codes, HEADER, parseCollect, row, tempDir } from './helpers.js';

const TEXT = `${HEADER}\n${row('ENC-1', { 'beneficiary.accountName': 'José Müller' })}\n${row('ENC-2')}\n`;

async function file(name: string, bytes: Uint8Array): Promise<string> {
  const path = join(await tempDir(), name);
  await writeFile(path, bytes);
  return path;
}

function utf16le(text: string): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
}

function utf16be(text: string): Buffer {
  const le = Buffer.from(text, 'utf16le');
  return Buffer.concat([Buffer.from([0xfe, 0xff]), le.swap16()]);
}

describe('encodings', () => {
  it('refuses Windows-1252 by default, naming the byte, the line and the fix', async () => {
    const path = await file('batch.csv', Buffer.from(TEXT, 'latin1'));
    const { result } = await parseCollect(path);
    expect(codes(result.fileErrors)).toEqual(['INVALID_UTF8']);
    expect(result.fileErrors[0]?.line).toBe(2);
    expect(result.fileErrors[0]?.message).toContain('save it as CSV UTF-8, or set batch.format.encoding to auto');
  });

  it('refuses UTF-16 by default saying it looks like UTF-16, and which encoding to set', async () => {
    const cases: [Buffer, string][] = [
      [
        utf16le(TEXT),
        'invalid UTF-8 at byte offset 0: the file looks like UTF-16, not UTF-8 (it starts with the UTF-16 byte order mark FF FE); set batch.format.encoding to auto or to utf-16le, or save it as CSV UTF-8',
      ],
      [
        utf16be(TEXT),
        'invalid UTF-8 at byte offset 0: the file looks like UTF-16, not UTF-8 (it starts with the UTF-16 byte order mark FE FF); set batch.format.encoding to auto or to utf-16be, or save it as CSV UTF-8',
      ],
      // No byte order mark: its NULs are UTF-8 (and `auto` would read it as UTF-8 too), its `é` is not; line 1 all
      // the same, where reading it as UTF-8 went wrong.
      [
        utf16le(TEXT).subarray(2),
        'invalid UTF-8 at byte offset 548: the file looks like UTF-16, not UTF-8 (every other byte of its start is a NUL, a zero byte); set batch.format.encoding to utf-16le, or save it as CSV UTF-8',
      ],
      [
        utf16le(`${HEADER}\n${row('ENC-2')}\n`).subarray(2),
        'the file looks like UTF-16, not UTF-8 (every other byte of its start is a NUL, a zero byte); set batch.format.encoding to utf-16le, or save it as CSV UTF-8',
      ],
    ];
    for (const [bytes, message] of cases) {
      const { result } = await parseCollect(await file('batch.csv', bytes));
      expect(result.fileErrors.map((e) => [e.line, e.code, e.message])).toEqual([[1, 'INVALID_UTF8', message]]);
    }
  });

  it('reads Windows-1252, UTF-16 LE and BE, and UTF-8 with auto, saying which', async () => {
    const cases: [Buffer, string][] = [
      [Buffer.from(TEXT, 'latin1'), 'windows-1252'],
      [utf16le(TEXT), 'utf-16le'],
      [utf16be(TEXT), 'utf-16be'],
      [Buffer.from(TEXT, 'utf8'), 'utf-8'],
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(TEXT, 'utf8')]), 'utf-8'],
    ];
    for (const [bytes, encoding] of cases) {
      const { result, rows } = await parseCollect(await file('batch.csv', bytes), { format: { encoding: 'auto' } });
      expect(result.fileErrors, encoding).toEqual([]);
      expect([result.encoding, result.encodingDetected], encoding).toEqual([encoding, true]);
      expect(
        rows.map((r) => r.request?.beneficiary.accountName),
        encoding,
      ).toEqual(['José Müller', 'Juan Dela Cruz']);
    }
  });

  it('reads a named encoding, and refuses bytes it does not have', async () => {
    const latin = await parseCollect(await file('batch.csv', Buffer.from(TEXT, 'latin1')), { format: { encoding: 'iso-8859-1' } });
    expect(latin.result.fileErrors).toEqual([]);
    expect(latin.rows[0]?.request?.beneficiary.accountName).toBe('José Müller');
    expect([latin.result.encoding, latin.result.encodingDetected]).toEqual(['windows-1252', false]);
    // An odd number of bytes cannot be UTF-16.
    const odd = await parseCollect(await file('batch.csv', Buffer.concat([utf16le(TEXT), Buffer.from([0x41])])), {
      format: { encoding: 'utf-16le' },
    });
    expect(codes(odd.result.fileErrors)).toEqual(['INVALID_ENCODING']);
    expect(odd.result.fileErrors[0]?.message).toContain('not valid utf-16le text');
  });

  it('refuses an encoding name the runtime does not know, in the configuration', () => {
    expect(batchFormatSchema.safeParse({ encoding: 'klingon' }).success).toBe(false);
    expect(batchFormatSchema.parse({ encoding: 'latin1' }).encoding).toBe('latin1');
  });
});

describe('.csv.gz', () => {
  it('is decompressed as it is read, in any encoding, with lines and control totals as in the CSV', async () => {
    const withTrailer = `${TEXT}#CONTROL,rows,2\n#CONTROL,total,PHP,201\n`;
    const { result, rows } = await parseCollect(await file('batch.csv.gz', gzipSync(Buffer.from(withTrailer))), {
      displayName: 'batch.csv.gz',
    });
    expect(result.fileErrors).toEqual([]);
    expect(result.kind).toBe('gzip');
    expect(rows.map((r) => [r.line, r.state])).toEqual([
      [2, 'READY'],
      [3, 'READY'],
    ]);
    const auto = await parseCollect(await file('batch.csv.gz', gzipSync(Buffer.from(TEXT, 'latin1'))), {
      displayName: 'batch.csv.gz',
      format: { encoding: 'auto' },
    });
    expect([auto.result.encoding, auto.rows[0]?.request?.beneficiary.accountName]).toEqual(['windows-1252', 'José Müller']);
  });

  it('names the line of a bad byte inside the archive', async () => {
    const bad = `${HEADER}\n${row('GZ-1')}\n${row('GZ-2', { 'beneficiary.accountName': 'Jos\u00e9' })}\n`;
    const { result } = await parseCollect(await file('batch.csv.gz', gzipSync(Buffer.from(bad, 'latin1'))), {
      displayName: 'batch.csv.gz',
    });
    expect(codes(result.fileErrors)).toEqual(['INVALID_UTF8']);
    expect(result.fileErrors[0]?.line).toBe(3);
  });

  it('refuses a cut archive as an incomplete upload, and bytes that are no gzip', async () => {
    const whole = gzipSync(Buffer.from(TEXT.repeat(50)));
    const cut = await parseCollect(await file('batch.csv.gz', whole.subarray(0, whole.length - 20)), { displayName: 'batch.csv.gz' });
    expect(codes(cut.result.fileErrors)).toEqual(['GZIP_INVALID']);
    expect(cut.result.fileErrors[0]?.message).toContain('the upload looks incomplete');
    const junk = await parseCollect(await file('batch.csv.gz', Buffer.from(TEXT)), { displayName: 'batch.csv.gz' });
    expect(codes(junk.result.fileErrors)).toEqual(['GZIP_INVALID']);
    expect(junk.result.fileErrors[0]?.message).toContain('not a valid gzip file');
  });
});

import { readFile, writeFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  BatchReadError,
  DEFAULT_BATCH_FORMAT,
  UNTERMINATED_REASON,
  parseBatchFile,
  unterminatedFileProblem,
} from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES, FIELD_PATHS, errorPlace, type RowError } from '../../src/ingest/rules/index.js';
import { VALID_ROW } from '../support/rows.js';
import { FRIENDLY_ALIASES, HEADER, codes, parseCollect, row, tempCsv } from './helpers.js';

const FIXTURES = 'test/fixtures/csv';
const fixture = (name: string): string => `${FIXTURES}/${name}`;

const ALIASES = FRIENDLY_ALIASES;

describe('CSV encodings and layouts', () => {
  it('strips a UTF-8 BOM so the first header is recognized', async () => {
    const { result, rows } = await parseCollect(fixture('bom.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.merchantReferenceId, r.request !== null])).toEqual([
      [2, 'FX-BOM-1', true],
      [3, 'FX-BOM-2', true],
    ]);
  });

  it('reads CRLF line ends, and refuses a file without a final line break as maybe cut', async () => {
    const { result, rows } = await parseCollect(fixture('crlf.csv'));
    expect(result.fileErrors.map((e) => [e.code, e.line, e.message])).toEqual([['FILE_UNTERMINATED', 4, UNTERMINATED_REASON]]);
    expect(result.validCount).toBe(3);
    // No stray CR left on the last field.
    expect(rows.map((r) => r.request?.beneficiary.bankCode)).toEqual(['BOPIPHMM', 'BOPIPHMM', 'BOPIPHMM']);
    expect(rows.map((r) => r.line)).toEqual([2, 3, 4]);
  });

  it('detects a semicolon delimiter from the header line', async () => {
    const { result, rows } = await parseCollect(fixture('semicolon.csv'));
    expect(result.delimiter).toBe(';');
    expect(result.fileErrors).toEqual([]);
    expect(rows[0]?.request?.beneficiary.accountName).toBe('Cruz, Juan');
    expect(rows[1]?.request?.payoutAmount).toBe('7');
  });

  it('honours a fixed delimiter instead of detecting one', async () => {
    const { result } = await parseCollect(fixture('semicolon.csv'), { format: { delimiter: ',' } });
    expect(result.delimiter).toBe(',');
    expect(codes(result.fileErrors)).toEqual(['HEADER_UNKNOWN', ...Array(12).fill('HEADER_MISSING')]);
  });

  it('gives the physical start line of records after quoted newlines and blank lines', async () => {
    const { result, rows } = await parseCollect(fixture('quoted-newlines.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.merchantReferenceId, r.line])).toEqual([
      ['FX-QN-1', 2],
      ['FX-QN-2', 3],
      ['FX-QN-3', 6],
      ['FX-QN-4', 9],
    ]);
    expect(rows[0]?.request?.beneficiary.accountName).toBe('Juan, "JD" Dela Cruz');
    // Newlines inside names are control characters: reported on the record's first line.
    expect(rows[1]?.errors.map((e) => [e.code, e.line, e.field])).toEqual([['CONTROL_CHARACTER', 3, 'sender.lastName']]);
    expect(rows[2]?.errors.map((e) => [e.code, e.line, e.field])).toEqual([['CONTROL_CHARACTER', 6, 'beneficiary.accountName']]);
  });

  it('keeps line numbers right whatever the read chunk boundaries are', async () => {
    const expected = (await parseCollect(fixture('quoted-newlines.csv'))).rows.map((r) => r.line);
    for (const readChunkBytes of [1, 2, 3, 7]) {
      const { rows } = await parseCollect(fixture('quoted-newlines.csv'), { readChunkBytes });
      expect(rows.map((r) => r.line)).toEqual(expected);
    }
    const bom = await parseCollect(fixture('bom.csv'), { readChunkBytes: 1 });
    expect(bom.result.fileErrors).toEqual([]);
    expect(bom.rows.map((r) => r.line)).toEqual([2, 3]);
  });

  it('reads a file larger than a read the same in reads of any size (a read is parsed a piece at a time)', async () => {
    // ~300 KB: several 64 KiB reads, each parsed in 8 KiB pieces. Names of two- and three-byte characters, quoted
    // line breaks and CRLF put multi-byte characters, quotes and line ends across the pieces' edges somewhere.
    const lines = [HEADER];
    for (let i = 0; i < 2400; i++) {
      if (i % 50 === 7) lines.push(row(`FX-BIG-${i}`, { 'beneficiary.accountName': '"Zoë\r\nMüller"' }));
      else if (i % 3 === 0) lines.push(row(`FX-BIG-${i}`, { 'sender.lastName': 'Ñúñez€' }));
      else lines.push(row(`FX-BIG-${i}`));
    }
    const path = await tempCsv(`${lines.join('\r\n')}\r\n`);
    const seen = (c: Awaited<ReturnType<typeof parseCollect>>): unknown[] =>
      c.rows.map((r) => [r.line, r.merchantReferenceId, r.requestValues, codes(r.errors)]);
    const whole = await parseCollect(path);
    expect(whole.result.fileErrors).toEqual([]);
    expect(whole.rows).toHaveLength(2400);
    expect(whole.result.invalidCount).toBe(48);
    expect(whole.rows[3]?.request?.sender.lastName).toBe('Ñúñez€');
    expect(whole.rows.at(-1)?.line).toBe(2400 + 1 + 48);
    for (const readChunkBytes of [7, 8 * 1024 + 3, 3 * 64 * 1024]) {
      const other = await parseCollect(path, { readChunkBytes });
      expect(seen(other), `reads of ${readChunkBytes} bytes`).toEqual(seen(whole));
      expect(other.result.totals).toEqual(whole.result.totals);
    }
  });

  it('counts a lone CR as a line break', async () => {
    const path = await tempCsv(`${HEADER}\r${row('FX-CR-1')}\r\r${row('FX-CR-2')}\r`);
    const { result, rows } = await parseCollect(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => r.line)).toEqual([2, 4]);
  });

  it('skips blank and delimiter-only lines, including leading ones before the header', async () => {
    const path = await tempCsv(`\n\n${HEADER}\n\n${row('FX-BL-1')}\n   \n,,,,,,,,,,,\n${row('FX-BL-2')}\n\n`);
    const { result, rows } = await parseCollect(path);
    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(2);
    expect(rows.map((r) => r.line)).toEqual([5, 8]);
  });
});

describe('header', () => {
  it('maps configured aliases case-insensitively, trimmed, in any column order', async () => {
    const { result, rows } = await parseCollect(fixture('aliases.csv'), { format: { columnAliases: ALIASES } });
    expect(result.fileErrors).toEqual([]);
    expect(rows[0]?.request).toEqual({
      merchantReferenceId: 'FX-AL-1',
      deductionCurrency: 'USDC',
      payoutCurrency: 'PHP',
      payoutAmount: '250',
      sender: { firstName: 'Maria', lastName: 'Santos', country: 'PH', idType: 'PASSPORT', idValue: 'P1234567A' },
      beneficiary: { accountName: 'Juan Dela Cruz', accountNumber: '1234567890', bankCode: 'BOPIPHMM' },
    });
  });

  it('reports errors with the column as written in the file', async () => {
    const path = await tempCsv(
      ' Reference ,Amount,CURRENCY,Funding,First Name,Last Name,Country,ID Type,ID Number,Beneficiary,Account,Bank\n' +
        'FX-AL-2,1e3,PHP,USDT,Maria,Santos,PH,PASSPORT,P1,Juan,1234567890,BOPIPHMM\n',
    );
    const { rows } = await parseCollect(path, { format: { columnAliases: ALIASES } });
    expect(rows[0]?.errors).toEqual([
      expect.objectContaining({ file: 'batch.csv', line: 2, column: 'Amount', field: 'payoutAmount', code: 'AMOUNT_EXPONENT' }),
    ]);
  });

  it('rejects a duplicate header after alias resolution', async () => {
    const { result, rows } = await parseCollect(fixture('header-duplicate.csv'), { format: { columnAliases: { Amount: 'payoutAmount' } } });
    expect(rows).toEqual([]);
    expect(result.fileErrors).toEqual([
      expect.objectContaining({ line: 1, column: 'Amount', columnIndex: 12, field: 'payoutAmount', code: 'HEADER_DUPLICATE' }),
    ]);
    expect(result.fileErrors[0]?.message).toBe(
      'this header is payoutAmount again, already the header of column D "payoutAmount"; keep one of the two columns',
    );
  });

  it('hints at the field an unknown header most likely means, and at columnAliases', async () => {
    const friendly = Object.keys(ALIASES);
    const path = await tempCsv(`${friendly.join(',')}\nX-1,100.50,PHP,USDT,Maria,Santos,PH,PASSPORT,P1,Juan,1234567890,BOPIPHMM\n`);
    const { result } = await parseCollect(path);
    const unknown = result.fileErrors.filter((e) => e.code === 'HEADER_UNKNOWN');
    expect(unknown).toHaveLength(12);
    expect(unknown[0]?.message).toBe(
      '"Reference" is not a column payoutd knows; did you mean merchantReferenceId? Rename the header, or map it to a field in batch.format.columnAliases (docs/csv-format.md, "Column aliases")',
    );
    expect(unknown.map((e) => /did you mean ([\w.]+)\?/.exec(e.message)?.[1])).toEqual(Object.values(ALIASES));
    expect(unknown.map((e) => e.columnIndex)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const odd = await parseCollect(await tempCsv(`${HEADER},Notes,\n${row('X-1')},,\n`));
    expect(odd.result.fileErrors.map((e) => e.message)).toEqual([
      '"Notes" is not a column payoutd knows: rename the header, or map it to a field in batch.format.columnAliases (docs/csv-format.md, "Column aliases")',
      'this column has no header but follows the last one; delete the empty columns after the last header',
    ]);
  });

  it('rejects unknown headers, naming each', async () => {
    const { result } = await parseCollect(fixture('header-unknown.csv'));
    expect(result.fileErrors.map((e) => [e.code, e.column, e.field])).toEqual([
      ['HEADER_UNKNOWN', 'sender.idKind', null],
      ['HEADER_UNKNOWN', 'notes', null],
      ['HEADER_MISSING', null, 'sender.idType'],
    ]);
  });

  it('rejects missing required headers but allows a missing optional column', async () => {
    const { result } = await parseCollect(fixture('header-missing.csv'));
    expect(result.fileErrors.map((e) => [e.code, e.field])).toEqual([
      ['HEADER_MISSING', 'sender.country'],
      ['HEADER_MISSING', 'beneficiary.bankCode'],
    ]);
    const header = HEADER.replace(',sender.idValue', '');
    const values = row('FX-OPT-1').split(',');
    values.splice(8, 1);
    const path = await tempCsv(`${header}\n${values.join(',')}\n`);
    const required = DEFAULT_VALIDATION_RULES.requiredFields.filter((f) => f !== 'sender.idValue');
    const optional = await parseCollect(path, { rules: { requiredFields: required } });
    expect(optional.result.fileErrors).toEqual([]);
    expect(optional.rows[0]?.request?.sender.idValue).toBe('');
  });

  it('treats an empty file and a blank-only file as having no header', async () => {
    for (const name of ['empty.csv', 'blank-lines-only.csv']) {
      const { result } = await parseCollect(fixture(name));
      expect(codes(result.fileErrors)).toEqual(['FILE_EMPTY']);
      expect(result.rowCount).toBe(0);
    }
  });

  it('accepts a header-only file as an empty batch', async () => {
    const { result, chunks } = await parseCollect(fixture('header-only.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(0);
    expect(chunks).toEqual([]);
  });
});

describe('record structure', () => {
  it('reports a wrong field count as a row error naming the counts, and keeps going', async () => {
    const { result, rows } = await parseCollect(fixture('column-counts.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.merchantReferenceId, r.line, codes(r.errors)])).toEqual([
      ['FX-CC-1', 2, []],
      ['FX-CC-2', 3, ['COLUMN_COUNT_MISMATCH']],
      ['FX-CC-3', 4, ['COLUMN_COUNT_MISMATCH']],
      ['FX-CC-4', 5, []],
    ]);
    expect(rows[1]?.errors[0]?.message).toContain('13 fields but the header has 12');
    expect(rows[2]?.errors[0]?.message).toContain('4 fields but the header has 12');
    // Placed where a spreadsheet shows the row going wrong: the first column past the header, or the first one missing.
    expect(rows.slice(1, 3).map((r) => errorPlace(r.errors[0] as RowError))).toEqual([
      'line 3, column M',
      'line 4, column E "sender.firstName"',
    ]);
    expect(rows[1]?.errors[0]?.message).toBe(
      'row has 13 fields but the header has 12, so column M has no header (an unquoted delimiter inside a value?): put quotes around the value that holds the delimiter, or delete the extra value',
    );
    expect(rows[2]?.errors[0]?.message).toMatch(
      /, so it ends before column E \(a missing delimiter.*\): give the row one value per header column$/,
    );
    expect(result.unsummedRows).toBe(2);
  });

  it('reports unbalanced quotes as a file error naming the line where the record starts', async () => {
    const { result } = await parseCollect(fixture('unbalanced-quotes.csv'));
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'UNBALANCED_QUOTES', line: 4, column: null })]);
    expect(result.fileErrors[0]?.message).toContain('line 4');
    // The quote runs to the end of the file: what a cut upload looks like too.
    expect(result.fileErrors[0]?.message).toMatch(/^the upload looks incomplete \(the file ends inside row 2\): /);
  });

  it('reports text after a closing quote as a file error', async () => {
    const { result } = await parseCollect(fixture('malformed-quotes.csv'));
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'MALFORMED_QUOTES', line: 2 })]);
  });

  it('reports a bare quote inside an unquoted value as a file error', async () => {
    const path = await tempCsv(`${HEADER}\n${row('FX-BQ-1')}\n${row('FX-BQ-2', { 'sender.lastName': 'O"Brien' })}\n`);
    const { result } = await parseCollect(path);
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'MALFORMED_QUOTES', line: 3 })]);
  });

  it('reports invalid UTF-8 with its byte offset and line, never replacing it', async () => {
    const bytes = await readFile(fixture('invalid-utf8.csv'));
    const offset = bytes.indexOf(0xe9);
    const { result } = await parseCollect(fixture('invalid-utf8.csv'));
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'INVALID_UTF8', line: 3 })]);
    expect(result.fileErrors[0]?.message).toContain(`byte offset ${offset}`);
    // Same answer when the bad byte sits on a chunk boundary.
    const split = await parseCollect(fixture('invalid-utf8.csv'), { readChunkBytes: offset });
    expect(split.result.fileErrors[0]?.message).toContain(`byte offset ${offset}`);
  });

  it('reports a file cut inside a multi-byte character', async () => {
    const text = Buffer.from(`${HEADER}\n${row('FX-TRUNC-1', { 'sender.lastName': 'Müller' })}`);
    const cut = text.subarray(0, text.indexOf(Buffer.from('ü')) + 1);
    const { result } = await parseCollect(await tempCsv(cut));
    expect(codes(result.fileErrors)).toEqual(['INVALID_UTF8']);
    expect(result.fileErrors[0]?.message).toContain(`byte offset ${cut.length - 1}`);
    expect(result.fileErrors[0]?.message).toContain('the upload looks incomplete: the file ends inside a UTF-8 character');
  });

  it('tells a bad byte at the end of a read from a file cut short', async () => {
    // 0xE0 0x80 can start no character (an overlong form), and 0xFF is never UTF-8: bad where they stand,
    // at the file's end or at the end of one read of it, not the start of a character the next read finishes.
    const good = Buffer.from(`${HEADER}\n${row('FX-END-1')}\n`);
    for (const bad of [[0xff], [0xe0, 0x80]]) {
      const path = await tempCsv(Buffer.concat([good, Buffer.from(bad)]));
      for (const readChunkBytes of [undefined, good.length + bad.length, good.length + 1]) {
        const { result } = await parseCollect(path, { readChunkBytes });
        expect(codes(result.fileErrors), `${bad} read ${readChunkBytes}`).toEqual(['INVALID_UTF8']);
        expect(result.fileErrors[0]?.message).toBe(
          `invalid UTF-8 at byte offset ${good.length} (line 3): the file is not UTF-8 (saved as "CSV" rather than "CSV UTF-8"?); save it as CSV UTF-8, or set batch.format.encoding to auto or to its encoding (windows-1252)`,
        );
      }
    }
  });

  it('refuses a NUL character anywhere, naming its line and column, in a data row, the header or a gzip file', async () => {
    const rows = Array.from({ length: 120 }, (_, i) => row(`FX-NUL-${i + 1}`));
    // Past the file's first 8 KB, which the intake sniffs for binary data before reading.
    rows[110] = row('FX-NUL-111', { payoutAmount: '10\u000050' });
    const text = `${HEADER}\n${rows.join('\n')}\n`;
    expect(Buffer.byteLength(text.slice(0, text.indexOf('\u0000')))).toBeGreaterThan(8192);
    const message =
      'the cell holds a NUL character (a zero byte): binary data, not text; delete the character, or save the sheet again as CSV UTF-8 (or .xlsx), and drop the file again';
    const amountColumn = FIELD_PATHS.indexOf('payoutAmount');
    for (const [path, displayName] of [
      [await tempCsv(text), 'batch.csv'],
      [await tempCsv(gzipSync(text), 'batch.csv.gz'), 'batch.csv.gz'],
    ] as const) {
      const { result } = await parseCollect(path, { displayName });
      expect(result.fileErrors, displayName).toEqual([
        { file: displayName, line: 112, column: 'payoutAmount', columnIndex: amountColumn, field: null, code: 'NUL_CHARACTER', message },
      ]);
    }
    const header = await parseCollect(await tempCsv(`${HEADER},"Notes\u0000"\n${row('FX-NUL-1')},x\n`));
    expect(header.result.fileErrors).toEqual([
      expect.objectContaining({ line: 1, column: null, columnIndex: FIELD_PATHS.length, code: 'NUL_CHARACTER' }),
    ]);
  });

  it('rejects a record larger than maxRecordBytes', async () => {
    const huge = 'x'.repeat(3000);
    const path = await tempCsv(`${HEADER}\n${row('FX-BIG-1')}\n${row('FX-BIG-2', { 'beneficiary.accountName': huge })}\n`);
    const { result } = await parseCollect(path, { format: { maxRecordBytes: 2048 } });
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'RECORD_TOO_LARGE', line: 3 })]);
    const roomy = await parseCollect(path, { format: { maxRecordBytes: 8192 } });
    expect(roomy.result.fileErrors).toEqual([]);
  });

  it('stops at the row cap with a file error', async () => {
    const lines = [HEADER, ...Array.from({ length: 6 }, (_, i) => row(`FX-CAP-${i + 1}`))];
    const path = await tempCsv(`${lines.join('\n')}\n`);
    const { result } = await parseCollect(path, { format: { maxRows: 5 } });
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'TOO_MANY_ROWS', line: 7 })]);
    expect(result.rowCount).toBe(5);
    const exact = await parseCollect(path, { format: { maxRows: 6 } });
    expect(exact.result.fileErrors).toEqual([]);
  });
});

describe('errors and results', () => {
  it('reports every error of the file with file, line, column and field', async () => {
    const { result, rows } = await parseCollect(fixture('many-errors.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(30);
    expect(result.invalidCount).toBe(30);
    expect(result.errorCount).toBe(40);
    expect(result.storedErrors).toHaveLength(40);
    expect(result.storedErrors[0]).toEqual({
      file: 'batch.csv',
      line: 2,
      column: 'payoutAmount',
      columnIndex: 3,
      field: 'payoutAmount',
      code: 'AMOUNT_LOCALE_FORMAT',
      message: expect.stringContaining('"1,5"'),
    });
    const third = rows[2]?.errors.map((e) => [e.line, e.column, e.code]);
    expect(third).toEqual([
      [4, 'payoutAmount', 'AMOUNT_LOCALE_FORMAT'],
      [4, 'sender.country', 'COUNTRY_INVALID'],
    ]);
  });

  it('caps stored errors but still counts them all, and rows keep their own errors', async () => {
    const { result, rows } = await parseCollect(fixture('many-errors.csv'), { format: { maxStoredErrors: 7 } });
    expect(result.storedErrors).toHaveLength(7);
    expect(result.errorCount).toBe(40);
    expect(rows.flatMap((r) => r.errors)).toHaveLength(40);
  });

  it('hands rows over in chunks of chunkSize', async () => {
    const lines = [HEADER, ...Array.from({ length: 25 }, (_, i) => row(`FX-CH-${i + 1}`))];
    const { chunks, rows } = await parseCollect(await tempCsv(`${lines.join('\n')}\n`), { chunkSize: 10 });
    expect(chunks).toEqual([10, 10, 5]);
    expect(rows.map((r) => r.rowNumber)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
  });

  it('sums totals per currency over every data row with Decimal', async () => {
    const lines = [
      HEADER,
      row('FX-TOT-1', { payoutAmount: '0.10' }),
      row('FX-TOT-2', { payoutAmount: '0.20' }),
      row('FX-TOT-3', { payoutAmount: '9007199254740993' }),
      row('FX-TOT-4', { payoutAmount: '5.123' }), // invalid (3 decimals) but still summed
      row('FX-TOT-5', { payoutAmount: '1,5' }), // unreadable: not summed
      row('FX-TOT-6', { payoutCurrency: 'eur', payoutAmount: '1' }),
    ];
    const { result } = await parseCollect(await tempCsv(`${lines.join('\n')}\n`));
    expect(result.totals).toEqual({ EUR: '1', PHP: '9007199254740998.423' });
    expect(result.unsummedRows).toBe(1);
  });

  it('fails with BatchReadError when the file cannot be read', async () => {
    const missing = parseBatchFile(`${FIXTURES}/does-not-exist.csv`, 'gone.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onRows: async () => {},
    });
    await expect(missing).rejects.toBeInstanceOf(BatchReadError);
    await expect(missing).rejects.toMatchObject({ code: 'BATCH_READ_FAILED', message: expect.stringContaining('gone.csv') });
  });

  it('propagates an onRows failure instead of reporting it as a file problem', async () => {
    const failing = parseBatchFile(fixture('bom.csv'), 'bom.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      onRows: async () => {
        throw new Error('database is down');
      },
    });
    await expect(failing).rejects.toThrow('database is down');
  });

  it('takes the last rows before the parser ends, when a chunk is handed over as the file ends', async () => {
    // The last record of a file without a final line break is parsed only at the file's end; when it fills
    // a chunk, the read waits for that chunk to be taken before it ends, and every row is there.
    const lines = [HEADER, ...Array.from({ length: 12 }, (_, i) => row(`FX-END-${i + 1}`))];
    for (const ending of ['', '\r', '\r\n']) {
      const path = await tempCsv(`${lines.join('\r\n')}${ending}`);
      for (const chunkSize of [1, 3, 4, 6, 12]) {
        const taken: number[] = [];
        const result = await parseBatchFile(path, 'batch.csv', {
          format: DEFAULT_BATCH_FORMAT,
          rules: DEFAULT_VALIDATION_RULES,
          chunkSize,
          readChunkBytes: 64,
          onRows: async (rows) => {
            // Slow to take the last chunk: a read that ended before it was taken would be done first.
            await new Promise((resolve) => setTimeout(resolve, rows.some((r) => r.line === 13) ? 30 : 1));
            for (const r of rows) taken.push(r.line);
          },
        });
        // Without a final line break the last row may be cut: read, and the file refused.
        expect(codes(result.fileErrors), `${JSON.stringify(ending)} in chunks of ${chunkSize}`).toEqual(
          ending === '' ? ['FILE_UNTERMINATED'] : [],
        );
        expect(taken, `${JSON.stringify(ending)} in chunks of ${chunkSize}`).toEqual(Array.from({ length: 12 }, (_, i) => i + 2));
        expect(result.rowCount).toBe(12);
      }
    }
  });

  it('names the line of a syntax error late in a file while earlier rows are still being taken', async () => {
    // Quoted line breaks early on (each row two lines), then a bare quote on the 2,500th row.
    const lines = [HEADER];
    for (let i = 1; i <= 2500; i++) {
      const over: Record<string, string> = i <= 10 ? { 'beneficiary.accountName': '"Juan\r\nCruz"' } : {};
      lines.push(row(`FX-LATE-${i}`, i === 2500 ? { 'sender.lastName': 'O"Brien' } : over));
    }
    const path = await tempCsv(`${lines.join('\r\n')}\r\n${row('FX-LATE-2501', { 'sender.lastName': '"Open' })}\r\n`);
    for (const chunkSize of [7, 100, 10_000]) {
      const result = await parseBatchFile(path, 'batch.csv', {
        format: DEFAULT_BATCH_FORMAT,
        rules: DEFAULT_VALIDATION_RULES,
        chunkSize,
        readChunkBytes: 4096,
        onRows: () => new Promise((resolve) => setTimeout(resolve, 1)),
      });
      expect(
        result.fileErrors.map((e) => [e.code, e.line]),
        `chunks of ${chunkSize}`,
      ).toEqual([['MALFORMED_QUOTES', 2511]]);
    }
  });

  it('stops when aborted', async () => {
    const controller = new AbortController();
    const lines = [HEADER, ...Array.from({ length: 50 }, (_, i) => row(`FX-AB-${i + 1}`))];
    const path = await tempCsv(`${lines.join('\n')}\n`);
    let calls = 0;
    const run = parseBatchFile(path, 'batch.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      chunkSize: 5,
      signal: controller.signal,
      onRows: async () => {
        calls++;
        controller.abort();
      },
    });
    await expect(run).rejects.toMatchObject({ name: 'AbortError' });
    expect(calls).toBe(1);
  });
});

describe('a file that may be a cut upload', () => {
  const rows = [HEADER, row('FX-CUT-1'), row('FX-CUT-2'), row('FX-CUT-3')];
  const fields = (line: string, n: number): string => line.split(',').slice(0, n).join(',');

  it('is refused as incomplete when its last row has fewer fields than the header, with or without a line break', async () => {
    for (const ending of ['', '\n']) {
      const { result } = await parseCollect(await tempCsv(`${[...rows.slice(0, 3), fields(rows[3] as string, 5)].join('\n')}${ending}`));
      expect(result.fileErrors.map((e) => [e.code, e.line])).toEqual([['FILE_INCOMPLETE', 4]]);
      expect(result.fileErrors[0]?.message).toBe(
        "the upload looks incomplete (the file ends inside row 3): its last row, on line 4, has 5 of the header's 12 fields; upload the whole file again",
      );
    }
  });

  it('keeps a short row before the last one a row error', async () => {
    const { result, rows: read } = await parseCollect(await tempCsv(`${[rows[0], fields(rows[1] as string, 5), rows[2]].join('\n')}\n`));
    expect(result.fileErrors).toEqual([]);
    expect(read.map((r) => codes(r.errors))).toEqual([['COLUMN_COUNT_MISMATCH'], []]);
  });

  it('is refused when it does not end with a line break, a cut amount included', async () => {
    // The amount last, cut from 1500.50 to 150: the row still validates.
    const header = [...FIELD_PATHS.filter((f) => f !== 'payoutAmount'), 'payoutAmount' as const];
    const line = (ref: string, amount: string): string =>
      header.map((f) => ({ ...VALID_ROW, merchantReferenceId: ref, payoutAmount: amount })[f]).join(',');
    const text = [header.join(','), line('FX-AMT-1', '1500.50'), line('FX-AMT-2', '150')].join('\n');
    const { result, rows: read } = await parseCollect(await tempCsv(text));
    expect(read.map((r) => [r.line, r.state, r.request?.payoutAmount])).toEqual([
      [2, 'READY', '1500.5'],
      [3, 'READY', '150'],
    ]);
    expect(result.fileErrors.map((e) => [e.code, e.line, e.message])).toEqual([['FILE_UNTERMINATED', 3, UNTERMINATED_REASON]]);
    // The same file with its line break is whole.
    expect((await parseCollect(await tempCsv(`${text}\n`))).result.fileErrors).toEqual([]);
  });

  it('is read as whole without a final line break when a matching control trailer vouches for it', async () => {
    const trailer = '#CONTROL,rows,3\n#CONTROL,total,PHP,301.5';
    const withTrailer = await parseCollect(await tempCsv(`${rows.join('\n')}\n${trailer}`));
    expect(withTrailer.result.fileErrors).toEqual([]);
    expect(withTrailer.result.controlTotals).toHaveLength(1);

    // A sidecar is an upload of its own: a cut inside the last value can leave it matching (here the
    // account number, last, lost a digit), so it does not vouch for the file's end.
    const header = [...FIELD_PATHS.filter((f) => f !== 'beneficiary.accountNumber'), 'beneficiary.accountNumber' as const];
    const line = (ref: string, account: string): string =>
      header.map((f) => (f === 'beneficiary.accountNumber' ? account : { ...VALID_ROW, merchantReferenceId: ref }[f])).join(',');
    const path = await tempCsv([header.join(','), line('FX-ACC-1', '12345678901'), line('FX-ACC-2', '1234567890')].join('\n'));
    // Two rows of 100.50 PHP each (VALID_ROW).
    await writeFile(`${path}.ctl`, '#CONTROL,rows,2\n#CONTROL,total,PHP,201.00\n');
    const cutWithSidecar = (await parseCollect(path)).result;
    expect(cutWithSidecar.controlTotals).toHaveLength(1);
    expect(cutWithSidecar.fileErrors.map((e) => [e.code, e.line, e.message])).toEqual([['FILE_UNTERMINATED', 3, UNTERMINATED_REASON]]);
    // With its line break, the same file and sidecar are whole.
    await writeFile(path, `${[header.join(','), line('FX-ACC-1', '12345678901'), line('FX-ACC-2', '1234567890')].join('\n')}\n`);
    expect((await parseCollect(path)).result.fileErrors).toEqual([]);

    // Totals that do not match vouch for nothing: both problems are named.
    const cut = await parseCollect(await tempCsv(`${rows.join('\n')}\n#CONTROL,rows,3\n#CONTROL,total,PHP,30`));
    expect(codes(cut.result.fileErrors)).toEqual(['CONTROL_TOTAL_MISMATCH', 'FILE_UNTERMINATED']);
  });

  it('is read as whole without a final line break when a done marker came with it', async () => {
    const path = await tempCsv(rows.join('\n'));
    const result = await parseBatchFile(path, 'batch.csv', {
      format: DEFAULT_BATCH_FORMAT,
      rules: DEFAULT_VALIDATION_RULES,
      doneMarker: true,
      onRows: () => Promise.resolve(),
    });
    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(3);
  });

  it('is decided by its end, its control trailer and its done marker', () => {
    const verdicts: [boolean, boolean, boolean, string | null][] = [];
    for (const endsWithLineBreak of [true, false])
      for (const controlTotalsMatched of [true, false])
        for (const doneMarker of [true, false])
          verdicts.push([
            endsWithLineBreak,
            controlTotalsMatched,
            doneMarker,
            unterminatedFileProblem({ endsWithLineBreak, controlTotalsMatched, doneMarker }),
          ]);
    expect(verdicts.filter(([, , , problem]) => problem !== null)).toEqual([[false, false, false, UNTERMINATED_REASON]]);
  });
});

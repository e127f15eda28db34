/**
 * The outbox files of an upload that went on (src/report/continued.ts): a
 * remainder line keeps the sender's bytes unless a cell would run as a
 * formula, which is escaped with `'` and the line written again (delimiter
 * and line break kept); no remainder file without a line; the .xlsx twin of
 * a remainder holds its rows as the intake reads them; the notice's records.
 */
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { remainderLine, uploadContinuedRecords, writeRemainderFile, writeRemainderXlsx, type InputLine } from '../../src/report/index.js';
import { useTempDirs } from './tmp.js';

const tempDir = useTempDirs();

function line(text: string, fields: string[], n = 2): InputLine {
  return { line: n, bytes: Buffer.from(text), fields, end: 0 };
}

describe('remainder lines', () => {
  it('keep their own bytes when no cell would run as a formula (a negative plain number would not)', () => {
    const input = line('A-1; -5 ;"x, y"\r\n', ['A-1', ' -5 ', 'x, y']);
    expect(remainderLine(input, ';')).toEqual({ bytes: input.bytes, escaped: false });
    expect(remainderLine(line('-5,-\n', ['-5', '-']), ',').escaped).toBe(false);
  });

  it('are written again from their cells when one would: that cell escaped, the delimiter and line break kept', () => {
    const written = remainderLine(line('R-1;=HYPERLINK("http://e";"c");+1\r\n', ['R-1', '=HYPERLINK("http://e";"c")', '+1']), ';');
    expect(written.escaped).toBe(true);
    expect(Buffer.from(written.bytes).toString('utf8')).toBe(`R-1;"'=HYPERLINK(""http://e"";""c"")";'+1\r\n`);
    expect(Buffer.from(remainderLine(line('R-2,@SUM(A1)\n', ['R-2', '@SUM(A1)']), ',').bytes).toString('utf8')).toBe("R-2,'@SUM(A1)\n");
  });
});

describe('writeRemainderFile', () => {
  it('writes nothing when there is no line, else the header then the lines, counted', async () => {
    const dir = await tempDir();
    const header = line('id,name\n', ['id', 'name'], 1);
    async function* none(): AsyncGenerator<InputLine> {}
    expect(await writeRemainderFile(dir, { fileName: 'x.csv' }, header, none(), { delimiter: ',' })).toBeNull();
    async function* two(): AsyncGenerator<InputLine> {
      yield { ...line('1,ann\n', ['1', 'ann'], 5), end: 20 };
      yield { ...line('2,=1+1\n', ['2', '=1+1'], 6), end: 27 };
    }
    const file = await writeRemainderFile(dir, { fileName: 'x.csv', outboxName: 'B1_x.csv' }, header, two(), { delimiter: ',' });
    expect(file).toMatchObject({ rows: 2, escapedRows: 1, firstLine: 5, lastLine: 6, toByte: 27 });
    expect(await readFile(file?.path ?? '', 'utf8')).toBe("id,name\n1,ann\n2,'=1+1\n");
    expect(file?.path.endsWith('B1_x.csv.remainder.csv')).toBe(true);
    // With a BOM like every outbox file, unless the header brings its own.
    const withBom = await writeRemainderFile(dir, { fileName: 'y.csv' }, header, two(), { delimiter: ',', bom: true });
    expect(await readFile(withBom?.path ?? '', 'utf8')).toBe("\uFEFFid,name\n1,ann\n2,'=1+1\n");
    const own = await writeRemainderFile(dir, { fileName: 'z.csv' }, line('\uFEFFid,name\n', ['\uFEFFid', 'name'], 1), two(), {
      delimiter: ',',
      bom: true,
    });
    expect(await readFile(own?.path ?? '', 'utf8')).toBe("\uFEFFid,name\n1,ann\n2,'=1+1\n");
  });
});

/** The data rows of a workbook's first sheet, each cell's value as text. */
async function sheetValues(path: string): Promise<string[][]> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const rows: string[][] = [];
  (wb.worksheets[0] as ExcelJS.Worksheet).eachRow((row, n) => {
    if (n > 1) rows.push((row.values as unknown[]).slice(1).map((v) => String(v ?? '')));
  });
  return rows;
}

describe('writeRemainderXlsx', () => {
  const header = 'id;bank';
  const rows = [
    ['R-1', '0012'],
    ['R-2', 'x\ny'],
    ['R-3', '0034'],
  ];
  const body = (ends: string[]): string =>
    [header, 'R-1;0012', 'R-2;"x\ny"', 'R-3;0034'].map((text, i) => `${text}${ends[i % ends.length] as string}`).join('');

  it('reads the rows as the intake does: LF, CRLF and a lone CR, mixed freely after any header line end', async () => {
    const dir = await tempDir();
    const cases = {
      lf: ['\n'],
      crlf: ['\r\n'],
      cr: ['\r'],
      crlfHeader: ['\r\n', '\n'],
      lfHeader: ['\n', '\r\n'],
      all: ['\n', '\r', '\r\n'],
    };
    for (const [name, ends] of Object.entries(cases)) {
      const csv = join(dir, `${name}.remainder.csv`);
      await writeFile(csv, body(ends));
      const xlsx = await writeRemainderXlsx(csv, rows.length, { delimiter: ';', encoding: 'utf-8' });
      expect(await sheetValues(xlsx), name).toEqual(rows);
    }
  });

  it('writes a cell past the header as its own, so the row shows whole', async () => {
    const dir = await tempDir();
    const csv = join(dir, 'wide.remainder.csv');
    await writeFile(csv, 'id;bank\nR-1;0012;extra\n');
    expect(await sheetValues(await writeRemainderXlsx(csv, 1, { delimiter: ';', encoding: 'utf-8' }))).toEqual([['R-1', '0012', 'extra']]);
  });

  it('is refused, and an older twin removed, when it would not hold the rows the CSV was written with', async () => {
    const dir = await tempDir();
    const csv = join(dir, 'x.remainder.csv');
    await writeFile(csv, body(['\n']));
    const xlsx = await writeRemainderXlsx(csv, rows.length, { delimiter: ';', encoding: 'utf-8' });
    await expect(writeRemainderXlsx(csv, rows.length + 1, { delimiter: ';', encoding: 'utf-8' })).rejects.toMatchObject({
      code: 'REPORT_TWIN_ROWS',
      message:
        'x.remainder.csv was written with 4 row(s) but reads back as 3: no .xlsx twin is written; use the CSV, which holds every row',
    });
    expect(existsSync(xlsx)).toBe(false);
  });
});

describe('the upload-continued notice', () => {
  it('says what was taken, what became of it, and what came after it', () => {
    const records = uploadContinuedRecords(
      { batchId: 'B1', fileName: 'x.csv' },
      {
        takenBytes: 100,
        sizeNow: 180,
        takenAt: '2026-01-05T09:00:00.000Z',
        batchState: 'COMPLETE',
        batchNote: 'This batch is the rows read.',
        read: { firstLine: 2, lastLine: 4, rows: 3, outcomes: [{ status: 'PAID', currency: 'PHP', rows: 3, amount: '301.5' }] },
        rewritten: false,
        cutLine: null,
        rest: {
          fromByte: 100,
          wholeFile: false,
          fileName: 'B1_x.csv.remainder.csv',
          file: { path: '/o/B1_x.csv.remainder.csv', rows: 2, escapedRows: 0, firstLine: 5, lastLine: 6, toByte: 170 },
          controlLines: 0,
          partial: { line: 7, fromByte: 170, toByte: 180 },
        },
      },
    );
    expect(records.map((r) => r.slice(0, 11))).toEqual([
      ['B1', 'x.csv', 'TAKEN', '2', '4', '3', '0', '100', 'COMPLETE', '', ''],
      ['B1', 'x.csv', 'READ', '', '', '3', '', '', 'PAID', 'PHP', '301.5'],
      ['B1', 'x.csv', 'NOT_READ', '5', '6', '2', '100', '170', 'NOT_PAID', '', ''],
      ['B1', 'x.csv', 'PARTIAL_LINE', '7', '', '', '170', '180', 'NOT_PAID', '', ''],
    ]);
    expect(records[0]?.[11]).toBe(
      'the file was taken at 2026-01-05T09:00:00.000Z with 100 bytes and nothing after byte 100 was read; it is now 180 bytes. This batch is the rows read.',
    );
    expect(records[2]?.[11]).toContain('NOT paid; they are in B1_x.csv.remainder.csv');
  });
});

/**
 * .xlsx batches read as a clerk sees them: text cells as written, numbers as
 * exact decimals, identifiers kept with their zero padding; dates and long
 * numbers in identifier columns refused as what a spreadsheet made of them;
 * workbooks that cannot be a batch refused whole with a reason, and so are
 * rows and columns hidden from the clerk, which would be paid unseen.
 */
import { createReadStream } from 'node:fs';
import { open, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { exactNumberText, sheetRows } from '../../src/ingest/xlsx/index.js';
import { readerInput } from '../../src/ingest/xlsx/reader-input.js';
import { directoryStart } from '../../src/ingest/xlsx/zip-directory.js';
import { CellSet, SheetScan, scanProblem, scanWorkbook, type WorkbookScan } from '../../src/ingest/xlsx/scan.js';
import { CellStyles, StylesScan } from '../../src/ingest/xlsx/styles.js';
import { FIELD_PATHS, errorPlace, type FieldPath, type RowError } from '../../src/ingest/rules/index.js';
import { VALID_ROW } from '../support/rows.js';
import { reorderZip, writeZip, zipEntries } from '../support/zip.js';
import { codes, parseCollect, tempDir } from './helpers.js';

type CellInput = string | number | Date | { formula: string; result?: number } | { error: string } | null;

/** A workbook with `rows` (a header row first) on sheet "Payouts", and more sheets if asked. */
async function workbook(
  rows: CellInput[][],
  opts: { extraSheets?: string[]; numFmt?: Record<number, string>; stored?: boolean } = {},
): Promise<string> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Payouts');
  rows.forEach((cells, r) => {
    const row = ws.getRow(r + 1);
    cells.forEach((value, c) => {
      if (value === null) return;
      const cell = row.getCell(c + 1);
      cell.value = value as ExcelJS.CellValue;
      const fmt = opts.numFmt?.[c];
      if (fmt && r > 0) cell.numFmt = fmt;
    });
    row.commit();
  });
  for (const name of opts.extraSheets ?? []) wb.addWorksheet(name).getCell('A1').value = 'notes';
  const path = join(await tempDir(), 'batch.xlsx');
  await wb.xlsx.writeFile(path, opts.stored ? { zip: { compression: 'STORE', compressionOptions: null } } : {});
  return path;
}

const HEADER: string[] = [...FIELD_PATHS];

function dataRow(ref: string, overrides: Partial<Record<FieldPath, CellInput>> = {}): CellInput[] {
  const values: Record<string, CellInput> = { ...VALID_ROW, merchantReferenceId: ref, ...overrides };
  return FIELD_PATHS.map((f) => values[f] ?? null);
}

const col = (field: FieldPath): number => FIELD_PATHS.indexOf(field);

function parseXlsx(path: string, format: Record<string, unknown> = {}) {
  return parseCollect(path, { format, displayName: 'batch.xlsx' });
}

/** A "Payouts" sheet of `rows` (a header row first), each cell with the number format in `formats` under its "row,column". */
async function formatted(rows: CellInput[][], formats: Record<string, string> = {}): Promise<string> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Payouts');
  rows.forEach((cells, r) =>
    cells.forEach((value, c) => {
      if (value === null) return;
      const cell = ws.getRow(r + 1).getCell(c + 1);
      cell.value = value as ExcelJS.CellValue;
      const fmt = formats[`${r},${c}`];
      if (fmt) cell.numFmt = fmt;
    }),
  );
  const path = join(await tempDir(), 'batch.xlsx');
  await wb.xlsx.writeFile(path);
  return path;
}

describe('xlsx batches', () => {
  it('reads text cells as written and numbers exactly, with sheet row numbers as lines', async () => {
    const path = await workbook(
      [
        HEADER,
        dataRow('X-1', { payoutAmount: 1500.5, 'beneficiary.accountNumber': '0012345670000' }),
        [],
        dataRow('X-2', { payoutAmount: '250.00', 'beneficiary.accountNumber': 1234567890 }),
        dataRow('X-3', { payoutAmount: 0.1, 'beneficiary.accountNumber': 12345678, 'sender.idValue': 'P1' }),
      ],
      { numFmt: { [col('beneficiary.accountNumber')]: '000000000000' } },
    );
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(result.kind).toBe('xlsx');
    expect(rows.map((r) => [r.line, r.state])).toEqual([
      [2, 'READY'],
      [4, 'READY'],
      [5, 'READY'],
    ]);
    expect(rows.map((r) => r.request?.payoutAmount)).toEqual(['1500.5', '250', '0.1']);
    // Text stays text; a number shown with a zero-padded format is read as shown.
    expect(rows.map((r) => r.request?.beneficiary.accountNumber)).toEqual(['0012345670000', '001234567890', '000012345678']);
    expect(result.totals).toEqual({ PHP: '1750.6' });
  });

  it('refuses an identifier a spreadsheet turned into a long number, and a reference turned into a date', async () => {
    const path = await workbook([
      HEADER,
      dataRow('X-1', { 'beneficiary.accountNumber': 1.21800012345679e17, payoutCurrency: 'MXN', 'beneficiary.bankCode': '012' }),
      dataRow('X-2', { merchantReferenceId: new Date(Date.UTC(2026, 0, 7)) }),
      dataRow('X-3', { payoutAmount: 1234.123456789012 }),
    ]);
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => codes(r.errors))).toEqual([['SCIENTIFIC_NOTATION'], ['DATE_CONVERTED'], ['AMOUNT_NOT_EXACT']]);
    expect(rows[0]?.errors[0]?.message).toContain('a number too long for a spreadsheet to keep: its last digits are lost');
    // Never any digit of the account.
    expect(rows[0]?.errors[0]?.message).not.toMatch(/1\.218|121800/);
    expect(rows[1]?.errors[0]?.message).toContain('is a date cell (2026-01-07)');
    expect(rows[1]?.errors[0]?.column).toBe('merchantReferenceId');
  });

  it('refuses a formula, several sheets, and a missing named sheet; reads a named sheet', async () => {
    const formula = await workbook([HEADER, dataRow('X-1', { payoutAmount: { formula: '100+0.5', result: 100.5 } })]);
    const f = await parseXlsx(formula);
    expect(codes(f.result.fileErrors)).toEqual(['XLSX_FORMULA']);
    expect(f.result.fileErrors[0]?.message).toContain(`cell D2 holds a formula`);
    expect(f.result.fileErrors[0]?.line).toBe(2);

    const two = await workbook([HEADER, dataRow('X-1')], { extraSheets: ['Notes'] });
    const t = await parseXlsx(two);
    expect(codes(t.result.fileErrors)).toEqual(['XLSX_SHEETS']);
    expect(t.result.fileErrors[0]?.message).toContain('several sheets ("Payouts", "Notes")');
    const named = await parseXlsx(two, { sheet: 'Payouts' });
    expect(named.result.fileErrors).toEqual([]);
    expect(named.rows.map((r) => r.state)).toEqual(['READY']);
    const missing = await parseXlsx(two, { sheet: 'Batch' });
    expect(missing.result.fileErrors[0]?.message).toContain('no sheet named "Batch"');
  });

  it('reads an uncompressed workbook whole, every time', async () => {
    // Its parts reach the reader faster than it takes them: read as they come, the last ones would be lost.
    const stored = await workbook([HEADER, dataRow('X-1'), dataRow('X-2')], { extraSheets: ['Notes'], stored: true });
    for (let i = 0; i < 20; i++) {
      const { result, rows } = await parseXlsx(stored, { sheet: 'Payouts' });
      expect(result.fileErrors).toEqual([]);
      expect(rows.map((r) => [r.line, r.state])).toEqual([
        [2, 'READY'],
        [3, 'READY'],
      ]);
    }
    expect(codes((await parseXlsx(stored)).result.fileErrors)).toEqual(['XLSX_SHEETS']);

    // Uncompressed in the order Excel writes (the workbook first, the strings after the sheets)...
    const entries = await zipEntries(stored);
    const order = ['[Content_Types].xml', '_rels/.rels', 'xl/workbook.xml', 'xl/_rels/workbook.xml.rels'];
    const excel = join(await tempDir(), 'excel.xlsx');
    const parts = [...order, ...[...entries.keys()].filter((name) => !order.includes(name))].map((name): [string, Buffer] => [
      name,
      entries.get(name)!,
    ]);
    await writeZip(excel, parts, [...entries.keys()]);
    // ... and with a comment that holds bytes of an end record.
    const commented = join(await tempDir(), 'commented.xlsx');
    const zip = await readFile(stored);
    const fake = Buffer.alloc(22);
    fake.writeUInt32LE(0x06054b50, 0);
    fake.writeUInt32LE(10, 16);
    zip.writeUInt16LE(fake.length, zip.length - 2);
    await writeFile(commented, Buffer.concat([zip, fake]));
    for (const path of [excel, commented]) {
      for (let i = 0; i < 10; i++) {
        const { result, rows } = await parseXlsx(path, { sheet: 'Payouts' });
        expect(result.fileErrors).toEqual([]);
        expect(rows).toHaveLength(2);
      }
    }
  });

  it('refuses a workbook cut off or damaged as unreadable, never waiting for the rest', async () => {
    const rows = Array.from({ length: 300 }, (_, i) => dataRow(`X-${i}`));
    for (const stored of [false, true]) {
      const path = await workbook([HEADER, ...rows], { extraSheets: ['Notes'], stored });
      const whole = await readFile(path);
      const cases: [string, number | undefined][] = [0.05, 0.1, 0.3, 0.5, 0.9].map((share) => [path, Math.floor(whole.length * share)]);
      // Compressed bytes flipped: of a part read, and of one only passed over.
      for (const [part, from, to] of [
        ['xl/styles.xml', 40, 240],
        ['[Content_Types].xml', 4, 14],
      ] as const) {
        const at = whole.indexOf(part) + part.length;
        const damaged = join(await tempDir(), 'damaged.xlsx');
        const flipped = Buffer.from(whole.subarray(at + from, at + to).map((b) => b ^ 0xff));
        await writeFile(damaged, Buffer.concat([whole.subarray(0, at + from), flipped, whole.subarray(at + to)]));
        if (!stored) cases.push([damaged, undefined]);
      }
      for (const [file, bytes] of cases) {
        const read = (async () => {
          for await (const row of sheetRows(file, 'Payouts', bytes)) void row;
        })();
        await expect(read).rejects.toMatchObject({ code: 'XLSX_UNREADABLE' });
      }
    }
  });

  it('refuses a workbook whose part does not match its checksum, which would read as other text', async () => {
    const refusals = async (path: string) =>
      (await parseXlsx(path, { sheet: 'Payouts' })).result.fileErrors.map((e) => [e.code, e.message]);
    // One digit of the amount changed, in a part stored uncompressed: read whole, it would pay 900.50.
    const damage = async (path: string) => {
      const bytes = await readFile(path);
      const at = bytes.indexOf('100.50');
      expect(at).toBeGreaterThan(0);
      bytes.write('900.50', at);
      await writeFile(path, bytes);
    };
    const unreadable = (part: string, why: string) => [
      [
        'XLSX_UNREADABLE',
        `the workbook cannot be read (part ${part} ${why}): it may be damaged or its upload incomplete; save it again as an Excel Workbook (.xlsx) and drop it again`,
      ],
    ];
    const damaged = 'is damaged (its checksum does not match)';
    const entries = await zipEntries(await workbook([HEADER, dataRow('X-1')], { extraSheets: ['Notes'], stored: true }));
    const zipOf = async (descriptors: boolean) => {
      const path = join(await tempDir(), 'batch.xlsx');
      await writeZip(path, [...entries], [...entries.keys()], { descriptors });
      return path;
    };
    // Checksums in the parts' own headers and in the directory, or only in the directory and after each part's data.
    for (const descriptors of [false, true]) {
      const path = await zipOf(descriptors);
      expect(await refusals(path)).toEqual([]);
      await damage(path);
      expect(await refusals(path)).toEqual(unreadable('xl/sharedStrings.xml', damaged));
    }

    // With no directory to be found, the scan checks a part against its own header's checksum, and refuses a part
    // whose checksum only the directory would tell.
    const noDirectory = async (descriptors: boolean) => {
      const path = await zipOf(descriptors);
      const zip = await readFile(path);
      await writeFile(path, Buffer.concat([zip, Buffer.from('\n')]));
      return path;
    };
    const headed = await noDirectory(false);
    expect((await scanWorkbook(() => createReadStream(headed))).sheets.size).toBe(2);
    await damage(headed);
    await expect(scanWorkbook(() => createReadStream(headed))).rejects.toThrow(`part xl/sharedStrings.xml ${damaged}`);
    expect(await refusals(await noDirectory(true))).toEqual(
      unreadable('xl/_rels/workbook.xml.rels', "cannot be checked: the zip's directory is not found"),
    );

    // A part read that the directory does not list: the name in the directory damaged.
    const unlisted = await zipOf(false);
    const listed = await readFile(unlisted);
    listed.write('xl/styleZ.xml', listed.lastIndexOf('xl/styles.xml'));
    await writeFile(unlisted, listed);
    expect(await refusals(unlisted)).toEqual(unreadable('xl/styles.xml', "is not in the zip's directory"));
  });

  it("ends the reader's input short when the file cannot be read, telling why", async () => {
    const path = await workbook([HEADER, dataRow('X-1')]);
    const handle = await open(path, 'r');
    const size = (await handle.stat()).size;
    await handle.close();
    const reading = readerInput(handle, size, null, new Set(), 50);
    const chunks: Buffer[] = [];
    for await (const chunk of reading.input) chunks.push(chunk as Buffer);
    expect(chunks).toEqual([]);
    expect(reading.failure()).toBeInstanceOf(Error);
  });

  it('lets the held-back zip directory go once exceljs has given nothing for a while: never a wait for ever', async () => {
    const path = await workbook([HEADER, dataRow('X-1')]);
    const handle = await open(path, 'r');
    try {
      const size = (await handle.stat()).size;
      const directory = await directoryStart(handle, size);
      expect(directory).toBeGreaterThan(0);
      // An entry the reader never reports.
      const reading = readerInput(handle, size, directory, new Set(['worksheet 99']), 50);
      const reader = new ExcelJS.stream.xlsx.WorkbookReader(reading.input, { entries: 'emit' });
      let rows = 0;
      for await (const sheet of reader) for await (const _ of sheet) rows++;
      reading.close();
      expect(rows).toBe(2);
    } finally {
      await handle.close();
    }
  });

  it('refuses an encrypted workbook and a file that is no workbook', async () => {
    const dir = await tempDir();
    const encrypted = join(dir, 'enc.xlsx');
    await writeFile(encrypted, Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1, 0, 0, 0, 0]));
    const e = await parseXlsx(encrypted);
    expect(codes(e.result.fileErrors)).toEqual(['XLSX_UNREADABLE']);
    expect(e.result.fileErrors[0]?.message).toContain('password-protected');
    const csv = join(dir, 'renamed.xlsx');
    await writeFile(csv, `${HEADER.join(',')}\n`);
    const c = await parseXlsx(csv);
    expect(c.result.fileErrors[0]?.message).toContain('not an .xlsx workbook');
    const good = await workbook([HEADER, dataRow('X-1')]);
    const cut = join(dir, 'cut.xlsx');
    const { readFile } = await import('node:fs/promises');
    await writeFile(cut, (await readFile(good)).subarray(0, 600));
    const k = await parseXlsx(cut);
    expect(codes(k.result.fileErrors)).toEqual(['XLSX_UNREADABLE']);
  });

  it('refuses merged header cells, naming the column left without a header', async () => {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Payouts');
    // The sender's names under one merged header, as a clerk lays out a sheet.
    ws.addRow([...HEADER.slice(0, 4), 'Sender name', '', ...HEADER.slice(6)]);
    ws.mergeCells('E1:F1');
    ws.addRow(dataRow('X-1') as ExcelJS.CellValue[]);
    const path = join(await tempDir(), 'merged.xlsx');
    await wb.xlsx.writeFile(path);
    const { result } = await parseXlsx(path);
    const unknown = result.fileErrors.filter((e) => e.code === 'HEADER_UNKNOWN');
    expect(unknown.map((e) => [e.columnIndex, e.message])).toEqual([
      [4, expect.stringContaining('"Sender name" is not a column payoutd knows')],
      [5, 'this column has no header (merged header cells?); name every column, unmerging merged cells'],
    ]);
  });

  it('refuses a row with an error cell (a formula that failed), naming its line and column', async () => {
    const path = await workbook([
      HEADER,
      dataRow('X-1', { 'sender.idValue': { error: '#N/A' }, 'beneficiary.accountName': { error: '#REF!' } }),
      dataRow('X-2'),
      // An error newer than any list of them is an error cell all the same.
      dataRow('X-3', { payoutAmount: { error: '#BLOCKED!' } }),
    ]);
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors)])).toEqual([
      [2, 'INVALID', ['SPREADSHEET_ERROR_VALUE', 'SPREADSHEET_ERROR_VALUE']],
      [3, 'READY', []],
      [4, 'INVALID', ['SPREADSHEET_ERROR_VALUE']],
    ]);
    expect(rows[2]?.errors[0]?.message).toBe(
      'the amount cell holds #BLOCKED!, the error a spreadsheet shows for a formula that failed; type the amount itself',
    );
    const [id, name] = rows[0]?.errors ?? [];
    expect([id?.column, id?.columnIndex, name?.column, name?.columnIndex]).toEqual([
      'sender.idValue',
      col('sender.idValue'),
      'beneficiary.accountName',
      col('beneficiary.accountName'),
    ]);
    expect(id?.message).toContain("the sender's id number cell holds #N/A, the error a spreadsheet shows for a formula that failed");
    expect(name?.message).toContain('holds #REF!');
  });

  it('names a row whose only values are refused cells, never dropping it as blank', async () => {
    const amount = col('payoutAmount');
    const onlyError = FIELD_PATHS.map(() => ({ error: '#N/A' }));
    const onlyAmount: CellInput[] = FIELD_PATHS.map((_, c) => (c === amount ? 2500.75 : null));
    // Spaces hidden by a format show nothing either way: a blank row, skipped.
    const spaces = FIELD_PATHS.map(() => ' ');
    const path = await formatted([HEADER, dataRow('B-1'), onlyError, onlyAmount, dataRow('B-4'), spaces, dataRow('B-5')], {
      [`3,${amount}`]: '#,##0',
      ...Object.fromEntries(
        FIELD_PATHS.flatMap((_, c) => [
          [`4,${c}`, ';;;'],
          [`5,${c}`, ';;;'],
        ]),
      ),
    });
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state])).toEqual([
      [2, 'READY'],
      [3, 'INVALID'],
      [4, 'INVALID'],
      [5, 'INVALID'],
      [7, 'READY'],
    ]);
    expect(codes(rows[1]?.errors ?? [])).toEqual(FIELD_PATHS.map(() => 'SPREADSHEET_ERROR_VALUE'));
    // A stray amount is an incomplete row: every other field is said to be missing.
    expect(codes(rows[2]?.errors ?? []).filter((c) => c !== 'REQUIRED')).toEqual(['AMOUNT_FORMAT_HIDES']);
    expect(codes(rows[3]?.errors ?? [])).toContain('CELL_FORMAT_HIDES');
  });

  it('refuses a row with a value past the header, naming its column, not a delimiter a sheet does not have', async () => {
    // Column M after a 12-column header; on the next row, column N with M left empty.
    const path = await workbook([HEADER, [...dataRow('S-1'), 'note: pay 1000'], [...dataRow('S-2'), null, 'x'], dataRow('S-3')]);
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors)])).toEqual([
      [2, 'INVALID', ['COLUMN_COUNT_MISMATCH']],
      [3, 'INVALID', ['COLUMN_COUNT_MISMATCH']],
      [4, 'READY', []],
    ]);
    const [m, n] = rows.map((r) => r.errors[0] as RowError);
    expect([m?.column, m?.columnIndex, n?.columnIndex]).toEqual([null, 12, 13]);
    expect(errorPlace(m as RowError)).toBe('line 2, column M');
    expect(m?.message).toBe(
      'column M holds a value but has no header (the header ends at column L): delete the value, or move it into the column it belongs in',
    );
    expect(n?.message).toMatch(/^column N holds a value but has no header/);
  });

  it('takes control totals from trailer rows', async () => {
    const path = await workbook([HEADER, dataRow('X-1'), dataRow('X-2'), ['#CONTROL', 'rows', '3'], ['#CONTROL', 'total', 'PHP', '201']]);
    const { result } = await parseXlsx(path);
    expect(codes(result.fileErrors)).toEqual(['CONTROL_ROWS_MISMATCH']);
    expect(result.fileErrors[0]?.line).toBe(4);
  });

  it('converts a number exactly, or says it cannot', () => {
    expect(exactNumberText(1500.5)).toBe('1500.5');
    expect(exactNumberText(0.1)).toBe('0.1');
    expect(exactNumberText(1e21)).toBe('1000000000000000000000');
    expect(exactNumberText(0.1 + 0.2)).toBeNull();
    expect(exactNumberText(Number.NaN)).toBeNull();
  });
});

describe('xlsx batches: a number cell whose format shows another value is refused, never paid as held', () => {
  it('refuses an account number or bank code shown with characters the cell does not hold', async () => {
    // Each account cell shows 000012345678 (with spaces for the first), and holds 12345678.
    const usd = { payoutCurrency: 'USD', 'beneficiary.bankCode': '021000021' } as const;
    const account = col('beneficiary.accountNumber');
    const formats = ['0000 0000 0000', '"0000"00000000', '000000000000;@', '000000000000'];
    const path = await formatted(
      [
        HEADER,
        ...formats.map((_, i) => dataRow(`A-${i + 1}`, { ...usd, 'beneficiary.accountNumber': 12345678 })),
        dataRow('A-5', { ...usd, 'beneficiary.bankCode': 21000021 }),
      ],
      { ...Object.fromEntries(formats.map((f, i) => [`${i + 1},${account}`, f])), [`5,${col('beneficiary.bankCode')}`]: '"0"00000000' },
    );
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors)])).toEqual([
      [2, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT']],
      [3, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT']],
      [4, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT']],
      [5, 'READY', []],
      [6, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT']],
    ]);
    // The all-zeros format pads, as shown.
    expect(rows[3]?.request?.beneficiary.accountNumber).toBe('000012345678');
    const first = rows[0]?.errors[0] as RowError;
    expect([errorPlace(first), first.message]).toEqual([
      'line 2, column K "beneficiary.accountNumber"',
      'the account number cell holds a number shown with the number format "0000 0000 0000", which can show characters the cell does not hold (leading zeros, spaces, text): the sheet may show another account number than would be paid; format the column as Text and type the account number again',
    ]);
    // Never a digit of the account; a bank code is no secret, and is named.
    for (const row of rows.slice(0, 3)) expect(row.errors[0]?.message).not.toMatch(/12345678/);
    const bank = rows[4]?.errors[0] as RowError;
    expect([errorPlace(bank), bank.message]).toEqual([
      'line 6, column L "beneficiary.bankCode"',
      'the bank code cell holds the number 21000021 shown with the number format "\\"0\\"00000000", which can show characters the cell does not hold (leading zeros, spaces, text): the sheet may show another bank code than would be paid; format the column as Text and type the bank code again',
    ]);
  });

  it('refuses an amount its format rounds, scales or shows as a percentage; reads one shown whole', async () => {
    const amount = col('payoutAmount');
    const cases: [number, string][] = [
      [1500.5, '#,##0'],
      [1500000, '#,##0,"K"'],
      [0.25, '0%'],
      [1500.5, '#,##0.00'],
      [1500, '#,##0'],
      [1500.25, '0.00'],
    ];
    const path = await formatted(
      [HEADER, ...cases.map(([value], i) => dataRow(`M-${i + 1}`, { payoutAmount: value }))],
      Object.fromEntries(cases.map(([, f], i) => [`${i + 1},${amount}`, f])),
    );
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors), r.request?.payoutAmount])).toEqual([
      [2, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
      [3, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
      [4, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
      [5, 'READY', [], '1500.5'],
      [6, 'READY', [], '1500'],
      [7, 'READY', [], '1500.25'],
    ]);
    expect(rows.slice(0, 3).map((r) => [errorPlace(r.errors[0] as RowError), r.errors[0]?.message])).toEqual([
      [
        'line 2, column D "payoutAmount"',
        'the amount cell holds 1500.5, but its number format "#,##0" shows no decimals, so it is rounded: the sheet shows another amount than would be paid; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again',
      ],
      [
        'line 3, column D "payoutAmount"',
        'the amount cell holds 1500000, but its number format "#,##0,\\"K\\"" shows it divided by a thousand: the sheet shows another amount than would be paid; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again',
      ],
      [
        'line 4, column D "payoutAmount"',
        'the amount cell holds 0.25, but its number format "0%" shows it as a percentage (a hundred times the value): the sheet shows another amount than would be paid; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again',
      ],
    ]);
  });

  it('refuses a control total its format rounds, naming the cell', async () => {
    const path = await formatted(
      [HEADER, dataRow('T-1', { payoutAmount: 1500.5 }), ['#CONTROL', 'rows', 1], ['#CONTROL', 'total', 'PHP', 1500.5]],
      { '3,3': '#,##0' },
    );
    const { result } = await parseXlsx(path);
    expect(result.fileErrors.map((e) => [e.line, e.code, e.message])).toEqual([
      [
        4,
        'CONTROL_INVALID',
        'the control line\'s cell D4 holds 1500.5, but its number format "#,##0" shows no decimals, so it is rounded: the sheet shows another value than the one checked; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again',
      ],
    ]);
  });
});

describe('xlsx batches: what the clerk does not see is not paid', () => {
  /** A "Payouts" sheet of `rows` (a header row first), changed by `edit` before it is written. */
  async function sheetFile(rows: CellInput[][], edit: (ws: ExcelJS.Worksheet, wb: ExcelJS.Workbook) => void): Promise<string> {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Payouts');
    for (const cells of rows) ws.addRow(cells);
    edit(ws, wb);
    const path = join(await tempDir(), 'batch.xlsx');
    await wb.xlsx.writeFile(path);
    return path;
  }

  it('refuses a sheet with rows filtered out or hidden, naming them, and reads none of its rows', async () => {
    // This week's rows shown, next week's filtered out of view: all in one workbook.
    const rows = [
      HEADER,
      dataRow('WEEK1-A'),
      dataRow('NEXT-B'),
      dataRow('WEEK1-C'),
      dataRow('NEXT-D'),
      dataRow('NEXT-E'),
      dataRow('WEEK1-F'),
    ];
    const path = await sheetFile(rows, (ws) => {
      ws.autoFilter = 'A1:L7';
      for (const n of [3, 5, 6]) ws.getRow(n).hidden = true;
    });
    const { result, rows: read } = await parseXlsx(path);
    expect(codes(result.fileErrors)).toEqual(['XLSX_HIDDEN']);
    expect(result.fileErrors[0]?.line).toBe(3);
    expect(result.fileErrors[0]?.message).toBe(
      'in sheet "Payouts", rows 3 and 5-6 are hidden or filtered out: payoutd would read hidden rows like any other, so nothing in this file is paid; unhide them, or delete the rows you do not mean to pay, and upload again',
    );
    expect(read).toEqual([]);

    // Many: the first runs, and how many more.
    const many = await sheetFile([HEADER, ...Array.from({ length: 30 }, (_, i) => dataRow(`X-${i}`))], (ws) => {
      for (let n = 3; n <= 31; n += 2) ws.getRow(n).hidden = true;
    });
    const m = await parseXlsx(many);
    expect(m.result.fileErrors[0]?.message).toContain('rows 3, 5, 7, 9, 11, 13, 15, 17, 19, 21 and 5 more are hidden or filtered out');
  });

  it('refuses hidden columns that hold values, naming their letters; a filter that hides nothing and empty hidden columns are fine', async () => {
    const hiddenId = await sheetFile([HEADER, dataRow('X-1'), dataRow('X-2')], (ws) => {
      ws.getColumn(col('sender.idValue') + 1).hidden = true;
      ws.getColumn(col('beneficiary.bankCode') + 1).hidden = true;
      ws.getRow(3).hidden = true;
    });
    const h = await parseXlsx(hiddenId);
    expect(codes(h.result.fileErrors)).toEqual(['XLSX_HIDDEN']);
    expect(h.result.fileErrors[0]?.message).toBe(
      'in sheet "Payouts", row 3 is hidden or filtered out, and columns I and L are hidden: payoutd would read hidden rows and columns like any other, so nothing in this file is paid; unhide them, or delete the rows you do not mean to pay, and upload again',
    );

    const fine = await sheetFile([HEADER, dataRow('X-1'), dataRow('X-2')], (ws) => {
      ws.autoFilter = 'A1:L3';
      // Columns past the last one hidden, as a clerk tidies a sheet; and a hidden row with nothing in it.
      ws.getColumn(13).hidden = true;
      ws.getColumn(14).hidden = true;
      ws.getRow(4).hidden = true;
    });
    const f = await parseXlsx(fine);
    expect(f.result.fileErrors).toEqual([]);
    expect(f.rows.map((r) => r.state)).toEqual(['READY', 'READY']);
  });

  it('refuses the sheet named in batch.format.sheet when it is hidden', async () => {
    const path = await sheetFile([HEADER, dataRow('X-1')], (ws, wb) => {
      ws.state = 'hidden';
      wb.addWorksheet('Notes').getCell('A1').value = 'notes';
    });
    const { result, rows } = await parseXlsx(path, { sheet: 'Payouts' });
    expect(codes(result.fileErrors)).toEqual(['XLSX_HIDDEN']);
    expect(result.fileErrors[0]?.message).toContain('the sheet "Payouts" is hidden in the workbook');
    expect(rows).toEqual([]);
  });

  it('refuses text stored inline in several runs (read as its last run only), naming the cell', async () => {
    // Written inline, as tools that write no shared strings do: "1" and a bold "500.50" show 1500.50.
    const inline = async (amount: ExcelJS.CellValue): Promise<string> => {
      const path = join(await tempDir(), 'inline.xlsx');
      const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useSharedStrings: false });
      const ws = wb.addWorksheet('Payouts');
      ws.addRow(HEADER).commit();
      ws.addRow(dataRow('X-1', { payoutAmount: null }).map((v, i) => (i === col('payoutAmount') ? amount : v))).commit();
      await wb.commit();
      return path;
    };
    const split = await parseXlsx(await inline({ richText: [{ text: '1' }, { text: '500.50', font: { bold: true } }] }));
    expect(codes(split.result.fileErrors)).toEqual(['XLSX_UNREADABLE']);
    expect(split.result.fileErrors[0]?.line).toBe(2);
    expect(split.result.fileErrors[0]?.message).toContain('cell D2 holds text stored in several differently formatted pieces');
    expect(split.rows).toEqual([]);

    const whole = await parseXlsx(await inline({ richText: [{ text: '1500.50', font: { bold: true } }] }));
    expect(whole.result.fileErrors).toEqual([]);
    expect(whole.rows.map((r) => r.request?.payoutAmount)).toEqual(['1500.5']);
  });

  it('refuses a workbook whose cell formats are stored after its sheet, and reads one whose sheet comes first of all', async () => {
    const account = col('beneficiary.accountNumber');
    const write = () =>
      workbook([HEADER, dataRow('X-1', { 'beneficiary.accountNumber': 123456789 })], { numFmt: { [account]: '000000000000' } });
    const sheetXml = 'xl/worksheets/sheet1.xml';

    // Strings and relationships before the sheet, formats after: read as it comes, without its formats.
    const late = await write();
    await reorderZip(
      late,
      ['[Content_Types].xml', '_rels/.rels', 'xl/workbook.xml', 'xl/_rels/workbook.xml.rels', 'xl/sharedStrings.xml', sheetXml],
      ['xl/styles.xml'],
    );
    const l = await parseXlsx(late);
    expect(codes(l.result.fileErrors)).toEqual(['XLSX_UNREADABLE']);
    expect(l.result.fileErrors[0]?.message).toBe(
      'the workbook stores its cell formats after the sheet "Payouts", so dates and zero-padded numbers in it cannot be read as shown; open it in Excel or LibreOffice, save it again as an Excel Workbook (.xlsx), and drop it again',
    );

    // The sheet before everything (as some writers store it) is read once all else is: formats known.
    const first = await write();
    await reorderZip(first, [sheetXml]);
    const f = await parseXlsx(first);
    expect(f.result.fileErrors).toEqual([]);
    expect(f.rows.map((r) => r.request?.beneficiary.accountNumber)).toEqual(['000123456789']);
  });
});

describe('xlsx batches: text damaged in reading is not paid', () => {
  /**
   * Rewrites the workbook at `path` with its `part` stored uncompressed and padded (spaces before its root
   * element) so that the first byte of `text`'s first non-ASCII character is the last byte of a file read: of
   * the workbook's, where exceljs reads the part straight from the zip, or of the part's own, where it reads the
   * part from a copy on disk (a sheet, in a workbook without shared strings). It decodes each read on its own,
   * and so reads that character as two replacement characters.
   */
  async function cutAtRead(path: string, part: string, text: string, read: 'workbook' | 'part'): Promise<void> {
    const entries = await zipEntries(path);
    const xml = entries.get(part)?.toString('utf8') ?? '';
    const root = xml.indexOf('?>') + 2;
    const padded = (pad: number) => Buffer.from(`${xml.slice(0, root)}${' '.repeat(pad)}${xml.slice(root)}`);
    const write = (pad: number) =>
      writeZip(
        path,
        [...entries].map(([name, data]): [string, Buffer] => [name, name === part ? padded(pad) : data]),
        [part],
      );
    // Where the character starts in the bytes read (all of `text` before it is ASCII: one byte a character).
    const lead = [...text].findIndex((c) => c > '\x7f');
    const at = async (pad: number) => (read === 'workbook' ? await readFile(path) : padded(pad)).indexOf(Buffer.from(text)) + lead;
    const stream = createReadStream(path);
    const readSize = stream.readableHighWaterMark;
    stream.destroy();
    await write(0);
    const pad = readSize - 1 - (await at(0));
    await write(pad);
    // The workbook holds the text whole, its character astride the end of the first read.
    expect(await at(pad)).toBe(readSize - 1);
  }

  const damaged =
    'the account name shows the replacement character "\ufffd" 2 times, the first at position 8, which stands for characters that could not be read: the text is damaged, so the row is not paid; correct the text and send the row again (from a workbook: save the sheet as CSV UTF-8 and send that, or save the workbook again and send it)';

  it('refuses a row whose shared string the reader cut in two, naming the cell; the other rows are read', async () => {
    const path = await workbook([
      HEADER,
      dataRow('X-1', { 'beneficiary.accountName': 'Juan Peña' }),
      dataRow('X-2', { 'beneficiary.accountName': 'Ana Muñoz' }),
    ]);
    await cutAtRead(path, 'xl/sharedStrings.xml', 'Juan Peña', 'workbook');
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors)])).toEqual([
      [2, 'INVALID', ['TEXT_DAMAGED']],
      [3, 'READY', []],
    ]);
    const [error] = rows[0]?.errors ?? [];
    expect([errorPlace(error as RowError), error?.message]).toEqual(['line 2, column J "beneficiary.accountName"', damaged]);
    expect(rows[1]?.request?.beneficiary.accountName).toBe('Ana Muñoz');
  });

  it('refuses a row whose inline string the reader cut in two', async () => {
    const path = join(await tempDir(), 'inline.xlsx');
    const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useSharedStrings: false });
    const ws = wb.addWorksheet('Payouts');
    ws.addRow(HEADER).commit();
    ws.addRow(dataRow('X-1', { 'beneficiary.accountName': 'Juan Peña' })).commit();
    await wb.commit();
    await cutAtRead(path, 'xl/worksheets/sheet1.xml', 'Juan Peña', 'part');
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, r.errors.map((e) => [e.code, e.message])])).toEqual([
      [2, 'INVALID', [['TEXT_DAMAGED', damaged]]],
    ]);
  });

  it('says a header the reader cut in two is damaged, not unknown, naming its column and what to do', async () => {
    // A header mapped by an alias: payoutd knows it, but the reader read "Beneficiário" as "Benefici��rio".
    const header = HEADER.map((h) => (h === 'beneficiary.accountName' ? 'Beneficiário' : h));
    const path = await workbook([header, dataRow('X-1')]);
    await cutAtRead(path, 'xl/sharedStrings.xml', 'Beneficiário', 'workbook');
    const { result, rows } = await parseXlsx(path, { columnAliases: { Beneficiário: 'beneficiary.accountName' } });
    expect(rows).toEqual([]);
    expect(result.fileErrors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      [
        'line 1, column J "Benefici\ufffd\ufffdrio"',
        'HEADER_UNKNOWN',
        'the header "Benefici\ufffd\ufffdrio" shows the replacement character "\ufffd" 2 times, the first at position 9, which stands for characters that could not be read: the header is damaged, not misspelt; it is probably the header of beneficiary.accountName; correct the header and send the file again (from a workbook: save the sheet as CSV UTF-8 and send that, or save the workbook again and send it)',
      ],
      [
        'line 1',
        'HEADER_MISSING',
        'the required column beneficiary.accountName is missing from the header row: it is probably column J, whose header "Benefici\ufffd\ufffdrio" is damaged (see its error for what to do)',
      ],
    ]);
  });

  it('says a sheet name the reader cut in two is damaged when the sheet named is not found', async () => {
    const path = join(await tempDir(), 'named.xlsx');
    const wb = new ExcelJS.Workbook();
    wb.addWorksheet('Pagos Año').addRow(HEADER);
    await wb.xlsx.writeFile(path);
    await cutAtRead(path, 'xl/workbook.xml', 'Pagos Año', 'workbook');
    const { result } = await parseXlsx(path, { sheet: 'Pagos Año' });
    expect(result.fileErrors.map((e) => [e.line, e.code, e.message])).toEqual([
      [
        null,
        'XLSX_SHEETS',
        'the workbook has no sheet named "Pagos Año" (batch.format.sheet); its sheets: "Pagos A\ufffd\ufffdo". The sheet name "Pagos A\ufffd\ufffdo" as read shows the replacement character "\ufffd" 2 times, the first at position 8, which stands for characters that could not be read: the name is damaged in reading, not misspelt, and may be the sheet named; save the sheet as CSV UTF-8 and send that, or save the workbook again and send it',
      ],
    ]);
  });

  it('refuses a cell holding the replacement character as written', async () => {
    const path = await workbook([HEADER, dataRow('X-1', { 'sender.lastName': 'Pe\ufffda' })]);
    const { rows } = await parseXlsx(path);
    expect(rows.map((r) => [r.state, codes(r.errors)])).toEqual([['INVALID', ['TEXT_DAMAGED']]]);
    expect(rows[0]?.errors[0]?.message).toMatch(
      /^the sender's last name shows the replacement character "\ufffd" at position 3, which stands for/,
    );
  });
});

describe('xlsx batches: shared text the reader would misread', () => {
  /** Rewrites the shared strings of the workbook at `path`: each entry holding only `text` becomes `entry`. */
  async function editSharedStrings(path: string, edits: Record<string, string>): Promise<void> {
    const entries = await zipEntries(path);
    let xml = entries.get('xl/sharedStrings.xml')?.toString('utf8') ?? '';
    for (const [text, entry] of Object.entries(edits)) {
      const plain = `<si><t>${text}</t></si>`;
      expect(xml).toContain(plain);
      xml = xml.replace(plain, entry);
    }
    entries.set('xl/sharedStrings.xml', Buffer.from(xml));
    await writeZip(path, [...entries]);
  }

  /** An entry as Excel writes text typed through a Japanese input method: the text, then its reading. */
  const guided = (text: string, reading: string): string =>
    `<si><t>${text}</t><rPh sb="0" eb="${[...text].length}"><t>${reading}</t></rPh><phoneticPr fontId="1"/></si>`;

  const phonetic = (what: string): string =>
    `${what} carries a phonetic guide (a reading aid such as furigana, kept with text typed through a Japanese or Chinese input method), which payoutd cannot read safely: it would read the guide, not the text shown; save the sheet as CSV UTF-8 and send that, or paste the column back as plain text (through Notepad) and drop the workbook again`;

  it.each([
    ['after the sheet, as Excel stores them', false],
    ['before the sheet', true],
  ])(
    'refuses a cell whose text carries a phonetic guide (read as the guide), naming line, column and header: strings %s',
    async (_, first) => {
      const path = await workbook([
        HEADER,
        dataRow('X-1', { 'beneficiary.accountName': '山田太郎' }),
        dataRow('X-2'),
        dataRow('X-3', { 'beneficiary.accountName': '佐藤花子', 'sender.lastName': '鈴木' }),
      ]);
      // An empty reading is read as an empty cell, no cell at all to exceljs.
      await editSharedStrings(path, {
        山田太郎: guided('山田太郎', 'ヤマダタロウ'),
        佐藤花子: guided('佐藤花子', ''),
        鈴木: guided('鈴木', 'スズキ'),
      });
      const before = [
        '[Content_Types].xml',
        '_rels/.rels',
        'xl/workbook.xml',
        'xl/_rels/workbook.xml.rels',
        'xl/styles.xml',
        'xl/sharedStrings.xml',
      ];
      if (first) await reorderZip(path, before);
      const { result, rows } = await parseXlsx(path);
      expect(result.fileErrors).toEqual([]);
      expect(rows.map((r) => [r.line, r.state, r.errors.map((e) => [errorPlace(e), e.code, e.message])])).toEqual([
        [2, 'INVALID', [['line 2, column J "beneficiary.accountName"', 'PHONETIC_GUIDE', phonetic('the account name cell')]]],
        [3, 'READY', []],
        [
          4,
          'INVALID',
          [
            ['line 4, column F "sender.lastName"', 'PHONETIC_GUIDE', phonetic("the sender's last name cell")],
            ['line 4, column J "beneficiary.accountName"', 'PHONETIC_GUIDE', phonetic('the account name cell')],
          ],
        ],
      ]);
      expect(JSON.stringify(rows)).not.toMatch(/ヤマダ|スズキ/);
    },
  );

  it('reads rich text runs whole, a guide after them too', async () => {
    const path = await workbook([HEADER, dataRow('X-1', { 'beneficiary.accountName': 'Yamada Taro' })]);
    await editSharedStrings(path, {
      'Yamada Taro':
        '<si><r><t xml:space="preserve">Yamada </t></r><r><rPr><b/></rPr><t>Taro</t></r><rPh sb="0" eb="1"><t>YAMA</t></rPh></si>',
    });
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.state, r.request?.beneficiary.accountName])).toEqual([['READY', 'Yamada Taro']]);
  });

  it('refuses shared text stored in several pieces outside runs (read as its last), naming the cell', async () => {
    const path = await workbook([HEADER, dataRow('X-1', { payoutAmount: '1500.50' })]);
    await editSharedStrings(path, { '1500.50': '<si><t>1</t><t>500.50</t></si>' });
    const { result, rows } = await parseXlsx(path);
    expect(rows).toEqual([]);
    expect(result.fileErrors.map((e) => [e.code, e.line])).toEqual([['XLSX_UNREADABLE', 2]]);
    expect(result.fileErrors[0]?.message).toContain('cell D2 holds text stored in several differently formatted pieces');
  });

  it('refuses a header cell whose text carries a phonetic guide', async () => {
    const header = HEADER.map((h) => (h === 'beneficiary.accountName' ? '受取人名' : h));
    const path = await workbook([header, dataRow('X-1')]);
    await editSharedStrings(path, { 受取人名: guided('受取人名', 'ウケトリニンメイ') });
    const { result, rows } = await parseXlsx(path, { columnAliases: { 受取人名: 'beneficiary.accountName' } });
    expect(rows).toEqual([]);
    expect(result.fileErrors.map((e) => [errorPlace(e), e.code, e.message])).toEqual([
      ['line 1, column J', 'XLSX_UNREADABLE', phonetic('the header cell')],
    ]);
  });

  it('refuses the sheet whole when more cells carry a guide than are kept one by one', async () => {
    const path = join(await tempDir(), 'many.xlsx');
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet('Payouts');
    ws.addRow(HEADER);
    for (let i = 0; i <= CellSet.MAX_CELLS; i++) ws.addRow(dataRow(`X-${i}`, { 'beneficiary.accountName': '山田太郎' }));
    await wb.xlsx.writeFile(path);
    await editSharedStrings(path, { 山田太郎: guided('山田太郎', 'ヤマダタロウ') });
    const { result, rows } = await parseXlsx(path);
    expect(rows).toEqual([]);
    expect(result.fileErrors.map((e) => [e.code, e.line, e.message])).toEqual([
      ['XLSX_UNREADABLE', 2, phonetic('the text of cell J2 and of more cells in sheet "Payouts"')],
    ]);
  });
});

describe('xlsx batches: cells read with the format and kind the workbook stores, not as the reader gives them', () => {
  /** Rewrites parts of the workbook's zip, each part's XML through its function. */
  async function editParts(path: string, edits: Record<string, (xml: string) => string>): Promise<void> {
    const entries = await zipEntries(path);
    await writeZip(
      path,
      [...entries].map(([name, data]) => {
        const edit = edits[name];
        return [name, edit === undefined ? data : Buffer.from(edit(data.toString('utf8')), 'utf8')];
      }),
    );
  }

  /**
   * The formats written in full as `code → id`, made built-in formats referenced by id alone, with no code in the
   * workbook (as openpyxl and pandas write them).
   */
  const byIdOnly = (ids: Record<string, number>) => (styles: string) => {
    const unescape = (code: string) => code.replace(/&quot;/g, '"').replace(/&amp;/g, '&');
    const custom = new Map<string, number>();
    for (const m of styles.matchAll(/<numFmt numFmtId="(\d+)" formatCode="([^"]*)"\/>/g)) {
      const id = ids[unescape(m[2] as string)];
      if (id !== undefined) custom.set(m[1] as string, id);
    }
    expect(custom.size).toBe(Object.keys(ids).length);
    return styles
      .replace(/<numFmts[^>]*>.*?<\/numFmts>/s, '')
      .replace(/(<xf [^>]*numFmtId=")(\d+)"/g, (all, head: string, id: string) => (custom.has(id) ? `${head}${custom.get(id)}"` : all));
  };

  it('refuses an amount or account number shown with a built-in currency or accounting format stored by id alone', async () => {
    const amount = col('payoutAmount');
    const account = col('beneficiary.accountNumber');
    // Placeholders, each turned into a built-in id: 42 and 5 show no decimals, 44 two, 59 is known to no one here.
    const path = await formatted(
      [
        HEADER,
        dataRow('B-1', { payoutAmount: 1500.5 }),
        dataRow('B-2', { payoutAmount: 1500.5 }),
        dataRow('B-3', { payoutAmount: 1500.5 }),
        dataRow('B-4', { payoutAmount: '1500.50', 'beneficiary.accountNumber': 1234567890 }),
        dataRow('B-5', { payoutAmount: 1500.5 }),
      ],
      { [`1,${amount}`]: '0.0', [`2,${amount}`]: '0.000', [`3,${amount}`]: '0.0000', [`4,${account}`]: '0.0', [`5,${amount}`]: '0.00000' },
    );
    await editParts(path, { 'xl/styles.xml': byIdOnly({ '0.0': 42, '0.000': 5, '0.0000': 44, '0.00000': 59 }) });
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors), r.request?.payoutAmount])).toEqual([
      [2, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
      [3, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
      [4, 'READY', [], '1500.5'],
      [5, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT'], undefined],
      [6, 'INVALID', ['AMOUNT_FORMAT_HIDES'], undefined],
    ]);
    const messages = rows.map((r) => (r.errors[0] === undefined ? null : [errorPlace(r.errors[0]), r.errors[0].message]));
    expect(messages[0]).toEqual([
      'line 2, column D "payoutAmount"',
      'the amount cell holds 1500.5, but its number format "_(\\"$\\"* #,##0_);_(\\"$\\"* \\\\(#,##0\\\\);_(\\"$\\"* \\"…" shows no decimals, so it is rounded: the sheet shows another amount than would be paid; format the column to show every decimal (Number, as many decimals as the amounts have), or as Text and type the amounts again',
    ]);
    expect(messages[3]?.[1]).not.toMatch(/1234567890/);
    expect(messages[4]).toEqual([
      'line 6, column D "payoutAmount"',
      "the amount cell holds 1500.5 shown with number format id 59, which is neither the workbook's own nor one of Excel's built-in formats, so payoutd cannot tell what the sheet shows: it may show another amount than would be paid; format the column as Number with as many decimals as the amounts have (0.00), or as General, and drop the workbook again",
    ]);
  });

  it('refuses a control total shown with a built-in accounting format stored by id alone, naming the cell', async () => {
    const path = await formatted(
      [HEADER, dataRow('T-1', { payoutAmount: 1500.5 }), ['#CONTROL', 'rows', 1], ['#CONTROL', 'total', 'PHP', 1500.5]],
      { '3,3': '0.0' },
    );
    await editParts(path, { 'xl/styles.xml': byIdOnly({ '0.0': 41 }) });
    const { result } = await parseXlsx(path);
    expect(result.fileErrors.map((e) => [e.line, e.code, e.message.slice(0, 60)])).toEqual([
      [4, 'CONTROL_INVALID', "the control line's cell D4 holds 1500.5, but its number form"],
    ]);
  });

  it('refuses a cell stored as a date, and a number shown with an East-Asian built-in date format, as dates', async () => {
    const ref = col('merchantReferenceId');
    const path = await formatted([HEADER, dataRow('D-1', { payoutAmount: 1500.5 }), dataRow('D-2', { merchantReferenceId: 46029 })], {
      [`2,${ref}`]: '0.0',
    });
    await editParts(path, {
      'xl/styles.xml': byIdOnly({ '0.0': 57 }),
      // An ISO date, as some writers store one: the reader reads it as the number 2026.
      'xl/worksheets/sheet1.xml': (xml) =>
        xml.replace(/<c r="D2"([^>]*)><v>[^<]*<\/v><\/c>/, '<c r="D2" t="d"><v>2026-01-07T00:00:00</v></c>'),
    });
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, r.errors.map((e) => [errorPlace(e), e.code, e.message.slice(0, 45)])])).toEqual([
      [2, 'INVALID', [['line 2, column D "payoutAmount"', 'DATE_CONVERTED', 'the amount is a date cell (2026-01-07): a spr']]],
      [3, 'INVALID', [['line 3, column A "merchantReferenceId"', 'DATE_CONVERTED', 'the reference is a date cell (2026-01-07): a ']]],
    ]);
  });

  it('refuses text whose format shows none of it or other text; reads text shown as typed', async () => {
    const amount = col('payoutAmount');
    const name = col('beneficiary.accountName');
    const account = col('beneficiary.accountNumber');
    const path = await formatted(
      [
        HEADER,
        dataRow('T-1', { payoutAmount: '1500.50' }),
        dataRow('T-2', { payoutAmount: '1500.50' }),
        dataRow('T-3', { payoutAmount: 1500.5 }),
        dataRow('T-4', { payoutAmount: '1500.50' }),
        dataRow('T-5', { 'beneficiary.accountNumber': '0012345670000' }),
        dataRow('T-6', { 'beneficiary.accountNumber': '0012345670000' }),
      ],
      {
        [`1,${amount}`]: ';;;',
        [`2,${amount}`]: '0.00;0.00;0.00;"100.00"',
        // A number is shown by the first section: 1500.50, as held.
        [`3,${amount}`]: '0.00;0.00;0.00;"100.00"',
        [`4,${name}`]: '"Mr "@',
        [`5,${account}`]: '@',
        [`6,${account}`]: '0;0;0;"0012345670001"',
      },
    );
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, codes(r.errors)])).toEqual([
      [2, 'INVALID', ['AMOUNT_FORMAT_HIDES']],
      [3, 'INVALID', ['AMOUNT_FORMAT_HIDES']],
      [4, 'READY', []],
      [5, 'INVALID', ['CELL_FORMAT_HIDES']],
      [6, 'READY', []],
      [7, 'INVALID', ['IDENTIFIER_NUMBER_FORMAT']],
    ]);
    expect(rows.slice(0, 2).map((r) => [errorPlace(r.errors[0] as RowError), r.errors[0]?.message])).toEqual([
      [
        'line 2, column D "payoutAmount"',
        'the amount cell holds text, but the number format ";;;" shows none of it: the sheet shows another amount than would be paid; format the column as Text and drop the workbook again',
      ],
      [
        'line 3, column D "payoutAmount"',
        'the amount cell holds text, but the number format "0.00;0.00;0.00;\\"100.00\\"" shows other text instead of it: the sheet shows another amount than would be paid; format the column as Text and drop the workbook again',
      ],
    ]);
    expect(rows[3]?.errors[0]?.message).toBe(
      'the account name cell holds text, but the number format "\\"Mr \\"@" shows other characters beside it: the sheet shows another account name than would be paid; format the column as Text and drop the workbook again',
    );
    // Never the digits of an account, not even those a format holds.
    expect(rows[5]?.errors[0]?.message).not.toMatch(/001234567/);
  });

  it('says an amount shown as a time is shown as a time, quoting no date the clerk never sees', async () => {
    const amount = col('payoutAmount');
    // Placeholders, each turned into a built-in time format: 45 `mm:ss`, 46 `[h]:mm:ss`, 47 `mmss.0`.
    const path = await formatted([HEADER, ...[1, 2, 3].map((i) => dataRow(`T-${i}`, { payoutAmount: 1500.5 }))], {
      [`1,${amount}`]: '0.0',
      [`2,${amount}`]: '0.000',
      [`3,${amount}`]: '0.0000',
    });
    await editParts(path, { 'xl/styles.xml': byIdOnly({ '0.0': 45, '0.000': 46, '0.0000': 47 }) });
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    const timed =
      'the amount cell is shown as a time: a spreadsheet probably turned the value into a time; format the column as Text and type the value again';
    expect(rows.map((r) => [r.line, r.errors.map((e) => [errorPlace(e), e.code, e.message])])).toEqual(
      [2, 3, 4].map((line) => [line, [[`line ${line}, column D "payoutAmount"`, 'DATE_CONVERTED', timed]]]),
    );
  });

  it('reads cells whose places are written as absolute references ($D$2)', async () => {
    const amount = col('payoutAmount');
    const path = await formatted([HEADER, dataRow('A-1', { payoutAmount: 1500.5 }), dataRow('A-2', { payoutAmount: 250 })], {
      [`1,${amount}`]: '0.00',
      [`2,${amount}`]: '#,##0',
    });
    await editParts(path, { 'xl/worksheets/sheet1.xml': (xml) => xml.replace(/<c r="([A-Z]+)(\d+)"/g, '<c r="$$$1$$$2"') });
    expect((await zipEntries(path)).get('xl/worksheets/sheet1.xml')?.toString()).toContain('<c r="$D$2"');
    const { result, rows } = await parseXlsx(path);
    expect(result.fileErrors).toEqual([]);
    expect(rows.map((r) => [r.line, r.state, r.request?.payoutAmount])).toEqual([
      [2, 'READY', '1500.5'],
      [3, 'READY', '250'],
    ]);
  });

  it('names the first cell it cannot place, and the first stored out of order, when it refuses the sheet', async () => {
    const amount = col('payoutAmount');
    const rows = [HEADER, dataRow('P-1', { payoutAmount: 1500.5 }), dataRow('P-2', { payoutAmount: 1500.5 })];
    const formats = { [`1,${amount}`]: '0.00', [`2,${amount}`]: '0.00' };
    const unplaced = await formatted(rows, formats);
    await editParts(unplaced, { 'xl/worksheets/sheet1.xml': (xml) => xml.replace(/<row r="3"/, '<row') });
    const swapped = await formatted(rows, formats);
    await editParts(swapped, {
      'xl/worksheets/sheet1.xml': (xml) => xml.replace(/(<row r="2".*?<\/row>)(<row r="3".*?<\/row>)/, '$2$1'),
    });
    const refusals = [];
    for (const path of [unplaced, swapped]) {
      const { result } = await parseXlsx(path);
      refusals.push(result.fileErrors.map((e) => [e.line, e.code, e.message.replace(/, so the cells .*/, '')]));
    }
    expect(refusals).toEqual([
      [
        [
          3,
          'XLSX_UNREADABLE',
          'cell D3 (line 3, column D, counting the rows and cells before it) is stored without a place payoutd can read (its row and column)',
        ],
      ],
      [[2, 'XLSX_UNREADABLE', 'cell A2 (line 2, column A) is stored after a row below it']],
    ]);
  });

  it('reads a large sheet whose formats alternate row by row in several columns', async () => {
    const path = await formatted([HEADER, dataRow('L-1', { payoutAmount: 1500.5 })], {
      [`1,0`]: '@',
      [`1,${col('payoutAmount')}`]: '0.00',
    });
    const styles = (await zipEntries(path)).get('xl/styles.xml')?.toString() ?? '';
    const xfs = styles.match(/<cellXfs[^>]*>.*?<\/cellXfs>/s)?.[0].match(/<xf /g)?.length ?? 0;
    expect(xfs).toBeGreaterThanOrEqual(3);
    // More runs of alike cells, in three columns, than were once kept in all: formats changing every row.
    const lines = 70_000;
    const sheet = (xml: string) => {
      const body: string[] = [];
      for (let r = 2; r <= lines; r++)
        body.push(`<row r="${r}">${['A', 'D', 'K'].map((c) => `<c r="${c}${r}" s="${r % 2 === 0 ? 1 : 2}"><v>1</v></c>`).join('')}</row>`);
      return xml.replace(/<sheetData>.*<\/sheetData>/s, `<sheetData>${body.join('')}</sheetData>`);
    };
    await editParts(path, { 'xl/worksheets/sheet1.xml': sheet });
    const scan = await scanWorkbook(() => createReadStream(path));
    expect(scanProblem(scan, 'Payouts')).toBeNull();
  });

  it('names the columns whose formats change too often to keep, and says to give each column one format', () => {
    const styles = new CellStyles(null, 6);
    for (let row = 2; row < 10; row++) {
      styles.add(row, 1, row % 2, true, `A${row}`);
      styles.add(row, 2, 0, true, `B${row}`);
      styles.add(row, 4, row % 2, true, `D${row}`);
    }
    const findings = new SheetScan().findings;
    findings.styles = styles;
    const scan: WorkbookScan = {
      sheets: new Map([['Payouts', { hidden: false, part: 'xl/worksheets/sheet1.xml' }]]),
      parts: new Map([['xl/worksheets/sheet1.xml', findings]]),
      styles: new StylesScan(),
      date1904: false,
      readerEntries: new Set(),
    };
    expect(scanProblem(scan, 'Payouts')).toEqual({
      code: 'XLSX_UNREADABLE',
      message:
        'in sheet "Payouts", the number formats of columns A and D change from row to row more often than payoutd keeps track of, so the cells cannot be matched to their formats, and amounts and identifiers cannot be read as shown; give each column one format (select the column, Format Cells, and pick one: Text for identifiers, Number with as many decimals as the amounts have for amounts), save, and drop the workbook again',
      line: null,
    });
  });
});

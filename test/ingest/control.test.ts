import { copyFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSidecarText } from '../../src/ingest/csv/index.js';
import { compileRules, DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { codes, HEADER, parseCollect, row, tempCsv, tempDir } from './helpers.js';

const fixture = (name: string): string => `test/fixtures/csv/${name}`;
const RULES = compileRules(DEFAULT_VALIDATION_RULES);

describe('control totals in trailer records', () => {
  it('accepts matching trailer totals (amounts compared as decimals, padding fields ignored)', async () => {
    const { result, rows } = await parseCollect(fixture('control-trailer.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(result.rowCount).toBe(3);
    expect(rows).toHaveLength(3);
    expect(result.controlTotals).toMatchObject([{ source: 'trailer', file: 'batch.csv', rows: 3, totals: { PHP: '300.75', USD: '10' } }]);
    expect(result.totals).toEqual({ PHP: '300.75', USD: '10' });
  });

  it('reports row count and amount mismatches naming expected and found', async () => {
    const { result } = await parseCollect(fixture('control-trailer-mismatch.csv'));
    expect(result.fileErrors.map((e) => [e.code, e.message])).toEqual([
      [
        'CONTROL_ROWS_MISMATCH',
        'control trailer (line 5) expects 4 data rows, found 3; correct the count, or check that no row is missing',
      ],
      ['CONTROL_TOTAL_MISMATCH', 'control trailer (line 6) expects PHP total 300.7, found 300.75; correct the total, or check the amounts'],
    ]);
  });

  it('rejects data rows after the trailer', async () => {
    const { result } = await parseCollect(fixture('control-not-at-end.csv'));
    expect(result.fileErrors).toEqual([expect.objectContaining({ code: 'CONTROL_NOT_AT_END', line: 4 })]);
  });

  it('rejects malformed control lines, naming their lines', async () => {
    const { result } = await parseCollect(fixture('control-malformed.csv'));
    expect(result.fileErrors.map((e) => [e.code, e.line])).toEqual([
      ['CONTROL_INVALID', 3],
      ['CONTROL_INVALID', 4],
      ['CONTROL_INVALID', 5],
      ['CONTROL_INVALID', 5],
    ]);
    expect(result.fileErrors[3]?.message).toContain('no #CONTROL,rows');
  });

  it('flags a currency present in the data but missing from declared totals', async () => {
    const dir = await tempDir();
    const path = join(dir, 'batch.csv');
    await copyFile(fixture('control-sidecar.csv'), path);
    await writeFile(`${path}.ctl`, '#CONTROL,rows,3\n#CONTROL,total,PHP,300.75\n');
    const { result } = await parseCollect(path);
    expect(result.fileErrors.map((e) => e.message)).toEqual([
      'control file batch.csv.ctl has no total for USD, found 10 USD; add a line #CONTROL,total,USD,<amount>',
    ]);
  });
});

describe('a control trailer written with the other separator', () => {
  // Read as one field by the file's separator, it was taken for a short last row: "upload the whole file again",
  // which failed the same way every time.
  const semicolons = (line: string): string => line.replaceAll(',', ';');

  it('is read in a comma file, with Excel padding after it too', async () => {
    const text = `${HEADER}\n${row('S-1')}\n${row('S-2')}\n#CONTROL;rows;2\n#control; total ;PHP;201.00,,,,,,,,,,,\n`;
    const { result, rows } = await parseCollect(await tempCsv(text));
    expect(result.fileErrors).toEqual([]);
    expect(rows).toHaveLength(2);
    expect(result.controlTotals).toMatchObject([
      { source: 'trailer', rows: 2, totals: { PHP: '201' }, lines: { rows: 4, totals: { PHP: 5 } } },
    ]);
  });

  it('is read in a semicolon file', async () => {
    const text = `${semicolons(HEADER)}\n${semicolons(row('S-1'))}\n#CONTROL,rows,1\n`;
    const { result, rows } = await parseCollect(await tempCsv(text));
    expect(result.fileErrors).toEqual([]);
    expect(rows).toHaveLength(1);
    expect(result.controlTotals).toMatchObject([{ source: 'trailer', rows: 1 }]);
  });

  it('is compared with the rows like any trailer', async () => {
    const { result } = await parseCollect(await tempCsv(`${HEADER}\n${row('S-1')}\n#CONTROL;rows;2\n`));
    expect(result.fileErrors.map((e) => [e.code, e.line])).toEqual([['CONTROL_ROWS_MISMATCH', 3]]);
  });

  it('with a comma in its amount is refused as a control line, saying why', async () => {
    const { result } = await parseCollect(await tempCsv(`${HEADER}\n${row('S-1')}\n#CONTROL;rows;1\n#CONTROL;total;PHP;100,50\n`));
    expect(result.fileErrors).toEqual([
      expect.objectContaining({
        code: 'CONTROL_INVALID',
        line: 4,
        message:
          'control line must be #CONTROL,rows,<count> or #CONTROL,total,<currency>,<amount>; its fields are read at each "," and ";", so a number in it must have no comma: write it plain, e.g. 1500.50',
      }),
    ]);
  });
});

describe('a control total written with thousands dots', () => {
  // Read as a decimal, `1.500` PHP was 1.5: refused as "totals do not match" when the rows hold 1500, and taken
  // as matching when they hold 1.5, where a row's amount of 1.500 is refused for the dot.
  const rows = (...amounts: string[]): string => amounts.map((a, i) => row(`T-${i + 1}`, { payoutAmount: a })).join('\n');

  it('is refused in a trailer, saying what to write, not compared as a smaller total', async () => {
    const text = `${HEADER}\n${rows('1000', '500')}\n#CONTROL,rows,2\n#CONTROL,total,PHP,1.500\n`;
    const { result } = await parseCollect(await tempCsv(text));
    expect(result.fileErrors).toEqual([
      expect.objectContaining({
        file: 'batch.csv',
        line: 5,
        code: 'CONTROL_INVALID',
        message:
          'control trailer total for PHP "1.500" has a dot that looks like a thousands separator (PHP has 2 decimals, not 3): write 1500 or 1500.00, with no separator; or 1.5 if 1.5 PHP was meant',
      }),
    ]);
  });

  it('is refused even when the rows add up to what it reads as, unless the currency has three decimals', async () => {
    const text = `${HEADER}\n${rows('1.5')}\n#CONTROL,rows,1\n#CONTROL,total,PHP,1.500\n`;
    const { result } = await parseCollect(await tempCsv(text));
    expect(result.fileErrors.map((e) => [e.code, e.line])).toEqual([['CONTROL_INVALID', 4]]);
    // The currency's minor units as the rows' rule takes them, configured ones included.
    const three = await parseCollect(await tempCsv(text), { rules: { minorUnits: { PHP: 3 } } });
    expect(three.result.fileErrors).toEqual([]);
    expect(three.result.controlTotals).toMatchObject([{ totals: { PHP: '1.5' } }]);
  });

  it('is refused in a sidecar with several dots, naming the control file', async () => {
    const path = await tempCsv(`${HEADER}\n${rows('1234567')}\n`);
    await writeFile(`${path}.ctl`, '#CONTROL,rows,1\n#CONTROL,total,PHP,1.234.567\n');
    const { result } = await parseCollect(path);
    expect(result.fileErrors).toEqual([
      expect.objectContaining({
        file: 'batch.csv.ctl',
        line: 2,
        code: 'CONTROL_INVALID',
        message: 'control file batch.csv.ctl total for PHP "1.234.567" has dots as thousands separators; write 1234567, with no separators',
      }),
    ]);
  });
});

describe('control totals in a sidecar file', () => {
  it('accepts a matching <file>.ctl next to the CSV', async () => {
    const { result } = await parseCollect(fixture('control-sidecar.csv'));
    expect(result.fileErrors).toEqual([]);
    expect(result.controlTotals).toMatchObject([
      { source: 'sidecar', file: 'batch.csv.ctl', rows: 3, totals: { PHP: '300.75', USD: '10' } },
    ]);
  });

  it('reports a sidecar mismatch, naming the control file', async () => {
    const { result } = await parseCollect(fixture('control-sidecar-mismatch.csv'));
    expect(result.fileErrors.map((e) => [e.file, e.code, e.message])).toEqual([
      [
        'batch.csv.ctl',
        'CONTROL_ROWS_MISMATCH',
        'control file batch.csv.ctl (line 1) expects 2 data rows, found 3; correct the count, or check that no row is missing',
      ],
      [
        'batch.csv.ctl',
        'CONTROL_TOTAL_MISMATCH',
        'control file batch.csv.ctl has no total for USD, found 10 USD; add a line #CONTROL,total,USD,<amount>',
      ],
    ]);
  });

  it('reads the sidecar from an explicit path, or not at all', async () => {
    const explicit = await parseCollect(fixture('control-trailer.csv'), { sidecarPath: fixture('control-sidecar-mismatch.csv.ctl') });
    expect(codes(explicit.result.fileErrors)).toContain('CONTROL_ROWS_MISMATCH');
    const none = await parseCollect(fixture('control-sidecar-mismatch.csv'), { sidecarPath: null });
    expect(none.result.fileErrors).toEqual([]);
    expect(none.result.controlTotals).toEqual([]);
  });

  it('parses sidecar text with either separator and reports stray lines', () => {
    const ok = parseSidecarText('\ufeff#CONTROL;rows;2\r\n\r\n#control,TOTAL,php,10.50\n', 'x.ctl', RULES);
    expect(ok).toMatchObject({ controls: { source: 'sidecar', file: 'x.ctl', rows: 2, totals: { PHP: '10.5' } }, errors: [] });
    const bad = parseSidecarText('rows=2\n#CONTROL,rows,2\n#CONTROL,rows,3\n', 'x.ctl', RULES);
    expect(bad.errors.map((e) => [e.line, e.message])).toEqual([
      [1, 'line does not start with #CONTROL'],
      [3, 'control row count given twice'],
    ]);
    expect(parseSidecarText('\n', 'x.ctl', RULES).errors.map((e) => e.message)).toEqual(['control file holds no control lines']);
  });
});

describe('requireControlTotals', () => {
  it('rejects a file without controls when they are required, and accepts one with them', async () => {
    const without = await parseCollect(fixture('bom.csv'), { format: { requireControlTotals: true } });
    expect(codes(without.result.fileErrors)).toEqual(['CONTROL_MISSING']);
    const withTrailer = await parseCollect(fixture('control-trailer.csv'), { format: { requireControlTotals: true } });
    expect(withTrailer.result.fileErrors).toEqual([]);
  });

  it('does not require controls by default', async () => {
    const { result } = await parseCollect(fixture('bom.csv'));
    expect(result.fileErrors).toEqual([]);
  });
});

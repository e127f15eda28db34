import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import {
  ACK_COLUMNS,
  ACK_TOTALS_COLUMNS,
  RECONCILIATION_COLUMNS,
  RESULT_COLUMNS,
  SUMMARY_COLUMNS,
  currencyDecimals,
  decimalsFormat,
  displayNumber,
  writeAckXlsx,
  writeSummaryXlsx,
  writeInterimReportXlsx,
  writeReconciliationXlsx,
  writeResultXlsx,
  writeXlsxFile,
  xlsxCellValue,
  xlsxColumns,
  xlsxPathFor,
  wallClockDate,
  type BatchIdentity,
  type RowOutcome,
} from '../../src/report/index.js';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { readCsvFile } from '../../src/report/csv.js';
import { getBatch, type BatchRecord } from '../../src/store/index.js';
import { payoutsCreatedBetween } from '../../src/store/reports.js';
import { SOFFICE, convertWithLibreOffice } from '../e2e/libreoffice.js';
import { T0, addBatch, addRows, listDir, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();
const identity: BatchIdentity = {
  batchId: 'B-7',
  fileName: 'payouts.csv',
  outboxName: 'B-7_payouts.csv',
  sha256: 'ab'.repeat(32),
  receivedAt: '2026-01-02T08:00:00Z',
};

function outcome(line: number, over: Partial<RowOutcome> = {}): RowOutcome {
  return {
    line,
    merchantReferenceId: `000${line}`,
    payoutCurrency: 'PHP',
    payoutAmount: '1500.50',
    deductionCurrency: 'USDT',
    beneficiaryAccountName: 'Juan dela Cruz',
    beneficiaryAccountNumber: '000123',
    status: 'PAID',
    payoutId: `0${line}`,
    rate: '56.1234',
    deductionAmount: '26.736842',
    totalFee: '0.5',
    feeCurrency: 'USDT',
    completeTime: '2026-01-02T09:00:00Z',
    reason: null,
    ...over,
  };
}

async function readBook(path: string): Promise<ExcelJS.Workbook> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  return wb;
}

function sheet(wb: ExcelJS.Workbook, name: string): ExcelJS.Worksheet {
  const ws = wb.getWorksheet(name);
  if (!ws) throw new Error(`no sheet ${name}`);
  return ws;
}

/** The cell under a header on a data row (1 = header row). */
function cellAt(ws: ExcelJS.Worksheet, row: number, header: string): ExcelJS.Cell {
  const headers = (ws.getRow(1).values as unknown[]).slice(1);
  const i = headers.indexOf(header);
  if (i < 0) throw new Error(`no column ${header}`);
  return ws.getRow(row).getCell(i + 1);
}

describe('typed cells (pure)', () => {
  it('knows minor units: ISO 4217, stablecoins 6, overrides', () => {
    expect(currencyDecimals('PHP')).toBe(2);
    expect(currencyDecimals('JPY')).toBe(0);
    expect(currencyDecimals('KWD')).toBe(3);
    expect(currencyDecimals('USDT')).toBe(6);
    expect(currencyDecimals('USDC')).toBe(6);
    expect(currencyDecimals('IDR', { IDR: 0 })).toBe(0);
    expect(currencyDecimals('XYZ')).toBeUndefined();
    expect(decimalsFormat(0)).toBe('#,##0');
    expect(decimalsFormat(2)).toBe('#,##0.00');
  });

  it('turns an amount into a number only when the double reads back as the same decimal', () => {
    expect(displayNumber('1500.50')).toBe(1500.5);
    expect(displayNumber('0.000001')).toBe(0.000001);
    expect(displayNumber('-5')).toBe(-5);
    expect(displayNumber('12345678901234567890.5')).toBeNull();
    expect(displayNumber('1e3')).toBeNull();
    expect(displayNumber('abc')).toBeNull();
  });

  it('writes a decimal of more than 15 significant digits as text, though a double holds it', () => {
    // Each reads back from its double, but a spreadsheet keeps and shows 15 digits: the intake refuses such a cell.
    for (const text of ['56.123456789012344', '1234567891.123456', '1234567890123456', '0.1234567890123456']) {
      expect(displayNumber(text), text).toBeNull();
      expect(xlsxCellValue(text, 'amount', 'USDT'), text).toEqual({ value: text, numFmt: '@' });
    }
    expect(displayNumber('123456789012.345')).toBe(123456789012.345);
    expect(displayNumber('1234567890.12345000')).toBe(1234567890.12345);
  });

  it('keeps text exact, and never shows fewer decimals than written', () => {
    expect(xlsxCellValue('000123', 'text')).toEqual({ value: '000123', numFmt: '@' });
    expect(xlsxCellValue('', 'amount', 'PHP')).toEqual({ value: null, numFmt: null });
    expect(xlsxCellValue('7', 'integer')).toEqual({ value: 7, numFmt: null });
    expect(xlsxCellValue('1500.5', 'amount', 'PHP')).toEqual({ value: 1500.5, numFmt: '#,##0.00' });
    expect(xlsxCellValue('10.123', 'amount', 'PHP')).toEqual({ value: 10.123, numFmt: '#,##0.000' });
    expect(xlsxCellValue('1e3', 'amount', 'PHP')).toEqual({ value: '1e3', numFmt: '@' });
    expect(xlsxCellValue('56.1234', 'decimal')).toEqual({ value: 56.1234, numFmt: '#,##0.0000' });
    expect(xlsxCellValue('2026-01-02T09:00:00Z', 'time', '', undefined, { timeZone: 'America/New_York' })).toEqual({
      value: new Date('2026-01-02T04:00:00Z'),
      numFmt: 'yyyy-mm-dd hh:mm:ss',
    });
    // Summer time is the zone's own: New York is 4 hours behind in July.
    expect(wallClockDate('2026-07-02T09:00:00.250Z', 'America/New_York')?.toISOString()).toBe('2026-07-02T05:00:00.250Z');
    expect(xlsxCellValue('not a time', 'time')).toEqual({ value: 'not a time', numFmt: '@' });
    expect(xlsxCellValue('1500.5', 'amount', 'PHP', undefined, { grouping: false })).toEqual({ value: 1500.5, numFmt: '0.00' });
    expect(xlsxPathFor('/r/report.csv')).toBe('/r/report.xlsx');
    expect(xlsxPathFor('/r/report')).toBe('/r/report.xlsx');
  });
});

describe('result .xlsx', () => {
  it('has typed cells, per-currency formats, a frozen filtered header, widths and a Summary sheet', async () => {
    const { dir } = await store();
    const rows = [
      outcome(2),
      outcome(3, { payoutCurrency: 'JPY', payoutAmount: '1000', beneficiaryAccountName: '=HYPERLINK("x")' }),
      outcome(4, { payoutCurrency: 'KWD', payoutAmount: '12.345', status: 'CANCELLED', reason: 'CANCELLED: account closed' }),
      outcome(5, {
        status: 'REJECTED',
        payoutAmount: 'abc',
        payoutId: null,
        rate: null,
        deductionAmount: null,
        totalFee: null,
        feeCurrency: null,
        completeTime: null,
      }),
    ];
    const r = await writeResultXlsx(dir, identity, rows, { minorUnits: { JPY: 0 } });
    expect(r.path).toBe(join(dir, 'B-7_payouts.csv.result.xlsx'));
    expect(await listDir(dir)).toEqual(['B-7_payouts.csv.result.xlsx', 'state.sqlite', 'state.sqlite-shm', 'state.sqlite-wal']);

    const wb = await readBook(r.path);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Result', 'Summary']);
    const ws = sheet(wb, 'Result');
    // The CSV's headers; a time column names its zone.
    expect((ws.getRow(1).values as unknown[]).slice(1)).toEqual(
      RESULT_COLUMNS.map((h) => (h === 'complete_time' ? 'complete_time (UTC)' : h)),
    );
    expect(ws.getRow(1).getCell(1).font?.bold).toBe(true);
    expect(ws.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(ws.autoFilter).toBeTruthy();
    expect(ws.getColumn(RESULT_COLUMNS.indexOf('reason') + 1).width).toBe(48);
    // Widths fit: no header is cut (the filter button takes room too), nor a value.
    (ws.getRow(1).values as string[]).slice(1).forEach((h, i) => expect(ws.getColumn(i + 1).width, h).toBeGreaterThanOrEqual(h.length + 2));
    expect(ws.getColumn(RESULT_COLUMNS.indexOf('beneficiary_account_name') + 1).width).toBeGreaterThanOrEqual('=HYPERLINK("x")'.length);
    expect(ws.rowCount).toBe(5);

    // Times are date cells: the wall-clock time in the zone (UTC here), shown in ISO order.
    const done = cellAt(ws, 2, 'complete_time (UTC)');
    expect(done.type).toBe(ExcelJS.ValueType.Date);
    expect((done.value as Date).toISOString()).toBe('2026-01-02T09:00:00.000Z');
    expect(done.numFmt).toBe('yyyy-mm-dd hh:mm:ss');

    const account = cellAt(ws, 2, 'beneficiary_account_number');
    expect(account.type).toBe(ExcelJS.ValueType.String);
    expect(account.value).toBe('000123');
    expect(account.numFmt).toBe('@');
    expect(cellAt(ws, 2, 'merchant_reference_id').value).toBe('0002');
    expect(cellAt(ws, 2, 'merchant_reference_id').type).toBe(ExcelJS.ValueType.String);
    expect(cellAt(ws, 2, 'payout_id').value).toBe('02');
    expect(cellAt(ws, 2, 'line').value).toBe(2);
    // A text cell is data in .xlsx, never a formula: the value is kept exactly.
    expect(cellAt(ws, 3, 'beneficiary_account_name').value).toBe('=HYPERLINK("x")');
    expect(cellAt(ws, 3, 'beneficiary_account_name').type).toBe(ExcelJS.ValueType.String);

    const amount = (row: number, header: string) => {
      const c = cellAt(ws, row, header);
      return { type: c.type, value: c.value, numFmt: c.numFmt };
    };
    expect(amount(2, 'payout_amount')).toEqual({ type: ExcelJS.ValueType.Number, value: 1500.5, numFmt: '#,##0.00' });
    expect(amount(3, 'payout_amount')).toEqual({ type: ExcelJS.ValueType.Number, value: 1000, numFmt: '#,##0' });
    expect(amount(4, 'payout_amount')).toEqual({ type: ExcelJS.ValueType.Number, value: 12.345, numFmt: '#,##0.000' });
    expect(amount(2, 'deduction_amount')).toEqual({ type: ExcelJS.ValueType.Number, value: 26.736842, numFmt: '#,##0.000000' });
    expect(amount(2, 'total_fee')).toEqual({ type: ExcelJS.ValueType.Number, value: 0.5, numFmt: '#,##0.000000' });
    expect(amount(2, 'rate')).toEqual({ type: ExcelJS.ValueType.Number, value: 56.1234, numFmt: '#,##0.0000' });
    // Not a plain decimal: kept as the text the CSV has.
    expect(amount(5, 'payout_amount')).toEqual({ type: ExcelJS.ValueType.String, value: 'abc', numFmt: '@' });
    expect(cellAt(ws, 5, 'payout_id').type).toBe(ExcelJS.ValueType.Null);

    const summary = sheet(wb, 'Summary');
    expect((summary.getRow(1).values as unknown[]).slice(1)).toEqual([...SUMMARY_COLUMNS]);
    expect(summary.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    const lines = r.summary.rows;
    expect(summary.rowCount).toBe(lines.length + 1);
    const paidPhp = lines.findIndex((l) => l.status === 'PAID' && l.measure === 'payout_amount' && l.currency === 'PHP');
    expect(cellAt(summary, paidPhp + 2, 'amount').value).toBe(1500.5);
    expect(cellAt(summary, paidPhp + 2, 'amount').numFmt).toBe('#,##0.00');
    expect(cellAt(summary, paidPhp + 2, 'row_count').value).toBe(1);
    const paidFee = lines.findIndex((l) => l.status === 'PAID' && l.measure === 'total_fee');
    expect(cellAt(summary, paidFee + 2, 'amount').numFmt).toBe('#,##0.000000');
    const all = summary.getRow(lines.length + 1);
    expect([all.getCell(1).value, all.getCell(2).value, all.getCell(4).value]).toEqual(['ALL', 'rows', 4]);
  });

  it('holds a rate or amount of more than 15 significant digits as exact text, also once LibreOffice saves it', async () => {
    const { dir } = await store();
    const long = {
      payoutAmount: '1234567890123456',
      rate: '56.123456789012344',
      deductionAmount: '1234567891.123456',
    };
    const r = await writeResultXlsx(dir, identity, [outcome(2, long), outcome(3, { payoutAmount: '123456789012.345' })]);
    const check = (ws: ExcelJS.Worksheet): void => {
      for (const [header, text] of [
        ['payout_amount', long.payoutAmount],
        ['rate', long.rate],
        ['deduction_amount', long.deductionAmount],
      ]) {
        const cell = cellAt(ws, 2, header as string);
        expect([cell.type, cell.value], header).toEqual([ExcelJS.ValueType.String, text]);
      }
      expect(cellAt(ws, 3, 'payout_amount').value).toBe(123456789012.345);
    };
    const ws = sheet(await readBook(r.path), 'Result');
    check(ws);
    expect(cellAt(ws, 2, 'rate').numFmt).toBe('@');
    if (!SOFFICE) return;
    // Opened and saved again as a clerk would: the text stays the decimal written.
    const out = await mkdtemp(join(tmpdir(), 'payoutd-lo-'));
    try {
      await convertWithLibreOffice([r.path], 'xlsx', join(out, 'saved'), join(out, 'profile'));
      check(sheet(await readBook(join(out, 'saved', 'B-7_payouts.csv.result.xlsx')), 'Result'));
    } finally {
      await rm(out, { recursive: true, force: true });
    }
  });

  it('refuses a PENDING row in a result file and leaves nothing behind; an interim report allows it', async () => {
    const { dir } = await store();
    await expect(writeResultXlsx(dir, identity, [outcome(2), outcome(3, { status: 'PENDING' })])).rejects.toMatchObject({
      code: 'REPORT_NOT_TERMINAL',
    });
    expect((await listDir(dir)).filter((n) => n.includes('xlsx') || n.endsWith('.tmp'))).toEqual([]);
    const interim = await writeInterimReportXlsx(join(dir, 'now.xlsx'), [outcome(2), outcome(3, { status: 'PENDING' })]);
    expect(interim.summary.statusCounts).toEqual({ PAID: 1, PENDING: 1 });
    expect(sheet(await readBook(interim.path), 'Report').rowCount).toBe(3);
  });

  it('a source failing mid-stream leaves neither a temp file nor the final file', async () => {
    const { dir } = await store();
    async function* failing(): AsyncGenerator<string[]> {
      for (let i = 0; i < 5000; i++) yield [String(i + 2), `R-${i}`];
      throw new Error('database went away');
    }
    const path = join(dir, 'broken.xlsx');
    await expect(
      writeXlsxFile(path, [{ name: 'Rows', columns: xlsxColumns(['line', 'merchant_reference_id']), records: failing() }]),
    ).rejects.toThrow('database went away');
    expect((await listDir(dir)).filter((n) => !n.startsWith('state.sqlite'))).toEqual([]);
  });
});

describe('rows past a sheet', () => {
  it('go on in "<name> (2)", each sheet with its header, nothing lost (the spreadsheets hold 1,048,576 rows a sheet)', async () => {
    const { dir } = await store();
    const rows = Array.from({ length: 7 }, (_, i) => outcome(i + 2));
    const r = await writeResultXlsx(dir, identity, rows, { sheetRows: 4 });
    const wb = await readBook(r.path);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Result', 'Result (2)', 'Result (3)', 'Summary', 'Summary (2)']);
    const refs = ['Result', 'Result (2)', 'Result (3)'].flatMap((name) => {
      const ws = sheet(wb, name);
      expect(ws.getRow(1).getCell(1).value, name).toBe('line');
      expect(ws.views[0], name).toMatchObject({ state: 'frozen', ySplit: 1 });
      return Array.from({ length: ws.rowCount - 1 }, (_, i) => cellAt(ws, i + 2, 'merchant_reference_id').value);
    });
    expect(refs).toEqual(rows.map((o) => o.merchantReferenceId));
  });
});

describe('xlsx write failures', () => {
  const many = function* (n: number): Generator<string[]> {
    for (let i = 0; i < n; i++) yield [String(i + 2), `R-${i}`, 'PHP', '1500.50'];
  };
  const columns = xlsxColumns(['line', 'merchant_reference_id', 'payout_currency', 'payout_amount']);

  it('fails, without hanging, when the file cannot be created', async () => {
    const { dir } = await store();
    await expect(writeXlsxFile(join(dir, 'missing', 'x.xlsx'), [{ name: 'Rows', columns, records: many(20_000) }])).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('stops producing when the write is aborted mid-way and leaves nothing behind', async () => {
    const { dir } = await store();
    const abort = new AbortController();
    function* abortingAt(n: number): Generator<string[]> {
      let i = 0;
      for (const r of many(50_000)) {
        if (++i === n) abort.abort(new Error('shutting down'));
        yield r;
      }
    }
    await expect(
      writeXlsxFile(join(dir, 'aborted.xlsx'), [{ name: 'Rows', columns, records: abortingAt(10_000) }], { signal: abort.signal }),
    ).rejects.toThrow('shutting down');
    expect((await listDir(dir)).filter((n) => !n.startsWith('state.sqlite'))).toEqual([]);
  });
});

describe('reconciliation .xlsx', () => {
  it('reads the rows from the database with typed cells and a Summary sheet', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    await addRows(db, [
      validRow('B1', 2, request('000777', { payoutAmount: '1500.5' }, { accountNumber: '0001234567' })),
      validRow('B1', 3, request('INV-2', { payoutAmount: '250', payoutCurrency: 'IDR' })),
    ]);
    const paid = {
      state: 'PAID' as const,
      serviceStatus: 'PAID',
      rate: '56.12',
      deductionAmount: '26.78',
      totalFee: '0.5',
      feeCurrency: 'USDT',
    };
    await setRow(db, 'B1', 2, { ...paid, payoutId: '000999', createdAtMs: T0 });
    await setRow(db, 'B1', 3, { ...paid, payoutId: 'P-2', createdAtMs: T0 + 1 });
    const path = join(dir, 'rec.xlsx');
    const r = await writeReconciliationXlsx(path, payoutsCreatedBetween(db, T0, T0 + 2), {
      minorUnits: { IDR: 0 },
      timeZone: 'Asia/Manila',
    });
    expect(r.summary.rowCount).toBe(2);
    const wb = await readBook(path);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Reconciliation', 'Summary']);
    const ws = sheet(wb, 'Reconciliation');
    const zoned = (h: string): string => (['created_at', 'create_time', 'complete_time'].includes(h) ? `${h} (Asia/Manila)` : h);
    expect((ws.getRow(1).values as unknown[]).slice(1)).toEqual(RECONCILIATION_COLUMNS.map(zoned));
    expect(cellAt(ws, 2, 'merchant_reference_id').value).toBe('000777');
    expect(cellAt(ws, 2, 'payout_id').value).toBe('000999');
    expect(cellAt(ws, 2, 'payout_amount').numFmt).toBe('#,##0.00');
    expect(cellAt(ws, 3, 'payout_amount').value).toBe(250);
    expect(cellAt(ws, 3, 'payout_amount').numFmt).toBe('#,##0');
    // A date cell holding Manila's wall-clock time (UTC+8), with the milliseconds payoutd records.
    const created = cellAt(ws, 2, 'created_at (Asia/Manila)');
    expect(created.type).toBe(ExcelJS.ValueType.Date);
    expect((created.value as Date).toISOString()).toBe(new Date(T0 + 8 * 3600_000).toISOString());
    expect(created.numFmt).toBe('yyyy-mm-dd hh:mm:ss.000');
    expect(sheet(wb, 'Summary').rowCount).toBe(r.summary.rows.length + 1);
  });
});

describe('ack and summary .xlsx', () => {
  it('the ack: its totals lines and rows as in the CSV, and a Summary sheet of the totals as numbers', async () => {
    const { dir } = await store();
    const rows = [
      { line: 2, merchantReferenceId: '000777', verdict: 'ACCEPTED' as const, reason: null, payoutCurrency: 'PHP', payoutAmount: '1500.5' },
      { line: 3, merchantReferenceId: 'INV-3', verdict: 'REJECTED' as const, reason: 'bad', payoutCurrency: 'PHP', payoutAmount: '20' },
    ];
    const path = await writeAckXlsx(dir, identity, rows);
    expect(path).toBe(join(dir, 'B-7_payouts.csv.ack.xlsx'));
    const wb = await readBook(path);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Ack', 'Summary']);
    const ws = sheet(wb, 'Ack');
    expect((ws.getRow(1).values as unknown[]).slice(1)).toEqual([...ACK_COLUMNS]);
    expect(ws.views[0]).toMatchObject({ state: 'frozen', ySplit: 1 });
    expect(ws.rowCount).toBe(4);
    expect(cellAt(ws, 2, 'verdict').value).toBe('TOTAL');
    expect(cellAt(ws, 2, 'reason').value).toMatch(
      /^PHP: 2 rows, 1520.50 \(accepted 1 row, 1500.50; rejected 1 row, 20.00\)\. Batch PARTLY_ACCEPTED/,
    );
    expect(cellAt(ws, 3, 'merchant_reference_id').value).toBe('000777');
    expect(cellAt(ws, 3, 'merchant_reference_id').type).toBe(ExcelJS.ValueType.String);
    // No header is cut.
    (ws.getRow(1).values as string[]).slice(1).forEach((h, i) => expect(ws.getColumn(i + 1).width, h).toBeGreaterThan(h.length));

    const totals = sheet(wb, 'Summary');
    expect((totals.getRow(1).values as unknown[]).slice(1)).toEqual([...ACK_TOTALS_COLUMNS]);
    expect(cellAt(totals, 2, 'currency').value).toBe('PHP');
    expect(cellAt(totals, 2, 'row_count').value).toBe(2);
    expect([cellAt(totals, 2, 'amount').value, cellAt(totals, 2, 'amount').numFmt]).toEqual([1520.5, '#,##0.00']);
    expect(cellAt(totals, 2, 'accepted_amount').value).toBe(1500.5);
    expect(cellAt(totals, 2, 'rejected_rows').value).toBe(1);
    expect(cellAt(totals, 2, 'verdict').value).toBe('PARTLY_ACCEPTED');
  });

  it('a refused file: the ack .xlsx says so, with a Summary of no rows', async () => {
    const { dir } = await store();
    const path = await writeAckXlsx(dir, identity, [], { fileRejection: 'BAD_HEADER: missing column payoutAmount' });
    const ws = sheet(await readBook(path), 'Ack');
    expect(ws.rowCount).toBe(3);
    expect(cellAt(ws, 3, 'verdict').value).toBe('REJECTED');
    expect(cellAt(ws, 3, 'reason').value).toBe('BAD_HEADER: missing column payoutAmount');
    expect(cellAt(sheet(await readBook(path), 'Summary'), 2, 'verdict').value).toBe('REJECTED');
  });

  it('the summary file as .xlsx', async () => {
    const { dir } = await store();
    const r = await writeResultXlsx(dir, identity, [outcome(2)]);
    const path = await writeSummaryXlsx(dir, identity, r.summary);
    expect(path).toBe(join(dir, 'B-7_payouts.csv.summary.xlsx'));
    const wb = await readBook(path);
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Summary']);
    expect(sheet(wb, 'Summary').rowCount).toBe(r.summary.rows.length + 1);
  });
});

describe('the daemon outbox and its .xlsx twins', () => {
  it('writes the ack and its twin; a twin that cannot be written is reported and the CSV stands', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    await addRows(db, [validRow('B1', 2, request('000777', {}, { accountNumber: '0001234567' }))]);
    await setRow(db, 'B1', 2, { state: 'READY' });
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const failures: string[] = [];
    const outbox = new BatchOutbox(db, dir, true, undefined, {
      xlsx: true,
      retryFiles: false,
      onXlsxError: (batchId, kind) => failures.push(`${batchId} ${kind}`),
    });
    const path = await outbox.writeAck(batch);
    expect(path).toBe(join(dir, 'B1_jan.csv.ack.csv'));
    expect((await readBook(join(dir, 'B1_jan.csv.ack.xlsx'))).worksheets.map((w) => w.name)).toEqual(['Ack', 'Summary']);
    expect(failures).toEqual([]);

    // A folder where the result's .xlsx should go: the CSV files are written, the twin is reported.
    await setRow(db, 'B1', 2, { state: 'PAID', payoutId: 'P-1' });
    await mkdir(join(dir, 'B1_jan.csv.result.xlsx'));
    const files = await outbox.writeResult(batch);
    expect(files.summary.statusCounts).toEqual({ PAID: 1 });
    expect(await listDir(dir)).toContain('B1_jan.csv.summary.csv');
    expect(failures).toEqual(['B1 result']);
    // Without a reporter, the error is the caller's.
    const strict = new BatchOutbox(db, dir, true, undefined, { xlsx: true, retryFiles: false });
    await expect(strict.writeResult(batch)).rejects.toThrow();
  });

  it("writes the result's twin with the notes its CSV shows, also when it is written late after a note came", async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    await addRows(db, [validRow('B1', 2, request('INV-2')), validRow('B1', 3, request('INV-3'))]);
    const paid = { state: 'PAID' as const, payoutId: 'P-2' };
    await setRow(db, 'B1', 2, paid);
    await setRow(db, 'B1', 3, { ...paid, payoutId: 'P-3', serviceNote: 'the payout service reports CANCELLED', serviceNotedAt: T0 });
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const outbox = new BatchOutbox(db, dir, true, undefined, { xlsx: true, retryFiles: false });

    /** Line, reference, status and reason of each row, as the result CSV and its twin hold them. */
    const csvRows = async (): Promise<string[][]> => {
      const { header, rows } = await readCsvFile(join(dir, 'B1_jan.csv.result.csv'));
      const cols = (header ?? []).map((h) => h.replace(/^\uFEFF/, ''));
      const at = ['line', 'merchant_reference_id', 'status', 'reason'].map((h) => cols.indexOf(h));
      const out: string[][] = [];
      for await (const record of rows) out.push(at.map((i) => record[i] ?? ''));
      return out;
    };
    const twinRows = async (): Promise<string[][]> => {
      const ws = sheet(await readBook(join(dir, 'B1_jan.csv.result.xlsx')), 'Result');
      const out: string[][] = [];
      for (let r = 2; r <= ws.rowCount; r++)
        out.push(['line', 'merchant_reference_id', 'status', 'reason'].map((h) => String(cellAt(ws, r, h).value ?? '')));
      return out;
    };

    await outbox.writeResult(batch);
    const csv = await csvRows();
    expect(csv.map((r) => r[3])).toEqual(['', expect.stringContaining('the payout service reports CANCELLED')]);
    expect(await twinRows()).toEqual(csv);

    // A note comes after the CSV, and the twin is written late (a stop lost it): it shows what the CSV shows.
    await setRow(db, 'B1', 2, { serviceNote: 'payoutd is asking the payout service', serviceNotedAt: T0 + 1 });
    await setRow(db, 'B1', 3, { serviceNote: 'the payout service reports PAID', serviceNotedAt: T0 + 1 });
    await rm(join(dir, 'B1_jan.csv.result.xlsx'));
    await rm(join(dir, 'B1_jan.csv.summary.xlsx'));
    expect((await outbox.writeMissingTwins(batch, { ack: false, result: true })).map((f) => f.slice(dir.length + 1))).toEqual([
      'B1_jan.csv.result.xlsx',
      'B1_jan.csv.summary.xlsx',
    ]);
    expect(await csvRows()).toEqual(csv);
    expect(await twinRows()).toEqual(csv);
  });
});

/**
 * An ack written late meets rows already final. A row recorded final that the payout service has since contradicted
 * (or is being asked about) must not be told paid or not paid: its result file tells finance not to send it again.
 */
import { readFile } from 'node:fs/promises';
import ExcelJS from 'exceljs';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { getBatch, type BatchRecord } from '../../src/store/index.js';
import { addBatch, addRows, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

describe('a late ack', () => {
  it('states no outcome of a row the payout service contradicts, and counts it apart', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'late.csv');
    await addRows(db, [
      validRow('B1', 2, request('L-1')),
      validRow('B1', 3, request('L-2')),
      validRow('B1', 4, request('L-3')),
      validRow('B1', 5, request('L-4')),
    ]);
    await setRow(db, 'B1', 2, { state: 'CANCELLED', payoutId: 'p1', serviceNote: 'the payout service shows this payout PAID' });
    await setRow(db, 'B1', 3, { state: 'PAID', payoutId: 'p2', serviceCheck: 'PAYOUT', serviceCheckAt: 0 });
    await setRow(db, 'B1', 4, { state: 'CANCELLED', payoutId: 'p3' });
    // Its batch cancelled after a create of it was tried: a payout named under its reference may be its own.
    await setRow(db, 'B1', 5, { state: 'NOT_SUBMITTED', serviceCheck: 'REFERENCE', serviceCheckAt: 0 });
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const ack = await readFile(await new BatchOutbox(db, dir, false).writeAck(batch), 'utf8');
    const lines = ack.split(/\r?\n/);
    const row = (line: number): string => lines.find((l) => l.startsWith(`B1,late.csv,${line},`)) ?? '';
    expect(row(2)).not.toContain('already CANCELLED');
    expect(row(2)).not.toContain('not paid');
    expect(row(2)).toContain('recorded CANCELLED when this acknowledgement was written; the payout service contradicts it');
    expect(row(3)).not.toContain('already PAID');
    expect(row(3)).toContain('recorded PAID when this acknowledgement was written; the payout service is being asked about it');
    expect(row(4)).toContain('already CANCELLED by the payout service');
    expect(row(5)).toContain('recorded NOT_SUBMITTED when this acknowledgement was written; the payout service is being asked about it');
    const totals = lines.find((l) => l.includes(',TOTAL,')) ?? '';
    expect(totals).toContain('already cancelled by the payout service 1 row');
    expect(totals).toContain('recorded final but contradicted by the payout service 3 rows');
    expect(totals).not.toContain('already paid');
  });

  it('has an .xlsx twin of the same rows as its CSV, though rows end while it is written', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'late.csv');
    await addRows(db, [validRow('B1', 2, request('L-1')), validRow('B1', 3, request('L-2'))]);
    await setRow(db, 'B1', 2, { state: 'PAID', payoutId: 'p1' });
    await setRow(db, 'B1', 3, { state: 'PENDING', payoutId: 'p2' });
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const draft = await new BatchOutbox(db, dir, false, undefined, { xlsx: true, retryFiles: false }).draftAck(batch);
    // The poller settles line 3 between the read of the rows and the writing of the files.
    await setRow(db, 'B1', 3, { state: 'PAID' });
    const path = await draft.write(batch);
    await draft.discard();
    const csv = (parse(await readFile(path, 'utf8'), { relax_column_count: true }) as string[][]).slice(1);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(path.replace(/\.csv$/, '.xlsx'));
    const xlsx: string[][] = [];
    wb.getWorksheet('Ack')?.eachRow((r, n) => {
      const values = r.values as unknown[];
      if (n > 1) xlsx.push(Array.from({ length: 6 }, (_, i) => (values[i + 1] == null ? '' : String(values[i + 1]))));
    });
    expect(csv.find((r) => r[2] === '3')?.[5]).toBe('');
    expect(xlsx).toEqual(csv);
  });

  it('counts in its .xlsx Summary the rows already paid, cancelled, refused or contradicted, with exact amounts', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'late.csv');
    const lines = [2, 3, 4, 5, 6, 7];
    await addRows(
      db,
      lines.map((l) => validRow('B1', l, request(`L-${l}`, { payoutAmount: `100.0${l}` }))),
    );
    await setRow(db, 'B1', 2, { state: 'PAID', payoutId: 'p2' });
    await setRow(db, 'B1', 3, { state: 'PAID', payoutId: 'p3' });
    await setRow(db, 'B1', 4, { state: 'CANCELLED', payoutId: 'p4' });
    await setRow(db, 'B1', 5, { state: 'REJECTED', payoutId: 'p5' });
    await setRow(db, 'B1', 6, { state: 'CANCELLED', payoutId: 'p6', serviceNote: 'the payout service shows this payout PAID' });
    await setRow(db, 'B1', 7, { state: 'PENDING', payoutId: 'p7' });
    const batch = (await getBatch(db, 'B1')) as BatchRecord;
    const path = await new BatchOutbox(db, dir, false, undefined, { xlsx: true, retryFiles: false }).writeAck(batch);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(path.replace(/\.csv$/, '.xlsx'));
    const summary = wb.getWorksheet('Summary');
    const header = (summary?.getRow(1).values as unknown[]).slice(1);
    const cell = (name: string): unknown => summary?.getRow(2).getCell(header.indexOf(name) + 1).value;
    expect([cell('already_paid_rows'), cell('already_paid_amount')]).toEqual([2, 200.05]);
    expect([cell('already_cancelled_rows'), cell('already_cancelled_amount')]).toEqual([1, 100.04]);
    expect([cell('already_refused_rows'), cell('already_refused_amount')]).toEqual([1, 100.05]);
    expect([cell('contradicted_rows'), cell('contradicted_amount')]).toEqual([1, 100.06]);
    expect([cell('accepted_rows'), cell('verdict')]).toEqual([6, 'ACCEPTED']);
  });
});

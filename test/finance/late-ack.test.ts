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
    await addRows(db, [validRow('B1', 2, request('L-1')), validRow('B1', 3, request('L-2')), validRow('B1', 4, request('L-3'))]);
    await setRow(db, 'B1', 2, { state: 'CANCELLED', payoutId: 'p1', serviceNote: 'the payout service shows this payout PAID' });
    await setRow(db, 'B1', 3, { state: 'PAID', payoutId: 'p2', serviceCheck: 'PAYOUT', serviceCheckAt: 0 });
    await setRow(db, 'B1', 4, { state: 'CANCELLED', payoutId: 'p3' });
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
    const totals = lines.find((l) => l.includes(',TOTAL,')) ?? '';
    expect(totals).toContain('already cancelled by the payout service 1 row');
    expect(totals).toContain('recorded final but contradicted by the payout service 2 rows');
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
});

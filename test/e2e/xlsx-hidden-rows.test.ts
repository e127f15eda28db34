/**
 * E2E: a workbook a clerk filtered down to this week's rows still holds next
 * week's, hidden. payoutd reads every row, seen or not, so it refuses the
 * whole file naming the hidden rows, pays none of it, and pays the workbook
 * dropped again without them.
 */
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, makeRows, rowCells, type BatchRow } from './batch-files.js';
import { startE2e } from './harness.js';

/** The rows as a clerk's workbook (text cells), with the header filtered and the rows at `hidden` (sheet row numbers) hidden. */
async function workbook(rows: BatchRow[], hidden: number[]): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Payouts');
  ws.addRow([...CSV_HEADER]);
  for (const r of rows) ws.addRow(rowCells(r));
  ws.autoFilter = { from: { row: 1, column: 1 }, to: { row: rows.length + 1, column: CSV_HEADER.length } };
  for (const n of hidden) ws.getRow(n).hidden = true;
  return Buffer.from(await wb.xlsx.writeBuffer());
}

describe('e2e: rows hidden in a workbook', () => {
  it('refuse the whole file, naming them, and nothing of it is paid', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    const rows = makeRows('WEEK', 4);
    // Sheet row 3 is the second payout row: next week's, filtered out of view.
    await e2e.drop('week.xlsx', await workbook(rows, [3]));
    const refused = await e2e.waitForBatch('week.xlsx', ['REJECTED', 'COMPLETE'], 30_000);
    expect(refused.state).toBe('REJECTED');
    expect(refused.rejectReason).toContain('in sheet "Payouts", row 3 is hidden or filtered out');
    const ack = await e2e.waitForOutbox(refused, 'ack');
    expect(ack.rows[0]?.['verdict']).toBe('REJECTED');
    expect(ack.rows.map((r) => r['reason']).join('\n')).toContain(
      'unhide them, or delete the rows you do not mean to pay, and upload again',
    );
    expect(e2e.ledger()).toEqual([]);

    // The row deleted, the workbook is paid: its three rows and no other.
    const kept = rows.filter((_, i) => i !== 1);
    await e2e.drop('week-fixed.xlsx', await workbook(kept, []));
    const paid = await e2e.waitForBatch('week-fixed.xlsx', ['COMPLETE', 'REJECTED'], 30_000);
    expect(paid.state).toBe('COMPLETE');
    expect(
      e2e
        .ledger()
        .map((p) => p.merchantReferenceId)
        .sort(),
    ).toEqual(kept.map((r) => r.merchantReferenceId).sort());
  }, 90_000);
});

/**
 * E2E: a file of numeric references paid, then opened in a spreadsheet and saved (the references lose their
 * leading zeros: `000123` becomes `123`) and dropped again, against the real `payoutd run`. The rows are
 * refused before any create (LEADING_ZEROS_LOST), naming the earlier row, as they are when the reference
 * comes as a General number cell of an .xlsx, when the earlier reference is the one without zeros, and when
 * both spellings are in one file. Nothing is paid twice.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, phpRow, rowCells, toCsv, type BatchRow } from './batch-files.js';
import { startE2e, type E2e } from './harness.js';

const row = phpRow;

/** The verdict and reason of each row of the batch's ack, by reference. */
async function ackOf(e2e: E2e, fileName: string): Promise<{ state: string; rows: Map<string, { verdict: string; reason: string }> }> {
  const batch = await e2e.waitForBatch(fileName, ['COMPLETE', 'REJECTED', 'ACTIVE', 'DUPLICATE'], 30_000);
  const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
  const rows = new Map(
    ack.rows
      .filter((r) => r['line'] !== '')
      .map((r) => [r['merchant_reference_id'] ?? '', { verdict: r['verdict'] ?? '', reason: r['reason'] ?? '' }]),
  );
  return { state: batch.state, rows };
}

/** A workbook of `rows` whose references are number cells of the General format, as Excel keeps `123` typed in. */
async function workbookWithNumberReferences(rows: BatchRow[]): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet('Payouts');
  ws.addRow([...CSV_HEADER]);
  for (const r of rows) {
    const [, ...rest] = rowCells(r);
    ws.addRow([Number(r.merchantReferenceId), ...rest]);
  }
  return Buffer.from(await wb.xlsx.writeBuffer());
}

describe('e2e: numeric references that lost their leading zeros', () => {
  it('a paid file saved again by a spreadsheet is refused, and so are the reverse and both in one file', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    await e2e.drop(
      'pay.csv',
      toCsv([row('000123', '1500.50', '1234567890'), row('000124', '99.00', '1234567891'), row('777', '10.00', '1234567892')]),
    );
    const first = await e2e.waitForBatch('pay.csv', ['COMPLETE', 'REJECTED'], 30_000);
    expect(first.state).toBe('COMPLETE');
    expect(e2e.ledger()).toHaveLength(3);

    // As Excel saves it: the references without their zeros, the amounts without trailing zeros.
    await e2e.drop('pay-excel.csv', toCsv([row('123', '1500.5', '1234567890'), row('124', '99', '1234567891')]));
    const excel = await ackOf(e2e, 'pay-excel.csv');
    expect(excel.state).toBe('REJECTED');
    for (const [ref, line] of [
      ['123', 2],
      ['124', 3],
    ] as const) {
      const verdict = excel.rows.get(ref);
      expect(verdict?.verdict).toBe('REJECTED');
      expect(verdict?.reason).toContain('LEADING_ZEROS_LOST [column A "merchantReferenceId"]');
      expect(verdict?.reason).toContain(`the reference ${ref} is 000${ref} without its leading zeros`);
      expect(verdict?.reason).toContain(`line ${line} of "pay.csv" (batch ${first.id}`);
      expect(verdict?.reason).toContain('which is PAID; ');
    }

    // The reverse: `777` was paid, `000777` is the same digits.
    await e2e.drop('padded.csv', toCsv([row('000777', '10.00', '1234567892')]));
    const padded = await ackOf(e2e, 'padded.csv');
    expect(padded.state).toBe('REJECTED');
    expect(padded.rows.get('000777')?.reason).toContain('LEADING_ZEROS_LOST');
    expect(padded.rows.get('000777')?.reason).toContain(`line 4 of "pay.csv" (batch ${first.id}`);

    // Both spellings in one file: neither is paid, and payoutd validate says so beforehand.
    const bothCsv = toCsv([row('000555', '20.00', '1234567893'), row('555', '20.00', '1234567893'), row('000556', '21.00', '1234567894')]);
    await writeFile(join(e2e.dir, 'both.csv'), bothCsv);
    const validate = await e2e.cli(['validate', join(e2e.dir, 'both.csv')]);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toContain(
      'both.csv, line 2, column A "merchantReferenceId": LEADING_ZEROS_LOST: the reference 000555 is 555 on line 3 of this file',
    );
    expect(validate.stdout).toContain(
      'both.csv, line 3, column A "merchantReferenceId": LEADING_ZEROS_LOST: the reference 555 is 000555 on line 2 of this file',
    );
    await e2e.drop('both.csv', bothCsv);
    const both = await ackOf(e2e, 'both.csv');
    expect(both.state).toBe('REJECTED');
    expect(both.rows.get('000555')?.reason).toContain('LEADING_ZEROS_LOST');
    expect(both.rows.get('000555')?.reason).toContain('line 3 of this file');
    expect(both.rows.get('555')?.reason).toContain('line 2 of this file');
    expect(both.rows.get('000556')?.reason).not.toContain('LEADING_ZEROS_LOST');

    // Nothing was created for any of them.
    expect(
      e2e
        .ledger()
        .map((p) => p.merchantReferenceId)
        .sort(),
    ).toEqual(['000123', '000124', '777']);
  }, 120_000);

  it('payoutd validate counts the rows refused for their zeros within the file as the ack does (skip-rows)', async () => {
    const e2e = await startE2e({ config: { batch: { onInvalidRows: 'skip-rows' } } });
    const csv = toCsv([
      row('0077', '10.00', '1234567890'),
      row('00077', '20.00', '1234567891'),
      row('077', '30.00', '1234567892'),
      row('X-1', '5.00', '1234567893'),
    ]);
    const path = join(e2e.dir, 'zeros.csv');
    await writeFile(path, csv);
    const validated = (await e2e.cli(['validate', path])).stdout.split('\n');
    const totals = validated.slice(validated.findIndex((l) => l.startsWith('totals as the ack would give them')) + 1);
    const said = totals.filter((l) => l.startsWith('  ')).map((l) => l.trim());
    expect(said).toEqual([expect.stringContaining('(accepted 1 row, ')]);

    await e2e.startDaemon();
    await e2e.drop('zeros.csv', csv);
    const batch = await e2e.waitForBatch('zeros.csv', ['ACTIVE', 'COMPLETE', 'REJECTED'], 30_000);
    const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
    expect(said).toEqual(ack.totals.map((t) => (t['reason'] ?? '').slice(0, (t['reason'] ?? '').indexOf('. Batch '))));
    await e2e.waitForBatch('zeros.csv', ['COMPLETE'], 30_000);
    expect(e2e.ledger().map((p) => p.merchantReferenceId)).toEqual(['X-1']);
  }, 90_000);

  it('a reference read from a General number cell of an .xlsx is refused the same way', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    await e2e.drop('pay.csv', toCsv([row('000321', '1500.50', '1234567890')]));
    const first = await e2e.waitForBatch('pay.csv', ['COMPLETE', 'REJECTED'], 30_000);
    expect(first.state).toBe('COMPLETE');

    await e2e.drop('pay.xlsx', await workbookWithNumberReferences([row('321', '1500.50', '1234567890')]));
    const again = await ackOf(e2e, 'pay.xlsx');
    expect(again.state).toBe('REJECTED');
    const verdict = again.rows.get('321');
    expect(verdict?.verdict).toBe('REJECTED');
    expect(verdict?.reason).toContain('LEADING_ZEROS_LOST [column A "merchantReferenceId"]');
    expect(verdict?.reason).toContain(`line 2 of "pay.csv" (batch ${first.id}`);
    expect(e2e.ledger().map((p) => p.merchantReferenceId)).toEqual(['000321']);
  }, 90_000);
});

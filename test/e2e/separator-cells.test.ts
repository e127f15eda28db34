/**
 * What finance downloads for one skip-rows batch (a paid row whose beneficiary name holds `;=`, a rejected row of
 * amount `-5`, a rejected row of country `XX`), from the real `payoutd run`: no CSV cell of the outbox holds a
 * formula once a `;`-separator locale splits it, the .xlsx keeps the name exact, and the status file sums what
 * the summary sums.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { unescapeSpreadsheetCell } from '../../src/report/index.js';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e, waitFor, type E2e } from './harness.js';

const NAME = 'Ana;=1+1;x';

/** Runs the batch to COMPLETE; the outbox paths of its CSV files once the status file says it is complete. */
async function runBatch(e2e: E2e): Promise<{ id: string; ack: string; result: string; summary: string; status: string }> {
  await e2e.startDaemon();
  const [ok, neg, bad] = makeRows('SC', 3).map((r) => ({
    ...r,
    payoutCurrency: 'PHP',
    country: 'PH',
    bankCode: 'BOPIPHMM',
    accountNumber: '0012345678',
    payoutAmount: '100.00',
  }));
  await e2e.drop(
    'sc.csv',
    toCsv([
      { ...ok!, accountName: NAME },
      { ...neg!, payoutAmount: '-5' },
      { ...bad!, country: 'XX' },
    ]),
  );
  const done = await e2e.waitForBatch('sc.csv', ['COMPLETE'], 40_000);
  const path = (kind: string): string => join(e2e.outbox, `${done.id}_sc.csv.${kind}.csv`);
  // The status file is written on each event; the last one is the batch's completion.
  await waitFor(
    async () => (await readFile(path('status'), 'utf8').catch(() => '')).includes('state,,,COMPLETE') || null,
    'status file',
    15_000,
  );
  await e2e.waitForOutbox(done, 'summary');
  return { id: done.id, ack: path('ack'), result: path('result'), summary: path('summary'), status: path('status') };
}

/** The cells Excel sees in a locale whose list separator is `;`: each line split at every `;` (quotes aside). */
function semicolonCells(text: string): string[] {
  return text.split(/\r\n|\r|\n/).flatMap((line) => line.split(/[;\t]/));
}

describe('cells finance downloads', { timeout: 120_000 }, () => {
  it('no CSV cell runs as a formula when split at ";"; the name reads back and stays exact in the .xlsx', async () => {
    const e2e = await startE2e({ config: { batch: { onInvalidRows: 'skip-rows' } } });
    const files = await runBatch(e2e);
    const result = await readFile(files.result, 'utf8');
    expect(result).toContain("Ana;'=1+1;x");
    for (const file of [files.ack, files.result, files.summary, files.status]) {
      for (const cell of semicolonCells(await readFile(file, 'utf8'))) {
        // What Excel skips before deciding: spaces, and the `"` of a comma quoting cut in two.
        const shown = cell.replace(/^[ "]*/, '');
        expect(/^-?\d+(\.\d+)?$/.test(shown) || !/^[=+\-@\t\r]/.test(shown), `${file}: ${JSON.stringify(cell)}`).toBe(true);
      }
    }
    const paid = (await e2e.waitForOutbox({ id: files.id, fileName: 'sc.csv' }, 'result')).rows.find((r) => r['status'] === 'PAID');
    expect(unescapeSpreadsheetCell(paid?.['beneficiary_account_name'] ?? '')).toBe(NAME);
    const xlsx = files.result.replace(/\.csv$/, '.xlsx');
    const wb = await waitFor(
      async () => {
        const book = new ExcelJS.Workbook();
        return book.xlsx.readFile(xlsx).then(
          () => book,
          () => null,
        );
      },
      'result.xlsx',
      15_000,
    );
    const sheet = wb.getWorksheet('Result')!;
    const column = (sheet.getRow(1).values as unknown[]).indexOf('beneficiary_account_name');
    const names = sheet.getColumn(column).values.slice(2);
    expect(names).toContain(NAME);
  });

  it('the status file sums a rejected "-5" as the summary does', async () => {
    const e2e = await startE2e({ config: { batch: { onInvalidRows: 'skip-rows' } } });
    const files = await runBatch(e2e);
    const summary = await readFile(files.summary, 'utf8');
    const status = await readFile(files.status, 'utf8');
    expect(summary).toContain('REJECTED,payout_amount,PHP,2,95,0');
    expect(status).toContain('amount by status,REJECTED,PHP,95\r\n');
    expect(status).toContain('amount by status,PAID,PHP,100\r\n');
  });
});

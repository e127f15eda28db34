/**
 * A retry file through a spreadsheet, as a clerk would do it, against the
 * real `payoutd run`: two PHP payouts to accounts with leading zeros are
 * cancelled and come back in the batch's retry files. The retry CSV opened
 * and saved again by LibreOffice headless (`soffice --convert-to csv`,
 * import options as the dialog opens: standard columns) has lost the
 * leading zeros, and dropped back it is refused with the leading-zeros
 * reason, nothing paid. The retry .xlsx opened and saved again by
 * LibreOffice (`--convert-to xlsx`) keeps them, and dropped back it pays
 * both rows to the right accounts. Skipped where `soffice` is absent
 * (Debian: `apt-get install libreoffice-calc-nogui`).
 */
import { mkdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv, type BatchRow } from './batch-files.js';
import { startE2e, waitFor } from './harness.js';
import { CSV_IMPORT, SOFFICE, SOFFICE_SKIP_REASON, convertWithLibreOffice } from './libreoffice.js';

const SKIP_REASON = SOFFICE_SKIP_REASON;
if (!SOFFICE) console.warn(`spreadsheet-retry.test.ts skipped: ${SKIP_REASON}`);

/** Saved as CSV: comma, `"`, UTF-8. */
const CSV_EXPORT = 'csv:Text - txt - csv (StarCalc):44,34,76,1';

/** Converts `file` with LibreOffice headless into `outDir`; the path of the file written. */
async function libreOffice(file: string, to: string, outDir: string, profileDir: string, infilter?: string): Promise<string> {
  await mkdir(outDir, { recursive: true });
  await convertWithLibreOffice([file], to, outDir, profileDir, infilter);
  return join(outDir, basename(file).replace(/\.[a-z]+$/, `.${to.split(':')[0] as string}`));
}

/** Accounts with leading zeros; the sandbox holds payouts to accounts ending in 9999 until told how they end. */
const ACCOUNTS = ['0012345679999', '0098765439999'];

function heldRows(): BatchRow[] {
  return makeRows('LZ', 2).map((row, i) => ({
    ...row,
    payoutCurrency: 'PHP',
    payoutAmount: '250.50',
    accountNumber: ACCOUNTS[i] as string,
    bankCode: 'BOPIPHMM',
    country: 'PH',
  }));
}

describe('e2e: a retry file through a spreadsheet', () => {
  it.skipIf(!SOFFICE)(
    `is refused when re-saved as CSV (leading zeros lost) and pays the right accounts from the .xlsx${SOFFICE ? '' : ` (skipped: ${SKIP_REASON})`}`,
    async () => {
      const e2e = await startE2e({ config: { batch: { onInvalidRows: 'reject-file' }, outbox: { xlsx: true, retryFiles: true } } });
      await e2e.startDaemon();
      const rows = heldRows();
      await e2e.drop('payroll.csv', toCsv(rows));
      await waitFor(() => e2e.ledger().length === 2 || undefined, 'both payouts created', 30_000);
      for (const row of rows) e2e.sandbox.settle({ merchantReferenceId: row.merchantReferenceId }, 'CANCELLED');
      const batch = await e2e.waitForBatch('payroll.csv', ['COMPLETE'], 30_000);
      const retryCsv = join(e2e.outbox, `${batch.id}_payroll.csv.retry.csv`);
      const retryXlsx = join(e2e.outbox, `${batch.id}_payroll.csv.retry.xlsx`);
      await waitFor(async () => (await e2e.outboxNames()).includes(basename(retryXlsx)), 'the retry files', 20_000);
      expect(await readFile(retryCsv, 'utf8')).toContain(`,${ACCOUNTS[0]},`);

      const work = join(e2e.dir, 'soffice');
      const profile = join(work, 'profile');

      // Opened and saved as CSV: the accounts lose their leading zeros.
      const resaved = await libreOffice(retryCsv, CSV_EXPORT, join(work, 'csv'), profile, CSV_IMPORT);
      const resavedText = await readFile(resaved, 'utf8');
      expect(resavedText).toContain(',12345679999,');
      expect(resavedText).not.toContain(ACCOUNTS[0]);
      const validate = await e2e.cli(['validate', resaved]);
      expect(validate.code, validate.stdout).toBe(1);
      expect(validate.stdout).toContain('LEADING_ZEROS_LOST');
      await e2e.drop('payroll-retry-resaved.csv', await readFile(resaved));
      const refused = await e2e.waitForBatch('payroll-retry-resaved.csv', ['REJECTED', 'ACTIVE', 'COMPLETE'], 30_000);
      expect(refused.state).toBe('REJECTED');
      const ack = await e2e.waitForOutbox(refused, 'ack');
      const verdicts = ack.rows.filter((r) => r['line'] !== '');
      expect(verdicts.map((r) => [r['merchant_reference_id'], r['verdict']])).toEqual([
        ['LZ-0001-R1', 'REJECTED'],
        ['LZ-0002-R1', 'REJECTED'],
      ]);
      for (const v of verdicts) {
        expect(v['reason']).toContain('LEADING_ZEROS_LOST');
        expect(v['reason']).toContain('has lost its leading zeros');
        expect(v['reason']).toContain('open the .xlsx retry file instead');
      }
      expect(e2e.ledger()).toHaveLength(2);

      // The .xlsx opened and saved again keeps every account as written: dropped back, it pays them.
      const roundTripped = await libreOffice(retryXlsx, 'xlsx', join(work, 'xlsx'), profile);
      await e2e.drop('payroll-retry.xlsx', await readFile(roundTripped));
      await waitFor(() => e2e.ledger().length === 4 || undefined, 'the retry payouts created', 30_000);
      for (const ref of ['LZ-0001-R1', 'LZ-0002-R1']) e2e.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
      const retried = await e2e.waitForBatch('payroll-retry.xlsx', ['COMPLETE'], 30_000);
      const result = await e2e.waitForOutbox(retried, 'result');
      expect(result.rows.map((r) => [r['merchant_reference_id'], r['status']])).toEqual([
        ['LZ-0001-R1', 'PAID'],
        ['LZ-0002-R1', 'PAID'],
      ]);
      const paid = e2e
        .ledger()
        .filter((p) => p.merchantReferenceId.endsWith('-R1'))
        .map((p) => [p.merchantReferenceId, p.accountNumber, p.status])
        .sort();
      expect(paid).toEqual([
        ['LZ-0001-R1', ACCOUNTS[0], 'PAID'],
        ['LZ-0002-R1', ACCOUNTS[1], 'PAID'],
      ]);
    },
    // LibreOffice starts twice; on a loaded machine each start takes long.
    480_000,
  );
});

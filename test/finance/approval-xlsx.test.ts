/**
 * The .xlsx twins of a batch that went through approval: the result, summary and reconciliation
 * spreadsheets carry the same `approval` column as their CSVs (docs/result-files.md: the first sheet has
 * the CSV's columns and rows). Real SQLite, real files written by the daemon's outbox and by
 * `payoutd report`, read back with exceljs.
 */
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { approvalAuditText, readApproval } from '../../src/approval/index.js';
import { reconciliationReport } from '../../src/cli/commands/finance.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { ManualClock } from '../../src/domain/clock.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import { getBatch, insertApprovalEntry, updateBatch, type BatchRecord } from '../../src/store/index.js';
import { readOutboxCsv } from '../e2e/harness.js';
import { DAY, T0, addBatch, addRows, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

/** Headers and rows of a sheet as text, a time header without its zone, a date cell as the ISO instant it shows (UTC). */
async function sheetText(path: string, name: string): Promise<{ header: string[]; rows: Record<string, string>[] }> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const ws = wb.getWorksheet(name);
  if (!ws) throw new Error(`no sheet ${name} in ${path}`);
  const header = (ws.getRow(1).values as unknown[]).slice(1).map((h) => String(h).replace(/ \(UTC\)$/, ''));
  const rows: Record<string, string>[] = [];
  for (let r = 2; r <= ws.rowCount; r++) {
    const cells = ws.getRow(r);
    rows.push(Object.fromEntries(header.map((h, i) => [h, cellText(cells.getCell(i + 1).value)])));
  }
  return { header, rows };
}

function cellText(v: ExcelJS.CellValue): string {
  if (v === null || v === undefined) return '';
  return v instanceof Date ? v.toISOString() : String(v);
}

/** Batch B1 (jan.csv, one PAID row), uploaded by uma and approved by ana; B2 (feb.csv) went through no approval. */
async function approvedBatches(db: Database): Promise<BatchRecord> {
  await addBatch(db, 'B1', 'jan.csv');
  await addBatch(db, 'B2', 'feb.csv');
  await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B2', 2, request('INV-2'))]);
  await setRow(db, 'B1', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-1', createdAtMs: T0, deductionAmount: '26.78' });
  await setRow(db, 'B2', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-2', createdAtMs: T0 + 1, deductionAmount: '26.78' });
  await updateBatch(db, 'B1', { approvalState: 'APPROVED', approvalsNeeded: 1, uploadedBy: 'uma' }, T0);
  await insertApprovalEntry(db, {
    batchId: 'B1',
    round: 0,
    decision: 'approve',
    approver: 'ana',
    approverUid: 1002,
    agent: null,
    via: 'cli',
    comment: 'checked',
    sha256: 'B1'.padEnd(64, '0'),
    figuresJson: JSON.stringify({ totals: { PHP: '1500.5' }, rows: 1, largest: { PHP: '1500.5' } }),
    decidedAt: T0,
    instanceId: null,
  });
  return (await getBatch(db, 'B1')) as BatchRecord;
}

describe('the approval column in the .xlsx twins', () => {
  it('result.xlsx of an approved batch: the Result sheet has the approval column and cells of result.csv', async () => {
    const { db, dir } = await store();
    const batch = await approvedBatches(db);
    const audit = approvalAuditText(await readApproval(db, 'B1'));
    expect(audit).toContain('approved by ana (cli)');
    await new BatchOutbox(db, dir, true, undefined, { xlsx: true, retryFiles: false }).writeResult(batch);

    const csv = await readOutboxCsv(join(dir, 'B1_jan.csv.result.csv'));
    expect(csv.header.at(-1)).toBe('approval');
    const xlsx = await sheetText(join(dir, 'B1_jan.csv.result.xlsx'), 'Result');
    expect(xlsx.header).toEqual(csv.header);
    expect(xlsx.rows.map((r) => [r['merchant_reference_id'], r['approval']])).toEqual([['INV-1', audit]]);
    // Its Summary sheet is the summary file, audit included.
    const summaryCsv = await readOutboxCsv(join(dir, 'B1_jan.csv.summary.csv'));
    expect((await sheetText(join(dir, 'B1_jan.csv.result.xlsx'), 'Summary')).header).toEqual(summaryCsv.header);
  });

  it('summary.xlsx of an approved batch: the same columns and rows as summary.csv, audit included', async () => {
    const { db, dir } = await store();
    const batch = await approvedBatches(db);
    await new BatchOutbox(db, dir, true, undefined, { xlsx: true, retryFiles: false }).writeResult(batch);

    const csv = await readOutboxCsv(join(dir, 'B1_jan.csv.summary.csv'));
    expect(csv.header.at(-1)).toBe('approval');
    const xlsx = await sheetText(join(dir, 'B1_jan.csv.summary.xlsx'), 'Summary');
    expect(xlsx.header).toEqual(csv.header);
    expect(xlsx.rows.map((r) => [r['status'], r['measure'], r['approval']])).toEqual(
      csv.rows.map((r) => [r['status'], r['measure'], r['approval']]),
    );
    expect(xlsx.rows[0]?.['approval']).toContain('approved by ana (cli)');
  });

  it('a batch without approval keeps its .xlsx twins without the column, as its CSVs', async () => {
    const { db, dir } = await store();
    await approvedBatches(db);
    const plain = (await getBatch(db, 'B2')) as BatchRecord;
    await new BatchOutbox(db, dir, true, undefined, { xlsx: true, retryFiles: false }).writeResult(plain);
    const result = await sheetText(join(dir, 'B2_feb.csv.result.xlsx'), 'Result');
    expect(result.header).toEqual((await readOutboxCsv(join(dir, 'B2_feb.csv.result.csv'))).header);
    expect(result.header).not.toContain('approval');
    expect((await sheetText(join(dir, 'B2_feb.csv.summary.xlsx'), 'Summary')).header).not.toContain('approval');
  });

  it('payoutd report with approval in use: the Reconciliation sheet has the approval column and cells of the CSV', async () => {
    const { db, dir } = await store();
    await approvedBatches(db);
    const audit = approvalAuditText(await readApproval(db, 'B1'));
    // One knex per SQLite file: the command opens its own.
    await closeDatabase(db);
    const config: ResolvedConfig = loadConfig(
      { env: {}, cwd: dir },
      {
        paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') },
        database: { filename: join(dir, 'state.sqlite'), synchronous: 'NORMAL' },
        outbox: { xlsx: true },
        approval: { required: 'always', approvers: { users: ['ana'] } },
      },
    );
    const out = join(dir, 'rec.csv');
    const r = await reconciliationReport(config, { since: '2026-01-10', out }, new ManualClock(T0 + DAY));
    expect(r.xlsxPath).toBe(join(dir, 'rec.xlsx'));

    const csv = await readOutboxCsv(out);
    expect(csv.header.at(-1)).toBe('approval');
    const xlsx = await sheetText(join(dir, 'rec.xlsx'), 'Reconciliation');
    expect(xlsx.header).toEqual(csv.header);
    expect(xlsx.rows.map((row) => [row['batch_id'], row['approval']])).toEqual([
      ['B1', audit],
      ['B2', ''],
    ]);
    expect(xlsx.rows.map((row) => row['approval'])).toEqual(csv.rows.map((row) => row['approval']));
  });
});

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it, vi } from 'vitest';
import { reconciliationReport, retryFile } from '../../src/cli/commands/finance.js';
import { pruneCommand } from '../../src/cli/commands/retention.js';
import { manageUsers } from '../../src/cli/commands/users.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { closeDatabase } from '../../src/store/db.js';
import { updateBatch } from '../../src/store/index.js';
import { writeLockHeldElsewhere } from '../support/database.js';
import { DAY, T0, addBatch, addRows, listDir, request, setRow, useStore, validRow } from './helpers.js';

const store = useStore();

function configFor(dir: string, xlsx = false): ResolvedConfig {
  return loadConfig(
    { env: {}, cwd: dir },
    {
      paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') },
      database: { filename: join(dir, 'state.sqlite'), synchronous: 'NORMAL' },
      outbox: { xlsx },
    },
  );
}

/** A batch with one PAID and one CANCELLED payout created on 2026-01-10; the test's own handle is closed after (one knex per SQLite file). */
async function seeded(): Promise<string> {
  const { db, dir } = await store();
  await addBatch(db, 'B1', 'jan.csv');
  await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B1', 3, request('INV-2'))]);
  await setRow(db, 'B1', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-1', createdAtMs: T0, deductionAmount: '26.78' });
  await setRow(db, 'B1', 3, { state: 'CANCELLED', serviceStatus: 'CANCELLED', payoutId: 'P-2', createdAtMs: T0 + 1 });
  await closeDatabase(db);
  return dir;
}

describe('payoutd report --since', () => {
  it('writes the report, its totals and (with outbox.xlsx) the .xlsx; until defaults to the clock', async () => {
    const dir = await seeded();
    const out = join(dir, 'jan.csv');
    const r = await reconciliationReport(configFor(dir, true), { since: '2026-01-10', out }, new ManualClock(T0 + DAY));
    expect(r).toMatchObject({ path: out, totalsPath: join(dir, 'jan.totals.csv'), xlsxPath: join(dir, 'jan.xlsx') });
    expect(r.summary.statusCounts).toEqual({ PAID: 1, CANCELLED: 1 });
    expect((await readFile(out, 'utf8')).split('\r\n').filter(Boolean)).toHaveLength(3);
    const wb = new ExcelJS.Workbook();
    await wb.xlsx.readFile(join(dir, 'jan.xlsx'));
    expect(wb.worksheets.map((w) => w.name)).toEqual(['Reconciliation', 'Summary']);
  });

  it('selects nothing before the payouts were created, and refuses a bad date', async () => {
    const dir = await seeded();
    const r = await reconciliationReport(configFor(dir), { since: '2026-01-01', until: '2026-01-10', out: join(dir, 'early.csv') });
    expect(r.summary.rowCount).toBe(0);
    expect(r.xlsxPath).toBeNull();
    await expect(reconciliationReport(configFor(dir), { since: '10/01/2026' })).rejects.toMatchObject({ code: 'REPORT_BAD_DATE' });
  });
});

describe('payoutd retry-file --batch', () => {
  it('writes the retry file of a batch into the outbox by default', async () => {
    const dir = await seeded();
    const config = configFor(dir);
    const r = await retryFile(config, 'B1', undefined);
    expect(r.path).toBe(join(dir, 'outbox', 'B1_jan.csv.retry.csv'));
    expect(r.rowCount).toBe(1);
    expect(await listDir(join(dir, 'outbox'))).toEqual(['B1_jan.csv.retry.csv']);
    await expect(retryFile(config, 'NOPE', undefined)).rejects.toMatchObject({ code: 'BATCH_NOT_FOUND' });
  });

  it('says where it wrote the file, and only says "no file written" when none was', async () => {
    const dir = await seeded();
    const said = await printed(() => retryFile(configFor(dir), 'B1', undefined));
    expect(said).toEqual([`retry file of batch B1: 1 row(s) written to ${join(dir, 'outbox', 'B1_jan.csv.retry.csv')}`]);
  });
});

describe('payoutd retry-file: a row left out', () => {
  // A reference of finance's own may look like a retry round (a revision PO-77-R2 beside PO-77-R1): the row is left
  // out (a retry could pay twice), and the message says what was found, not that the row was retried.
  it('says which reference its retry would take and how that one stands, and what to do if it is no retry', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'revisions.csv');
    await addRows(db, [validRow('B1', 2, request('PO-77-R1')), validRow('B1', 3, request('PO-77-R2'))]);
    await setRow(db, 'B1', 2, { state: 'CANCELLED', serviceStatus: 'CANCELLED', payoutId: 'P-1', createdAtMs: T0 });
    await setRow(db, 'B1', 3, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-2', createdAtMs: T0 });
    await closeDatabase(db);
    const said = await printed(() => retryFile(configFor(dir), 'B1', undefined));
    expect(said).toEqual([
      'batch B1: no retry file written: each CANCELLED row is left out, as follows',
      '  line 2 PO-77-R1: left out: PO-77-R2, the reference its retry would take, is PAID. If PO-77-R2 is no retry of it, pay it again in a file of your own with a new reference',
    ]);
  });
});

/** What `f` printed on stdout, a line each (shown as well). */
async function printed(f: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return write(chunk, ...(rest as []));
  });
  try {
    await f();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

describe('payoutd prune', () => {
  it('with --dry-run lists what would go and removes nothing; without it removes; unset retention keeps everything', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'jan.csv');
    await addRows(db, [validRow('B1', 2, request('INV-1'))]);
    await setRow(db, 'B1', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-1' });
    await updateBatch(db, 'B1', { state: 'COMPLETE', completedAt: T0, ackWrittenAt: T0, resultWrittenAt: T0 }, T0);
    await closeDatabase(db);
    await mkdir(join(dir, 'outbox'));
    await writeFile(join(dir, 'outbox', 'B1_jan.csv.result.csv'), 'x');
    const config = configFor(dir);
    const later = new ManualClock(T0 + 40 * DAY);

    expect(await pruneCommand(config, { dryRun: true }, later)).toEqual([]);
    const listed = await pruneCommand(config, { dryRun: true, days: 30 }, later);
    expect(listed.map((i) => [i.batch.id, i.rows, i.files])).toEqual([['B1', 1, [join(dir, 'outbox', 'B1_jan.csv.result.csv')]]]);
    expect(await listDir(join(dir, 'outbox'))).toEqual(['B1_jan.csv.result.csv']);
    // Not old enough for 60 days.
    expect(await pruneCommand(config, { dryRun: false, days: 60 }, later)).toEqual([]);

    await pruneCommand(config, { dryRun: false, days: 30 }, later);
    expect(await listDir(join(dir, 'outbox'))).toEqual([]);
    expect(await pruneCommand(config, { dryRun: true, days: 30 }, later)).toEqual([]);
    await expect(pruneCommand(config, { dryRun: true, days: 0 }, later)).rejects.toMatchObject({ code: 'BAD_ARGUMENT' });
  });
});

describe('the commands that bring the schema up to date, beside a daemon in a long write', () => {
  // Reading commands: on an up-to-date schema they take no lock, so a write of the daemon longer than
  // database.busyTimeoutMs does not make them fail (knex's migration lock did, "MigrationLocked").
  const commands: [string, (config: ResolvedConfig, dir: string) => Promise<unknown>][] = [
    [
      'report --since',
      (config, dir) => reconciliationReport(config, { since: '2026-01-01', out: join(dir, 'r.csv') }, new ManualClock(T0 + DAY)),
    ],
    ['retry-file', (config) => retryFile(config, 'B1', undefined)],
    ['prune --dry-run', (config) => pruneCommand(config, { dryRun: true, days: 30 }, new ManualClock(T0 + 40 * DAY))],
    ['user list', (config) => manageUsers(config, { action: 'list', proxyOnly: false, json: true })],
  ];
  for (const [name, command] of commands) {
    it(`${name} does not wait for it, nor fail`, async () => {
      const dir = await seeded();
      const base = configFor(dir);
      const config = { ...base, database: { ...base.database, busyTimeoutMs: 100 } };
      const daemon = await writeLockHeldElsewhere(join(dir, 'state.sqlite'), 800);
      const outcome = await command(config, dir).then(
        () => 'ok',
        (err: unknown) => String(err),
      );
      await daemon.released;
      expect(outcome).toBe('ok');
    });
  }
});

import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it, vi } from 'vitest';
import { reconciliationReport, retryFile } from '../../src/cli/commands/finance.js';
import { reportBatch, validateFile } from '../../src/cli/commands/inspect.js';
import { pruneCommand } from '../../src/cli/commands/retention.js';
import { status } from '../../src/cli/commands/status.js';
import { exitCodeOf } from '../../src/cli/output.js';
import { manageUsers } from '../../src/cli/commands/users.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { closeDatabase } from '../../src/store/db.js';
import { updateBatch, type Database } from '../../src/store/index.js';
import { writeLockHeldElsewhere } from '../support/database.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { validCsvRow } from '../support/rows.js';
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

/**
 * A batch with one PAID and one CANCELLED payout created on 2026-01-10, and what `more` adds; the test's own handle
 * is closed after (one knex per SQLite file).
 */
async function seeded(more: (db: Database) => Promise<void> = async () => undefined): Promise<string> {
  const { db, dir } = await store();
  await addBatch(db, 'B1', 'jan.csv');
  await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B1', 3, request('INV-2'))]);
  await setRow(db, 'B1', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-1', createdAtMs: T0, deductionAmount: '26.78' });
  await setRow(db, 'B1', 3, { state: 'CANCELLED', serviceStatus: 'CANCELLED', payoutId: 'P-2', createdAtMs: T0 + 1 });
  await more(db);
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

describe('payoutd validate', () => {
  /** A file of two good rows and one refused for its amount, validated under `onInvalidRows`; what it prints. */
  async function validated(onInvalidRows: 'skip-rows' | 'reject-file'): Promise<string> {
    const { dir } = await store();
    const file = join(dir, 'mixed.csv');
    const rows = [validCsvRow('VT-1'), validCsvRow('VT-2', { payoutAmount: '250' }), validCsvRow('VT-3', { payoutAmount: '100.505' })];
    await writeFile(file, `${[FIELD_PATHS.join(','), ...rows].join('\n')}\n`);
    const config = loadConfig(
      { env: {}, cwd: dir },
      { paths: { stateDir: dir, outbox: join(dir, 'outbox'), inbox: join(dir, 'inbox') }, batch: { onInvalidRows } },
    );
    return (await printed(() => validateFile(config, file))).join('\n');
  }

  it('totals the rows as the ack would: a row refused for its amount is no accepted money', async () => {
    const out = await validated('skip-rows');
    expect(out).toMatch(/^mixed\.csv, line 4, column D "payoutAmount": AMOUNT_LOCALE_FORMAT: /m);
    expect(out).not.toContain('451.005 PHP');
    expect(out).toContain('PHP: 3 rows, 451.005 (accepted 2 rows, 350.50; rejected 1 row, 100.505)');
  });

  it('under reject-file, accepts no row of a file with a refused row, as its ack would say', async () => {
    const out = await validated('reject-file');
    expect(out).toContain('PHP: 3 rows, 451.005 (accepted 0 rows, 0.00; rejected 3 rows, 451.005)');
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

  it('says a later round sent directly is one, not the reference its retry would take', async () => {
    const { db, dir } = await store();
    await addBatch(db, 'B1', 'orders.csv');
    await addRows(db, [validRow('B1', 2, request('SO-5'))]);
    await setRow(db, 'B1', 2, { state: 'CANCELLED', serviceStatus: 'CANCELLED', payoutId: 'P-1', createdAtMs: T0 });
    await addBatch(db, 'B2', 'by-hand.csv');
    await addRows(db, [validRow('B2', 2, request('SO-5-R2'))]);
    await setRow(db, 'B2', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-2', createdAtMs: T0 });
    await closeDatabase(db);
    expect(await printed(() => retryFile(configFor(dir), 'B1', undefined))).toEqual([
      'batch B1: no retry file written: each CANCELLED row is left out, as follows',
      '  line 2 SO-5: left out: SO-5-R2, a later round of it sent directly, is PAID. If SO-5-R2 is no retry of it, pay it again in a file of your own with a new reference',
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

/** The lines of a CSV file the outbox wrote, without its byte order mark. */
async function csvLines(path: string): Promise<string[]> {
  return (await readFile(path, 'utf8'))
    .replace(/^\uFEFF/, '')
    .split('\r\n')
    .filter(Boolean);
}

/** A batch finished on T0, its outbox files written: retention may take it 30 days on. */
const FINISHED = { state: 'COMPLETE', completedAt: T0, ackWrittenAt: T0, resultWrittenAt: T0 } as const;

describe('a batch whose details retention removed', () => {
  const prunedAt = T0 + 40 * DAY;
  const removed = 'removed by retention (retention.days) on 2026-02-19 12:00 UTC';

  /** B1 of seeded(), finished and pruned by `payoutd prune --days 30`; B2, unfinished, has a PAID payout of the same day. */
  async function pruned(): Promise<{ dir: string; config: ResolvedConfig }> {
    const dir = await seeded(async (db) => {
      await updateBatch(db, 'B1', FINISHED, T0);
      await addBatch(db, 'B2', 'feb.csv');
      await addRows(db, [validRow('B2', 2, request('INV-3'))]);
      await setRow(db, 'B2', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-3', createdAtMs: T0 + 2 });
    });
    const config = configFor(dir);
    await mkdir(join(dir, 'outbox'));
    await writeFile(join(dir, 'outbox', 'B1_jan.csv.result.csv'), 'x');
    await pruneCommand(config, { dryRun: false, days: 30 }, new ManualClock(prunedAt));
    return { dir, config };
  }

  it('report --since lists its payouts without amounts, says why in each row, keeps them out of the sums and names the batch', async () => {
    const { dir, config } = await pruned();
    const out = join(dir, 'jan.csv');
    let r: Awaited<ReturnType<typeof reconciliationReport>> | undefined;
    const said = await printed(async () => {
      r = await reconciliationReport(config, { since: '2026-01-10', until: '2026-01-11', out });
    });
    const note = `details ${removed}: this row's amounts, fees and times are not in this report or its totals; they are in B1_jan.csv.result.csv, the result file downloaded from the outbox before`;
    const rows = (await readFile(out, 'utf8')).split('\r\n').filter(Boolean).slice(1);
    expect(rows.map((line) => line.split(',').slice(0, 6).join(','))).toEqual([
      'B1,jan.csv,2,INV-1,P-1,PAID',
      'B1,jan.csv,3,INV-2,P-2,CANCELLED',
      'B2,feb.csv,2,INV-3,P-3,PAID',
    ]);
    expect(rows[0]).toContain(`,"${note}"`);
    expect(rows[1]).toContain(`,"${note}"`);
    expect(rows[2]).not.toContain('retention');
    // An empty amount is not a zero: those rows are counted on their own line, in no sum.
    expect(await csvLines(join(dir, 'jan.totals.csv'))).toEqual([
      'status,measure,currency,row_count,amount,rows_not_summed',
      'PAID,payout_amount,PHP,1,1500.5,0',
      'PAID,details_removed,,1,,1',
      'PAID,rows,,2,,',
      'CANCELLED,details_removed,,1,,1',
      'CANCELLED,rows,,1,,',
      'ALL,rows,,3,,',
    ]);
    expect(r?.prunedBatches).toEqual([
      { batchId: 'B1', fileName: 'jan.csv', at: prunedAt, complete: true, resultFile: 'B1_jan.csv.result.csv', payouts: 2 },
    ]);
    expect(said.slice(-2)).toEqual([
      "2 of these payouts, of 1 batch(es), are listed WITHOUT amounts: the batches' details were removed by retention, so their amounts, fees and times are not in the report or its totals (see their details_removed lines). Take them from each batch's result file, as downloaded from the outbox before:",
      `  B1 jan.csv: 2 payout(s), details ${removed}; figures in B1_jan.csv.result.csv, the result file downloaded from the outbox before`,
    ]);
  });

  it('report --batch refuses it and says where its figures are; no file is written', async () => {
    const { dir, config } = await pruned();
    const out = join(dir, 'b1.csv');
    const err: unknown = await reportBatch(config, 'B1', out).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'BATCH_PRUNED',
      message: `batch B1 (jan.csv): its row details were ${removed}, so a report of it would have no amounts: no report written. Its record is B1_jan.csv.result.csv, the result file downloaded from the outbox before; payoutd status --batch B1 shows its rows by state`,
    });
    expect(exitCodeOf(err)).toBe(2);
    expect(await listDir(dir)).not.toContain('b1.csv');
  });

  it("retry-file says its CANCELLED rows must be sent again from finance's copy, under new references", async () => {
    const { config } = await pruned();
    await expect(retryFile(config, 'B1', undefined)).rejects.toMatchObject({
      code: 'BATCH_PRUNED',
      message: `batch B1 (jan.csv): its row details were ${removed}, so its 1 CANCELLED row(s) cannot be written to a retry file: send those not paid by an earlier retry again from finance's own copy (the retry or result file downloaded from the outbox before, or the file as sent), each under a new reference`,
    });
  });

  it('status --batch says its outbox files were removed, and when', async () => {
    const { dir, config } = await pruned();
    const said = await printed(() => status(config, 'B1', 20, false));
    expect(said).toContain(
      `outbox files: ${join(dir, 'outbox')}/B1_jan.csv.{ack,result,summary}.csv: ${removed}, with the taken file and the row details`,
    );
    expect(said.join('\n')).not.toMatch(/outbox files: [^\n]*csv$/m);
  });
});

describe('a batch whose pruning was cut short', () => {
  const startedAt = T0 + 40 * DAY;
  const beingRemoved =
    'being removed by retention (retention.days) since 2026-02-19 12:00 UTC, not finished yet (the next prune finishes it)';

  it('prune says what it removed, and every reader notes its details as being removed, its cleared rows or not', async () => {
    const dir = await seeded(async (db) => {
      await updateBatch(db, 'B1', FINISHED, T0);
      // Lines 2 to 20003: the row details of lines 2 to 20001 are one range, the rest another.
      const more = Array.from({ length: 20_000 }, (_, i) => validRow('B1', i + 4, request(`INV-M-${i}`)));
      await addRows(db, more);
      await db('payouts')
        .where({ batch_id: 'B1' })
        .andWhere('line', '>', 3)
        .update({ state: 'PAID', service_status: 'PAID', payout_id: db.raw(`'P-' || line`), created_at_ms: T0 + 2 });
      await addBatch(db, 'B2', 'feb.csv');
      await addRows(db, [validRow('B2', 2, request('INV-3'))]);
      await setRow(db, 'B2', 2, { state: 'PAID', serviceStatus: 'PAID', payoutId: 'P-3', createdAtMs: T0 + 3 });
      // Stands for a full disk (or SQLITE_BUSY, or a kill) in the second range.
      await db.raw(
        `CREATE TRIGGER full_disk BEFORE UPDATE OF request_values ON payouts WHEN old.line = 20003 BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
      );
    });
    const config = configFor(dir);
    await mkdir(join(dir, 'outbox'));
    await writeFile(join(dir, 'outbox', 'B1_jan.csv.result.csv'), 'x');

    const err: unknown = await pruneCommand(config, { dryRun: false, days: 30 }, new ManualClock(startedAt)).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PRUNE_INCOMPLETE' });
    expect((err as Error).message.split('\n')[1]).toMatch(
      /^B1 jan\.csv: cannot clear its row details \(SQLITE_\w+: database or disk is full\); 1 of its 1 file\(s\) removed, the details of 20000 of its 20002 row\(s\) cleared, the others kept; until a prune finishes it, reports note its row details as being removed$/,
    );
    expect(await listDir(join(dir, 'outbox'))).toEqual([]);

    // report --since: no row of B1 shows amounts (line 2 was cleared, line 20003 was not); none is summed.
    const out = join(dir, 'jan.csv');
    const said = await printed(() => reconciliationReport(config, { since: '2026-01-10', until: '2026-01-11', out }));
    const note = `details ${beingRemoved}: this row's amounts, fees and times are not in this report or its totals; they are in B1_jan.csv.result.csv, the result file downloaded from the outbox before`;
    const rows = (await readFile(out, 'utf8')).split('\r\n').filter(Boolean).slice(1);
    expect(rows).toHaveLength(20_003);
    const b1 = rows.filter((r) => r.startsWith('B1,'));
    expect(b1.filter((r) => !r.endsWith(`,"${note}"`))).toEqual([]);
    // No money cell: payout_currency to fee_currency are empty.
    expect(b1.filter((r) => r.split(',').slice(7, 14).join('') !== '')).toEqual([]);
    expect(await csvLines(join(dir, 'jan.totals.csv'))).toEqual([
      'status,measure,currency,row_count,amount,rows_not_summed',
      'PAID,payout_amount,PHP,1,1500.5,0',
      'PAID,details_removed,,20001,,20001',
      'PAID,rows,,20002,,',
      'CANCELLED,details_removed,,1,,1',
      'CANCELLED,rows,,1,,',
      'ALL,rows,,20003,,',
    ]);
    expect(said.slice(-2)).toEqual([
      "20002 of these payouts, of 1 batch(es), are listed WITHOUT amounts: the batches' details were removed by retention (or are being removed), so their amounts, fees and times are not in the report or its totals (see their details_removed lines). Take them from each batch's result file, as downloaded from the outbox before:",
      `  B1 jan.csv: 20002 payout(s), details ${beingRemoved}; figures in B1_jan.csv.result.csv, the result file downloaded from the outbox before`,
    ]);

    await expect(reportBatch(config, 'B1', join(dir, 'b1.csv'))).rejects.toMatchObject({
      code: 'BATCH_PRUNED',
      message: `batch B1 (jan.csv): its row details are ${beingRemoved}, so a report of it would lack amounts: no report written. Its record is B1_jan.csv.result.csv, the result file downloaded from the outbox before; payoutd status --batch B1 shows its rows by state`,
    });
    await expect(retryFile(config, 'B1', undefined)).rejects.toMatchObject({
      code: 'BATCH_PRUNED',
      message: expect.stringMatching(
        `^batch B1 \\(jan.csv\\): its row details are ${beingRemoved.replace(/[()]/g, '\\$&')}, so its 1 CANCELLED row`,
      ),
    });
    expect(await printed(() => status(config, 'B1', 20, false))).toContain(
      `outbox files: ${join(dir, 'outbox')}/B1_jan.csv.{ack,result,summary}.csv: ${beingRemoved}, with the taken file and the row details`,
    );
  }, 60_000);
});

describe('payoutd prune: a batch it cannot prune', () => {
  it('names the batch, file and error, fails, and prunes it the next time', async () => {
    const dir = await seeded(async (db) => {
      await updateBatch(db, 'B1', FINISHED, T0);
      await addBatch(db, 'B2', 'feb.csv');
      await updateBatch(db, 'B2', FINISHED, T0);
    });
    await mkdir(join(dir, 'outbox'));
    await writeFile(join(dir, 'outbox', 'B1_jan.csv.ack.csv'), 'x');
    // A folder cannot be unlinked, as an immutable file cannot (chattr +i); permissions would not stop a test run as root.
    const stuck = join(dir, 'outbox', 'B1_jan.csv.result.csv');
    await mkdir(stuck);
    await writeFile(join(stuck, 'inside'), 'x');
    const config = configFor(dir);
    const later = new ManualClock(T0 + 40 * DAY);

    let err: unknown;
    const said = await printed(async () => {
      err = await pruneCommand(config, { dryRun: false, days: 30 }, later).catch((e: unknown) => e);
    });
    expect(said.at(-1)).toBe('removed: 1 batch(es); their references and payout ids are kept');
    expect(err).toMatchObject({ code: 'PRUNE_INCOMPLETE' });
    expect((err as Error).message.split('\n')).toEqual([
      "1 of 2 batch(es) not pruned; the next prune (the daemon's, or payoutd prune) tries each again once the cause is fixed:",
      `B1 jan.csv: cannot remove ${stuck} (EISDIR: illegal operation on a directory, unlink '${stuck}'); 1 of its 2 file(s) removed, its row details kept; ` +
        'until a prune finishes it, reports note its row details as being removed',
    ]);
    expect(exitCodeOf(err)).toBe(1);

    await rm(stuck, { recursive: true });
    expect((await pruneCommand(config, { dryRun: false, days: 30 }, later)).map((i) => i.batch.id)).toEqual(['B1']);
    expect(await listDir(join(dir, 'outbox'))).toEqual([]);
  });
});

describe('the commands that bring the schema up to date, beside a daemon in a long write', () => {
  // Reading commands: on an up-to-date schema they take no lock, so a write of the daemon longer than
  // database.busyTimeoutMs does not make them fail (knex's migration lock did, "MigrationLocked").
  // report --since waits for it instead (test/finance/consecutive-reports.test.ts): the write may be of payouts it must list.
  const commands: [string, (config: ResolvedConfig, dir: string) => Promise<unknown>][] = [
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

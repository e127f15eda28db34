/**
 * Archive and retention on a real database (SQLite here, PostgreSQL in test/postgres) and real folders: a finished
 * batch's taken file moves to `<stateDir>/archive/YYYY/MM/DD/<batch id>_<name>`;
 * `retention.days` removes the archived inputs, outbox files and row details
 * of batches finished longer ago, keeping each reference and payout id (an
 * old reference is still refused as a duplicate); a dry run lists and
 * removes nothing; nothing unfinished is ever chosen.
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { expect } from 'vitest';
import { isPostgres } from '../../src/store/db.js';
import { payoutsCreatedBetween, type Database, type ReportedPayoutRow } from '../../src/store/index.js';
import { detailsRemovedOf } from '../../src/daemon/outbox.js';
import { ManualClock } from '../../src/domain/clock.js';
import { archiveFinishedBatches, prune, prunePlan, Retention, type RetentionDeps } from '../../src/daemon/retention.js';
import { acceptBatchRows, getBatch, markArchived, updateBatch } from '../../src/store/index.js';
import { createLogger } from '../../src/log/index.js';
import { DAY, T0, addBatch, addRows, listDir, request, setRow, validRow } from './helpers.js';

/** A database and a folder of the test's own. */
export interface RetentionWorld {
  db: Database;
  dir: string;
}

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A batch whose taken file is in `<stateDir>/claimed`, in `state`, finished `finishedAt`. */
async function takenBatch(
  s: RetentionWorld,
  id: string,
  state: 'ACTIVE' | 'COMPLETE' | 'REJECTED',
  receivedAt: number,
  stateDirName = 'state',
): Promise<string> {
  const claimed = join(s.dir, stateDirName, 'claimed');
  await mkdir(claimed, { recursive: true });
  const storedPath = join(claimed, `${id}-claim__payouts.csv`);
  await writeFile(storedPath, `header\nrow of ${id}\n`);
  await writeFile(`${storedPath}.ctl`, 'rows=1\n');
  await addBatch(s.db, id, 'payouts.csv', receivedAt);
  await updateBatch(
    s.db,
    id,
    {
      storedPath,
      controlPath: `${storedPath}.ctl`,
      state,
      ackWrittenAt: receivedAt,
      resultWrittenAt: state === 'ACTIVE' ? null : receivedAt + 1000,
      completedAt: state === 'COMPLETE' ? receivedAt + 1000 : null,
    },
    receivedAt,
  );
  return storedPath;
}

/** Archives the taken files of finished batches by day and batch id, once, and leaves unfinished ones. */
export async function checkArchive(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const done = await takenBatch(s, 'B-DONE', 'COMPLETE', T0);
  const active = await takenBatch(s, 'B-ACTIVE', 'ACTIVE', T0);
  const deps = { db: s.db, stateDir, outboxDir: join(s.dir, 'outbox'), watchTakenForMs: DAY, logger: quiet };

  // Still watched (inbox.watchTakenForMs after it was taken): left where it was taken.
  expect(await archiveFinishedBatches(deps, T0 + DAY - 1)).toBe(0);
  expect((await getBatch(s.db, 'B-DONE'))?.storedPath).toBe(done);
  expect(await archiveFinishedBatches(deps, T0 + DAY + 5000)).toBe(1);
  const day = join(stateDir, 'archive', '2026', '01', '10');
  expect(await listDir(day)).toEqual(['B-DONE_payouts.csv', 'B-DONE_payouts.csv.ctl']);
  expect(await readFile(join(day, 'B-DONE_payouts.csv'), 'utf8')).toBe('header\nrow of B-DONE\n');
  const archived = await getBatch(s.db, 'B-DONE');
  expect([archived?.storedPath, archived?.controlPath, archived?.archivedAt]).toEqual([
    join(day, 'B-DONE_payouts.csv'),
    join(day, 'B-DONE_payouts.csv.ctl'),
    T0 + DAY + 5000,
  ]);
  expect(await listDir(join(stateDir, 'claimed'))).toEqual([`B-ACTIVE-claim__payouts.csv`, `B-ACTIVE-claim__payouts.csv.ctl`]);
  expect((await getBatch(s.db, 'B-ACTIVE'))?.storedPath).toBe(active);
  // Nothing more to do on the next pass.
  expect(await archiveFinishedBatches(deps, T0 + DAY + 6000)).toBe(0);
}

/** Finishes a move that stopped before the record was updated. */
export async function checkResumedMove(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const stored = await takenBatch(s, 'B-1', 'COMPLETE', T0);
  const day = join(stateDir, 'archive', '2026', '01', '10');
  await mkdir(day, { recursive: true });
  // The file moved, then the process stopped: the record still names the claimed path.
  await writeFile(join(day, 'B-1_payouts.csv'), await readFile(stored));
  await rm(stored);
  const deps = { db: s.db, stateDir, outboxDir: join(s.dir, 'outbox'), watchTakenForMs: DAY, logger: quiet };
  expect(await archiveFinishedBatches(deps, T0 + DAY + 1)).toBe(1);
  expect((await getBatch(s.db, 'B-1'))?.storedPath).toBe(join(day, 'B-1_payouts.csv'));
}

/**
 * Archives only the batches taken into its own state folder, not those of a state folder whose name starts the
 * same (`state` and `state-b`), and a lost race to archive a batch changes nothing of its record.
 */
export async function checkOwnStateDir(s: RetentionWorld): Promise<void> {
  const stored = await takenBatch(s, 'B-OF-B', 'COMPLETE', T0, 'state-b');
  const depsOf = (name: string) => ({
    db: s.db,
    stateDir: join(s.dir, name),
    outboxDir: join(s.dir, 'outbox'),
    watchTakenForMs: DAY,
    logger: quiet,
  });
  expect(await archiveFinishedBatches(depsOf('state'), T0 + DAY + 1)).toBe(0);
  expect((await getBatch(s.db, 'B-OF-B'))?.storedPath).toBe(stored);
  expect(await listDir(join(s.dir, 'state-b', 'claimed'))).toEqual(['B-OF-B-claim__payouts.csv', 'B-OF-B-claim__payouts.csv.ctl']);

  expect(await archiveFinishedBatches(depsOf('state-b'), T0 + DAY + 1)).toBe(1);
  const archived = join(s.dir, 'state-b', 'archive', '2026', '01', '10', 'B-OF-B_payouts.csv');
  expect((await getBatch(s.db, 'B-OF-B'))?.storedPath).toBe(archived);
  // A pass that read the record before it was archived, then lost the race: the record keeps the archived file.
  expect(await markArchived(s.db, 'B-OF-B', { from: stored, storedPath: stored, controlPath: `${stored}.ctl` }, T0 + DAY + 2)).toBe(false);
  const after = await getBatch(s.db, 'B-OF-B');
  expect([after?.storedPath, after?.controlPath, after?.archivedAt]).toEqual([archived, `${archived}.ctl`, T0 + DAY + 1]);
}

/** Prunes what is older than retention.days: files and row details, keeping references and payout ids. */
export async function checkPrune(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const outboxDir = join(s.dir, 'outbox');
  await mkdir(outboxDir, { recursive: true });
  const now = T0 + 100 * DAY;
  await takenBatch(s, 'B-OLD', 'COMPLETE', T0);
  await takenBatch(s, 'B-NEW', 'COMPLETE', now - DAY);
  await takenBatch(s, 'B-OPEN', 'ACTIVE', T0);
  // An old batch marked COMPLETE with a row still pending is unfinished all the same: never chosen.
  await takenBatch(s, 'B-ODD', 'COMPLETE', T0);
  await addRows(s.db, [
    validRow('B-OLD', 2, request('INV-OLD-1')),
    validRow('B-OLD', 3, request('INV-OLD-2')),
    validRow('B-OPEN', 2, request('INV-OPEN')),
    validRow('B-ODD', 2, request('INV-ODD')),
  ]);
  await setRow(s.db, 'B-OLD', 2, {
    state: 'PAID',
    payoutId: 'P-1',
    rate: '56.1',
    deductionAmount: '26.7',
    completeTime: '2026-01-10T13:00:00Z',
  });
  await setRow(s.db, 'B-OLD', 3, { state: 'CANCELLED', payoutId: 'P-2', reasonCode: 'CANCELLED', reason: 'account closed' });
  await setRow(s.db, 'B-OPEN', 2, { state: 'PENDING', payoutId: 'P-3' });
  await setRow(s.db, 'B-ODD', 2, { state: 'PENDING', payoutId: 'P-4' });
  for (const id of ['B-OLD', 'B-NEW', 'B-OPEN'])
    for (const kind of ['ack.csv', 'ack.xlsx', 'result.csv', 'result.xlsx', 'retry.csv'])
      await writeFile(join(outboxDir, `${id}_payouts.csv.${kind}`), 'x');
  const deps = { db: s.db, stateDir, outboxDir, watchTakenForMs: DAY, logger: quiet };
  await archiveFinishedBatches(deps, T0 + DAY + 5000);

  const plan = await prunePlan(deps, 30, now);
  expect(plan.map((p) => p.batch.id)).toEqual(['B-OLD']);
  const day = join(stateDir, 'archive', '2026', '01', '10');
  expect(plan[0]?.rows).toBe(2);
  expect([...(plan[0]?.files ?? [])].sort()).toEqual(
    [
      join(day, 'B-OLD_payouts.csv'),
      join(day, 'B-OLD_payouts.csv.ctl'),
      ...['ack.csv', 'ack.xlsx', 'result.csv', 'result.xlsx', 'retry.csv'].map((k) => join(outboxDir, `B-OLD_payouts.csv.${k}`)),
    ].sort(),
  );
  // Listing removes nothing.
  expect((await listDir(outboxDir)).length).toBe(15);

  const outcome = await prune(deps, plan, now);
  expect([outcome.pruned.map((i) => i.batch.id), outcome.failed]).toEqual([['B-OLD'], []]);
  expect((await listDir(outboxDir)).filter((n) => n.startsWith('B-OLD'))).toEqual([]);
  expect((await listDir(outboxDir)).length).toBe(10);
  expect((await listDir(day)).filter((n) => n.startsWith('B-OLD'))).toEqual([]);
  const rows = (await s.db('payouts').where({ batch_id: 'B-OLD' }).orderBy('line')) as Record<string, unknown>[];
  expect(rows.map((r) => [r['line'], r['merchant_reference_id'], r['state'], r['payout_id']])).toEqual([
    [2, 'INV-OLD-1', 'PAID', 'P-1'],
    [3, 'INV-OLD-2', 'CANCELLED', 'P-2'],
  ]);
  for (const r of rows) {
    expect([r['request_values'], r['rate'], r['deduction_amount'], r['complete_time'], r['reason']]).toEqual([
      null,
      null,
      null,
      null,
      null,
    ]);
  }
  expect((await getBatch(s.db, 'B-OLD'))?.prunedAt).toBe(now);
  // The unfinished batches kept everything.
  expect((await s.db('payouts').where({ batch_id: 'B-ODD' }).first())?.['request_values']).not.toBeNull();
  // Pruned once: nothing more to do.
  expect(await prunePlan(deps, 30, now)).toEqual([]);

  // An old reference dropped again is refused as a duplicate, never paid twice.
  await addBatch(s.db, 'B-AGAIN', 'again.csv', now);
  await addRows(s.db, [validRow('B-AGAIN', 2, request('INV-OLD-1'))]);
  const verdict = await acceptBatchRows(s.db, 'B-AGAIN', 'skip-rows', now);
  expect(verdict.duplicateCount).toBe(1);
  const again = (await s.db('payouts').where({ batch_id: 'B-AGAIN' }).first()) as Record<string, unknown>;
  expect([again['state'], again['reason_code']]).toEqual(['DUPLICATE', 'DUPLICATE_REFERENCE']);
  expect(again['reason']).toContain(
    'was already used by line 2 of "payouts.csv" (batch B-OLD, received 2026-01-10 12:00 UTC), finished long ago (its details are no longer kept)',
  );
}

/** The daemon archives at each pass and prunes on its schedule only with retention.days set. */
export async function checkSchedule(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const outboxDir = join(s.dir, 'outbox');
  await mkdir(outboxDir, { recursive: true });
  await takenBatch(s, 'B-OLD', 'COMPLETE', T0);
  await writeFile(join(outboxDir, 'B-OLD_payouts.csv.ack.csv'), 'x');
  const deps = { db: s.db, stateDir, outboxDir, watchTakenForMs: DAY, logger: quiet };

  await new Retention(deps, { everyMs: 3_600_000 }, new ManualClock(T0 + 400 * DAY)).pass();
  expect((await getBatch(s.db, 'B-OLD'))?.archivedAt).toBe(T0 + 400 * DAY);
  expect(await listDir(outboxDir)).toEqual(['B-OLD_payouts.csv.ack.csv']);

  const retention = new Retention(deps, { days: 30, everyMs: 3_600_000 }, new ManualClock(T0 + 400 * DAY));
  await retention.pass();
  expect(await listDir(outboxDir)).toEqual([]);
  expect((await getBatch(s.db, 'B-OLD'))?.prunedAt).toBe(T0 + 400 * DAY);
}

/**
 * A file that cannot be removed: prune names the batch, the file and the error, the batch keeps its row details
 * and is pruned by the next prune once the cause is gone; the log names each batch pruned, and each that was not.
 */
export async function checkPruneFailure(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const outboxDir = join(s.dir, 'outbox');
  await mkdir(outboxDir, { recursive: true });
  const now = T0 + 100 * DAY;
  const stored = await takenBatch(s, 'B-1', 'COMPLETE', T0);
  await takenBatch(s, 'B-2', 'COMPLETE', T0 + 1);
  await addRows(s.db, [validRow('B-1', 2, request('INV-1')), validRow('B-2', 2, request('INV-2'))]);
  await setRow(s.db, 'B-1', 2, { state: 'PAID', payoutId: 'P-1' });
  await setRow(s.db, 'B-2', 2, { state: 'PAID', payoutId: 'P-2' });
  await writeFile(join(outboxDir, 'B-2_payouts.csv.ack.csv'), 'x');
  // A folder cannot be unlinked, as an immutable file cannot; permissions would not stop a test run as root.
  const stuck = join(outboxDir, 'B-1_payouts.csv.result.csv');
  await mkdir(stuck);
  await writeFile(join(stuck, 'inside'), 'x');
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  const deps = { db: s.db, stateDir, outboxDir, watchTakenForMs: DAY, logger };

  const plan = await prunePlan(deps, 30, now);
  expect(plan.map((p) => p.batch.id)).toEqual(['B-1', 'B-2']);
  const outcome = await prune(deps, plan, now);
  expect(outcome.pruned.map((i) => i.batch.id)).toEqual(['B-2']);
  expect(outcome.failed.map((f) => [f.item.batch.id, f.file, f.filesRemoved, f.code])).toEqual([['B-1', stuck, 2, 'EISDIR']]);
  expect(outcome.failed[0]?.message).toContain(stuck);
  // Its files before the one that failed are gone; its row details are kept, and it is not marked pruned.
  expect(await listDir(join(stateDir, 'claimed'))).not.toContain(basename(stored));
  expect((await getBatch(s.db, 'B-1'))?.prunedAt ?? null).toBeNull();
  expect((await s.db('payouts').where({ batch_id: 'B-1' }).first())?.['request_values']).not.toBeNull();
  expect(lines.map((l) => [l['level'], l['msg'], l['batchId'], l['file'], l['path'], l['batches']])).toEqual([
    ['error', 'cannot prune a finished batch yet; will try again', 'B-1', 'payouts.csv', stuck, undefined],
    [
      'info',
      'retention: files and row details of old finished batches removed',
      undefined,
      undefined,
      undefined,
      [{ batchId: 'B-2', file: 'payouts.csv' }],
    ],
  ]);
  expect(lines[0]?.['err']).toMatchObject({ code: 'EISDIR' });

  // The cause gone, the next prune takes it.
  await rm(stuck, { recursive: true });
  const again = await prune(deps, await prunePlan(deps, 30, now + 1), now + 1);
  expect([again.pruned.map((i) => i.batch.id), again.failed]).toEqual([['B-1'], []]);
  expect((await getBatch(s.db, 'B-1'))?.prunedAt).toBe(now + 1);
}

/** Makes the clearing of the details of rows on `line` fail as a full disk would (a trigger on either engine); returns its removal. */
async function failClearingOf(db: Database, line: number): Promise<() => Promise<void>> {
  if (isPostgres(db)) {
    await db.raw(
      `CREATE FUNCTION full_disk() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100'; END $$ LANGUAGE plpgsql`,
    );
    await db.raw(
      `CREATE TRIGGER full_disk BEFORE UPDATE OF request_values ON payouts FOR EACH ROW WHEN (OLD.line = ${line}) EXECUTE FUNCTION full_disk()`,
    );
    return async () => {
      await db.raw('DROP TRIGGER full_disk ON payouts');
      await db.raw('DROP FUNCTION full_disk()');
    };
  }
  await db.raw(
    `CREATE TRIGGER full_disk BEFORE UPDATE OF request_values ON payouts WHEN old.line = ${line} BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
  );
  return async () => void (await db.raw('DROP TRIGGER full_disk'));
}

/**
 * A prune cut short in the second range of row details (a full disk), its files gone and pruned_at unset: its
 * pruning was recorded as begun before the first file went, so its details are noted as being removed and none of
 * its rows is reported with amounts, cleared or not; the failure says what went. Chosen again, it is finished.
 */
export async function checkPruneCutShort(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const outboxDir = join(s.dir, 'outbox');
  await mkdir(outboxDir, { recursive: true });
  const now = T0 + 100 * DAY;
  await takenBatch(s, 'B-1', 'COMPLETE', T0);
  await writeFile(join(outboxDir, 'B-1_payouts.csv.result.csv'), 'x');
  // More rows than one range of row details holds.
  const rows = 20_010;
  await addRows(
    s.db,
    Array.from({ length: rows }, (_, i) => validRow('B-1', i + 2, request(`INV-${i}`))),
  );
  await s.db('payouts').update({ state: 'PAID', payout_id: s.db.raw(`'P-' || merchant_reference_id`), created_at_ms: T0 });
  const removeFailure = await failClearingOf(s.db, 20_005);
  const deps = { db: s.db, stateDir, outboxDir, watchTakenForMs: DAY, logger: quiet };

  const outcome = await prune(deps, await prunePlan(deps, 30, now), now);
  expect(outcome.pruned).toEqual([]);
  expect(outcome.failed.map((f) => [f.item.batch.id, f.file, f.filesRemoved, f.rowsCleared, f.begun])).toEqual([
    ['B-1', null, 3, 20_000, true],
  ]);
  expect(await listDir(outboxDir)).toEqual([]);
  const cut = await getBatch(s.db, 'B-1');
  expect([cut?.prunedAt, cut?.pruneStartedAt]).toEqual([null, now]);
  expect(cut && detailsRemovedOf(cut)).toEqual({ at: now, complete: false, resultFile: 'B-1_payouts.csv.result.csv' });
  // The reconciliation report's rows: its pruning began, so none has amounts (line 2 was cleared, line 20005 was not).
  const reported: ReportedPayoutRow[] = [];
  for await (const r of payoutsCreatedBetween(s.db, T0, T0 + 1)) reported.push(r);
  expect(reported).toHaveLength(rows);
  expect(reported.filter((r) => r.requestValues !== null || r.payoutAmount !== null || r.payoutCurrency !== null)).toEqual([]);
  expect(new Set(reported.map((r) => r.batchPruneStartedAt))).toEqual(new Set([now]));

  // Chosen again until pruned_at is set; the cause gone, the next prune finishes it.
  await removeFailure();
  const again = await prunePlan(deps, 30, now + 1);
  expect(again.map((i) => [i.batch.id, i.files])).toEqual([['B-1', []]]);
  expect((await prune(deps, again, now + 1)).failed).toEqual([]);
  const done = await getBatch(s.db, 'B-1');
  expect([done?.prunedAt, done?.pruneStartedAt]).toEqual([now + 1, now]);
  expect(done && detailsRemovedOf(done)).toMatchObject({ at: now + 1, complete: true });
  expect(await s.db('payouts').where({ batch_id: 'B-1' }).whereNotNull('request_values').count({ n: '*' })).toEqual([{ n: 0 }]);
}

/** A batch with a row that can still move removes nothing, not even its files, and is not noted as being pruned. */
export async function checkPruneRowNotFinal(s: RetentionWorld): Promise<void> {
  const stateDir = join(s.dir, 'state');
  const outboxDir = join(s.dir, 'outbox');
  await mkdir(outboxDir, { recursive: true });
  const now = T0 + 100 * DAY;
  const stored = await takenBatch(s, 'B-1', 'COMPLETE', T0);
  await addRows(s.db, [validRow('B-1', 2, request('INV-1'))]);
  await setRow(s.db, 'B-1', 2, { state: 'PAID', payoutId: 'P-1' });
  const deps = { db: s.db, stateDir, outboxDir, watchTakenForMs: DAY, logger: quiet };
  const plan = await prunePlan(deps, 30, now);
  // Between the plan and the prune, a row is found not final after all.
  await setRow(s.db, 'B-1', 2, { state: 'PENDING' });

  const outcome = await prune(deps, plan, now);
  expect(outcome.failed.map((f) => [f.item.batch.id, f.code, f.filesRemoved, f.rowsCleared, f.begun])).toEqual([
    ['B-1', 'ROW_NOT_FINAL', 0, 0, false],
  ]);
  expect(await listDir(join(stateDir, 'claimed'))).toEqual([basename(stored), `${basename(stored)}.ctl`]);
  const batch = await getBatch(s.db, 'B-1');
  expect([batch?.prunedAt, batch?.pruneStartedAt]).toEqual([null, null]);
}

/**
 * Leaves out of the plan a batch owed a corrected result file: a row whose service note its files do not show yet
 * (a contradiction answered late), or a correction recorded whose file is not written (its write failing). Its
 * pruning would stop the correction for good; once written, the batch is pruned as any other.
 */
export async function checkPruneWaitsForCorrection(s: RetentionWorld): Promise<void> {
  const deps = { db: s.db, stateDir: join(s.dir, 'state'), outboxDir: join(s.dir, 'outbox'), watchTakenForMs: DAY, logger: quiet };
  const now = T0 + 100 * DAY;
  const note = 'the payout service now reports PAID';
  for (const [id, line] of [
    ['B-NOTED', 2],
    ['B-OWED', 3],
    ['B-SHOWN', 4],
    ['B-PLAIN', 5],
  ] as const) {
    await takenBatch(s, id, 'COMPLETE', T0 + line);
    await addRows(s.db, [validRow(id, 2, request(`INV-${id}`))]);
    await setRow(s.db, id, 2, { state: 'CANCELLED', payoutId: `P-${id}` });
  }
  const noted = { service_note: note, service_noted_at: T0 + 50 * DAY };
  await s.db('payouts').where({ batch_id: 'B-NOTED' }).update(noted);
  await s
    .db('payouts')
    .where({ batch_id: 'B-SHOWN' })
    .update({ ...noted, service_note_shown: note });
  await s.db('batches').where({ id: 'B-OWED' }).update({ result_corrections: 1, result_corrections_written: 0 });
  const planned = async (): Promise<string[]> => (await prunePlan(deps, 30, now)).map((i) => i.batch.id);
  expect(await planned()).toEqual(['B-SHOWN', 'B-PLAIN']);
  // A batch whose pruning began is never corrected: its pruning goes on, owed or not.
  await s.db('batches').where({ id: 'B-NOTED' }).update({ prune_started_at: now });
  expect(await planned()).toEqual(['B-NOTED', 'B-SHOWN', 'B-PLAIN']);
  await s.db('batches').where({ id: 'B-NOTED' }).update({ prune_started_at: null });

  // The corrections written: nothing is owed any more.
  await s.db('payouts').where({ batch_id: 'B-NOTED' }).update({ service_note_shown: note });
  await s.db('batches').where({ id: 'B-OWED' }).update({ result_corrections_written: 1 });
  expect(await planned()).toEqual(['B-NOTED', 'B-OWED', 'B-SHOWN', 'B-PLAIN']);
}

/** A Retention on a ManualClock and a monotonic clock the test moves, its warnings and notes kept. */
function retentionOnClocks(s: RetentionWorld, start: number, everyMs: number) {
  const outboxDir = join(s.dir, 'outbox');
  const clock = new ManualClock(start);
  let tick = 0;
  const said: { level: 'warn' | 'info'; fields: Record<string, unknown>; msg: string }[] = [];
  const logger = {
    ...quiet,
    warn: (fields: Record<string, unknown>, msg: string) => void said.push({ level: 'warn', fields, msg }),
    info: (fields: Record<string, unknown>, msg: string) => void said.push({ level: 'info', fields, msg }),
  } as unknown as RetentionDeps['logger'];
  const deps = { db: s.db, stateDir: join(s.dir, 'state'), outboxDir, watchTakenForMs: DAY, logger };
  const retention = new Retention(deps, { days: 30, everyMs }, clock, () => tick);
  /** Both clocks move `ms` (time passes); `jumpMs` more on the system clock alone (a jump). */
  const pass = async (ms: number, jumpMs = 0): Promise<void> => {
    // A fraction, as performance.now() has: the counted time must still reach the database in whole milliseconds.
    tick += ms + 0.5;
    clock.advance(ms + jumpMs);
    await retention.pass();
  };
  return { clock, said, pass, outboxDir };
}

/**
 * A system clock that jumps a month ahead for a while, seconds after a batch finished, deletes nothing: retention
 * goes by the time counted on the monotonic clock, says so once per jump, and prunes once the batch is old by it.
 */
export async function checkClockJump(s: RetentionWorld): Promise<void> {
  const { said, pass, outboxDir } = retentionOnClocks(s, T0 + 2 * DAY, 1000);
  await mkdir(outboxDir, { recursive: true });
  await takenBatch(s, 'B-1', 'COMPLETE', T0 + 2 * DAY - 5000);
  await addRows(s.db, [validRow('B-1', 2, request('INV-JUMP-1'))]);
  await setRow(s.db, 'B-1', 2, { state: 'PAID', payoutId: 'P-1', payoutAmount: '1500.5' });
  await writeFile(join(outboxDir, 'B-1_payouts.csv.ack.csv'), 'x');
  const kept = async (): Promise<void> => {
    expect((await getBatch(s.db, 'B-1'))?.prunedAt).toBeNull();
    expect(await listDir(outboxDir)).toEqual(['B-1_payouts.csv.ack.csv']);
    expect((await s.db('payouts').where({ batch_id: 'B-1' }).first())?.['payout_amount']).toBe('1500.5');
  };

  await pass(2000);
  await pass(2000, 31 * DAY);
  await kept();
  const warnings = said.filter((x) => x.level === 'warn');
  expect(warnings).toHaveLength(1);
  expect(warnings[0]?.msg).toContain('the system clock jumped ahead of the time the daemon counts');
  expect(warnings[0]?.msg).toContain('nothing is deleted by the jumped clock');
  expect(warnings[0]?.fields).toEqual({
    systemClock: new Date(T0 + 33 * DAY + 4000).toISOString(),
    countedTime: new Date(T0 + 2 * DAY + 4000).toISOString(),
  });
  // Still ahead: pass after pass, nothing goes and nothing more is said.
  for (let i = 0; i < 3; i++) await pass(2000);
  await kept();
  expect(said.filter((x) => x.level === 'warn')).toHaveLength(1);

  // The clock is set right: said once; a second jump is told again.
  await pass(2000, -31 * DAY);
  await kept();
  expect(said.map((x) => x.msg).at(-1)).toBe('retention: the system clock is back in line with the counted time');
  await pass(2000, 40 * DAY);
  await kept();
  expect(said.filter((x) => x.level === 'warn')).toHaveLength(2);
  await pass(2000, -40 * DAY);

  // A month counted later, the batch is old enough: it goes, by the counted time.
  await pass(31 * DAY);
  expect((await getBatch(s.db, 'B-1'))?.prunedAt).toBe(T0 + 33 * DAY + 16_000);
  expect(await listDir(outboxDir)).toEqual([]);
}

/**
 * A system clock set back (after a pass that pruned) does not put the next pruning off by the jump: a clock
 * earlier than the last pruning is due at once (and only keeps more), while the schedule holds otherwise.
 */
export async function checkClockBack(s: RetentionWorld): Promise<void> {
  const start = T0 + 100 * DAY;
  const { pass, outboxDir } = retentionOnClocks(s, start, 3_600_000);
  await mkdir(outboxDir, { recursive: true });
  const oldBatch = async (id: string): Promise<void> => {
    // Finished 40 days before the clock as it is once set back a week.
    await takenBatch(s, id, 'COMPLETE', start - 47 * DAY);
    await writeFile(join(outboxDir, `${id}_payouts.csv.ack.csv`), 'x');
  };
  await pass(1000);
  await oldBatch('B-A');

  await pass(60_000, -7 * DAY);
  expect((await getBatch(s.db, 'B-A'))?.prunedAt).toBe(start + 61_000 - 7 * DAY);
  expect(await listDir(outboxDir)).toEqual([]);
  // Pruned just now: the next pruning waits its hour, on the clock as it is now.
  await oldBatch('B-B');
  await pass(60_000);
  expect(await listDir(outboxDir)).toEqual(['B-B_payouts.csv.ack.csv']);
  await pass(3_600_000);
  expect(await listDir(outboxDir)).toEqual([]);
}

/** Every check above with the name its test goes by, for the test file of each engine. */
export const RETENTION_CHECKS: readonly [string, (s: RetentionWorld) => Promise<void>][] = [
  ['archives the taken files of finished batches by day and batch id, once, and leaves unfinished ones', checkArchive],
  ['archives only the batches of its own state folder; a lost race changes nothing', checkOwnStateDir],
  ['finishes a move that stopped before the record was updated', checkResumedMove],
  ['prunes what is older than retention.days: files and row details, keeping references and payout ids', checkPrune],
  ['names a batch it cannot prune with the file and error, keeps its details and prunes it the next time', checkPruneFailure],
  ['a prune cut short in its row details notes them as being removed until the next prune finishes it', checkPruneCutShort],
  ['removes nothing of a batch with a row that can still move', checkPruneRowNotFinal],
  ['waits for a corrected result file owed before pruning a batch', checkPruneWaitsForCorrection],
  ['the daemon archives at each pass and prunes on its schedule only with retention.days set', checkSchedule],
  ['deletes nothing by a system clock that jumped ahead: goes by the counted time and says so once per jump', checkClockJump],
  ['prunes at once after the system clock was set back, not once it has caught up with the last pruning', checkClockBack],
];

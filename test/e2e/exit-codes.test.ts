/**
 * The exit codes of the README's table, from the real `payoutd` process in a folder of its own (built-in
 * defaults): 2 for a mistake on the command line, whether yargs, a command's own check of its options or an
 * unknown batch id finds it; 78 only for a configuration to fix. A usage mistake used to exit 1 (report
 * without --batch or --since, a bad --since date) or 78 (prune --days 0, user add without --role, an
 * unknown batch), which systemd and scripts read as "fix the configuration".
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, getBatch, listBatchEvents, updateBatch, type Database } from '../../src/store/index.js';
import { addBatch } from '../finance/helpers.js';
import { insertRows } from '../../src/store/insert-rows.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';
import { BIN, childEnv } from './harness.js';

let cwd = '';

/** Rows of a batch in the states given (a test shortcut: their moves are the submitter's and the poller's business). */
async function addRows(db: Database, batchId: string, states: RowState[]): Promise<void> {
  const rows = states.map((_, i) => ({
    batchId,
    line: i + 2,
    merchantReferenceId: `${batchId}-${i}`,
    state: 'READY' as const,
    requestValues: null,
    payoutCurrency: 'PHP',
    payoutAmount: '10',
    deductionCurrency: 'USDT',
    reasonCode: null,
    reason: null,
  }));
  await insertRows(db, rows, Date.now());
  for (const [i, state] of states.entries())
    await db('payouts')
      .where({ batch_id: batchId, line: i + 2 })
      .update({ state });
}

function payoutd(args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd, env: childEnv() }, (err, _out, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
    child.stdin?.end();
  });
}

beforeAll(async () => {
  cwd = await mkdtemp(join(tmpdir(), 'payoutd-exit-'));
  expect((await payoutd(['migrate'])).code).toBe(0);
});
afterAll(async () => {
  await rm(cwd, { recursive: true, force: true });
});

describe('exit code 2: a mistake on the command line', () => {
  const cases: [string[], string][] = [
    [['status', '--no-such-option'], 'Unknown argument'],
    [['status', '--limit', '0'], '--limit must be a whole number of at least 1'],
    [['report'], 'name --batch ID or --since DATE'],
    [['report', '--until', '2026-02-01', '--batch', 'X'], '--until needs --since'],
    [['report', '--since', '10/01/2026'], 'REPORT_BAD_DATE: --since: expected YYYY-MM-DD'],
    [['report', '--since', '2026-02-01', '--until', '2026-01-01'], 'REPORT_BAD_PERIOD'],
    [
      ['report', '--since', '2026-02-01', '--until', '2999-01-01'],
      'REPORT_PERIOD_NOT_OVER: --until 2999-01-01T00:00:00.000Z is later than now',
    ],
    [['prune', '--days', '0'], 'BAD_ARGUMENT: --days must be a whole number'],
    [['user', 'add', 'ana', '--proxy-only'], 'NO_ROLE'],
    [['user', 'remove'], 'NO_USER_NAME'],
    [['status', '--batch', 'NOPE'], 'BATCH_NOT_FOUND'],
    [['report', '--batch', 'NOPE'], 'BATCH_NOT_FOUND'],
    [['retry-file', '--batch', 'NOPE'], 'BATCH_NOT_FOUND'],
    [['cancel', '--batch', 'NOPE'], 'BATCH_NOT_FOUND'],
    [['release', '--batch', 'NOPE'], 'BATCH_NOT_FOUND'],
  ];
  for (const [args, said] of cases) {
    it(`payoutd ${args.join(' ')}`, async () => {
      const r = await payoutd(args);
      expect(r.stderr).toContain(said);
      expect(r.code).toBe(2);
    });
  }
});

// root may not approve (docs/approval.md): the test's user, named an approver, reaches the batch lookup.
it.skipIf(process.getuid?.() === 0)('exit code 2: payoutd approve --batch NOPE', async () => {
  const config = join(cwd, 'approval.yaml');
  await writeFile(config, `approval: { required: always, approvers: { users: [${userInfo().username}] } }\n`);
  const r = await payoutd(['approve', '--batch', 'NOPE', '--config', config]);
  expect(r.stderr).toContain('APPROVAL_UNKNOWN_BATCH');
  expect(r.code).toBe(2);
});

describe('exit code 78: a configuration to fix', () => {
  it('a setting the configuration does not know', async () => {
    const config = join(cwd, 'bad.yaml');
    await writeFile(config, 'paths: { stateDir: ./var, inboxx: ./in }\n');
    const r = await payoutd(['status', '--config', config]);
    expect(r.code).toBe(78);
  });
});

/** A folder of its own with a configuration and an ACTIVE batch `id` whose rows are in `states`. */
async function batchToCancel(name: string, id: string, states: RowState[]): Promise<{ dir: string; config: string }> {
  const dir = join(cwd, name);
  await mkdir(dir, { recursive: true });
  const config = join(dir, 'payoutd.yaml');
  await writeFile(
    config,
    `paths: { stateDir: ./state, inbox: ./inbox, outbox: ./outbox }\ndatabase: { filename: ./${TEST_DATABASE_FILE} }\n`,
  );
  const db = await openTestDatabase(dir);
  await addBatch(db, id, `${name}.csv`);
  await addRows(db, id, states);
  await closeDatabase(db);
  return { dir, config };
}

/** The batch `id` in `dir` as a refused cancel leaves it: not cancelled, and no event of the cancel. */
async function expectNotCancelled(dir: string, id: string): Promise<void> {
  const after = await openTestDatabase(dir);
  try {
    expect((await getBatch(after, id))?.cancelledAt).toBeNull();
    expect((await listBatchEvents(after, id)).map((e) => e.type)).toEqual(['received']);
  } finally {
    await closeDatabase(after);
  }
}

describe('payoutd cancel of a batch cancelled before', () => {
  it('says when, by whom and why it was cancelled, records nothing of the second, and exits 2', async () => {
    const { dir, config } = await batchToCancel('cancel', 'B-TWICE', ['READY']);
    const first = await payoutd(['cancel', '--batch', 'B-TWICE', '--reason', 'wrong month', '--config', config]);
    expect(first).toEqual({ code: 0, stderr: '' });
    const second = await payoutd(['cancel', '--batch', 'B-TWICE', '--reason', 'dup run', '--config', config]);
    expect(second.stderr).toMatch(
      /BATCH_ALREADY_CANCELLED: batch B-TWICE was already cancelled at \d{4}-\d\d-\d\dT[\d:.]+Z( by \S+)? \(cancelled by an operator: wrong month\); nothing changed, and this cancel's reason \(cancelled by an operator: dup run\) is not recorded/,
    );
    expect(second.code).toBe(2);
    const after = await openTestDatabase(dir);
    try {
      expect((await getBatch(after, 'B-TWICE'))?.cancelReason).toBe('cancelled by an operator: wrong month');
      expect((await listBatchEvents(after, 'B-TWICE')).map((e) => e.type)).toEqual(['received', 'cancelled']);
    } finally {
      await closeDatabase(after);
    }
  });
});

describe('payoutd cancel of a batch whose every row was already sent', () => {
  it('says so and how many are pending and paid, records nothing, and exits 2', async () => {
    const { dir, config } = await batchToCancel('cancel-sent', 'B-SENT', ['PENDING', 'PENDING', 'PAID']);
    const r = await payoutd(['cancel', '--batch', 'B-SENT', '--reason', 'wrong month', '--config', config]);
    expect(r.stderr).toContain(
      'BATCH_NOTHING_TO_CANCEL: batch B-SENT has no row left to cancel: every row was already sent to the payout service (2 PENDING, 1 PAID); nothing changed and no cancel is recorded',
    );
    expect(r.code).toBe(2);
    await expectNotCancelled(dir, 'B-SENT');
  });
});

describe('payoutd cancel of a batch that has ended', () => {
  it('says every row is final, records nothing, and exits 2', async () => {
    const { dir, config } = await batchToCancel('cancel-ended', 'B-ENDED', ['PAID', 'NOT_SUBMITTED']);
    const db = await openTestDatabase(dir);
    await db('batches').where({ id: 'B-ENDED' }).update({ state: 'COMPLETE' });
    await closeDatabase(db);
    const r = await payoutd(['cancel', '--batch', 'B-ENDED', '--reason', 'wrong month', '--config', config]);
    expect(r.stderr).toContain(
      'BATCH_ENDED: batch B-ENDED is COMPLETE: every row of it is final (its result file says how each ended); nothing is left to cancel',
    );
    expect(r.code).toBe(2);
    await expectNotCancelled(dir, 'B-ENDED');
  });
});

describe('exit code 1: a prune that could not prune a batch', () => {
  it('names the batch, the file and the error on stderr; the next prune, the cause gone, exits 0', async () => {
    const dir = join(cwd, 'prune');
    await mkdir(join(dir, 'outbox'), { recursive: true });
    const config = join(dir, 'payoutd.yaml');
    await writeFile(
      config,
      `paths: { stateDir: ./state, inbox: ./inbox, outbox: ./outbox }\ndatabase: { filename: ./${TEST_DATABASE_FILE} }\n`,
    );
    const finished = Date.UTC(2020, 0, 10);
    const db = await openTestDatabase(dir);
    await addBatch(db, 'B-OLD', 'jan.csv', finished);
    await updateBatch(
      db,
      'B-OLD',
      { state: 'COMPLETE', completedAt: finished, ackWrittenAt: finished, resultWrittenAt: finished },
      finished,
    );
    await closeDatabase(db);
    // A folder cannot be unlinked, as an immutable file cannot (chattr +i); permissions would not stop a test run as root.
    const stuck = join(dir, 'outbox', 'B-OLD_jan.csv.result.csv');
    await mkdir(stuck);
    await writeFile(join(stuck, 'inside'), 'x');

    const r = await payoutd(['prune', '--days', '30', '--config', config]);
    expect(r.stderr).toContain(`PRUNE_INCOMPLETE: B-OLD jan.csv: cannot remove ${stuck} (EISDIR: illegal operation on a directory`);
    expect(r.code).toBe(1);
    await rm(stuck, { recursive: true });
    expect(await payoutd(['prune', '--days', '30', '--config', config])).toEqual({ code: 0, stderr: '' });
  });
});

describe('exit code 1: a report to a folder that does not exist', () => {
  it('names the path given, not the hidden temp file made beside it', async () => {
    const out = join(cwd, 'no-such-folder', 'r.csv');
    const r = await payoutd(['report', '--since', '2026-11-01', '--out', out]);
    expect(r.stderr).toBe(`payoutd: ENOENT: no such file or directory, open '${out}'\n`);
    expect(r.code).toBe(1);
  });
});

describe('a reader that stops early', () => {
  it('validate piped into head stops quietly: no EPIPE stack trace on the terminal', async () => {
    // Every row lacks its sender's first name: one line each, far more than a pipe holds.
    const header =
      'merchantReferenceId,deductionCurrency,payoutCurrency,payoutAmount,sender.firstName,sender.lastName,sender.country,sender.idType,sender.idValue,beneficiary.accountName,beneficiary.accountNumber,beneficiary.bankCode';
    const rows = Array.from(
      { length: 20_000 },
      (_, i) => `R-${i},USDT,PHP,10.00,,Santos,PH,PASSPORT,P1234567A,Juan Dela Cruz,1234567890,BOPIPHMM`,
    );
    const file = join(cwd, 'many.csv');
    await writeFile(file, [header, ...rows].join('\n') + '\n');
    const stderr = await new Promise<string>((resolve) => {
      execFile(
        'sh',
        ['-c', `"${process.execPath}" "${BIN}" validate many.csv | head -n 1 >/dev/null`],
        { cwd, env: childEnv() },
        (_err, _out, err) => resolve(err),
      );
    });
    expect(stderr).not.toMatch(/EPIPE|Unhandled|at /);
  });
});

/**
 * Crash windows too narrow for random kills, reproduced exactly: the state a
 * crash at that instant leaves behind is set up, then the daemon started on
 * it. Also the SIGTERM variant's one hole: a stop requested while the daemon
 * is still recovering at start.
 */
import { lstat, mkdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { ledgerByReference, startE2e, waitFor, type E2e } from '../e2e/harness.js';
import { spawnPayoutd } from './world.js';

/** Starts a daemon that SIGKILLs itself the first time it is halfway through writing a result file, and waits for that. */
async function killedMidResult(e2e: E2e): Promise<void> {
  const d = spawnPayoutd(e2e, 'killed-mid-result', { PAYOUTD_FAULT_KILL_AT: 'mid-result-file:1' });
  await d.running();
  return d.exit.then((exit) => {
    expect(exit.signal, 'the daemon killed itself at the kill point').toBe('SIGKILL');
  });
}

async function resultFileOf(e2e: E2e, fileName: string, timeoutMs: number): Promise<string> {
  return waitFor(
    async () => {
      const b = (await e2e.batches()).find((x) => x.fileName === fileName);
      return b ? (await e2e.outboxNames()).find((n) => n.startsWith(`${b.id}_`) && n.endsWith('.result.csv')) : undefined;
    },
    `the result file of ${fileName}`,
    timeoutMs,
    300,
  );
}

describe('crash windows', () => {
  // BUG (reported): BatchFinisher.finishBatches (src/daemon/finisher.ts) takes a batch lease of instance.leaseMs
  // (default 120 s) before writing a result file, also when alone on SQLite. Killed while writing, the dead
  // process keeps the lease: the next start skips the batch until the lease runs out, so the result file
  // comes two minutes late (rows all final, batch ACTIVE meanwhile). The submitter and poller already use no
  // lease when not shared; expected the same here (claim only when shared), or leases of other instance ids
  // cleared at start when the instance lock is held.
  it('killed while writing the result file of a finished batch: the next start writes it within seconds', async () => {
    const e2e = await startE2e({ config: { poll: { tickMs: 100, firstPollDelayMs: 100, minIntervalMs: 150 } } });
    const rows = makeRows('CW-RESULT', 6, { cancelEvery: 3 });
    const dying = killedMidResult(e2e);
    await e2e.drop('result-cut.csv', toCsv(rows));
    await dying;
    await e2e.startDaemon();
    await resultFileOf(e2e, 'result-cut.csv', 6_000);
  });

  // BUG (reported): the result file of a batch refused for invalid rows is written by BatchIntake.process
  // (src/ingest/intake.ts) after the batch was already moved to REJECTED; nothing writes it later. Killed
  // in between (or with the outbox unwritable), the refused batch never gets its result file, and the
  // cut-off write leaves its `.…result.csv.<random>.tmp` in the outbox for ever. Expected: missing ack and
  // result files of REJECTED/DUPLICATE batches (ack_written_at / result_written_at NULL) written at start
  // and by the finish loop; stale `.*.tmp` files of the outbox removed at start.
  it('killed while writing the result file of a refused batch: the next start writes it', async () => {
    const e2e = await startE2e();
    const rows = makeRows('CW-REFUSED', 4).map((r, i) => (i === 2 ? { ...r, payoutAmount: '-1' } : r));
    const dying = killedMidResult(e2e);
    await e2e.drop('refused-cut.csv', toCsv(rows));
    await dying;
    await e2e.startDaemon();
    await resultFileOf(e2e, 'refused-cut.csv', 6_000);
  });

  it('a daemon killed between moving a file into claimed/ and recording its batch: received at the next start, paid once', async () => {
    const e2e = await startE2e();
    const first = await e2e.startDaemon();
    expect(await first.stop()).toBe(0);

    // The state that crash leaves: the file renamed into claimed/ under its claim id, its database claim recorded, no batch.
    const rows = makeRows('CW-ORPHAN', 3, { cancelEvery: 3 });
    await e2e.drop('orphan.csv', toCsv(rows));
    const st = await lstat(join(e2e.inbox, 'orphan.csv'));
    await mkdir(join(e2e.stateDir, 'claimed'), { recursive: true });
    await rename(join(e2e.inbox, 'orphan.csv'), join(e2e.stateDir, 'claimed', '20260101T000000Z-0123456789ab__orphan.csv'));
    const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'));
    try {
      db.prepare('INSERT INTO file_claims (file_key, instance_id, claimed_at) VALUES (?, ?, ?)').run(
        `orphan.csv|${st.size}|${Math.trunc(st.mtimeMs)}|${st.ino}`,
        'the-process-that-was-killed',
        Date.now() - 60_000,
      );
    } finally {
      db.close();
    }

    const second = await e2e.startDaemon();
    const batch = await e2e.waitForBatch('orphan.csv', ['COMPLETE'], 20_000);
    expect(batch.counts).toEqual({ PAID: 2, CANCELLED: 1 });
    expect(ledgerByReference(e2e.ledger()).size).toBe(3);
    expect(second.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('found a claimed file with no batch record'))).toBe(true);
  });

  // BUG (reported): FileReception.onCandidate (src/daemon/file-reception.ts) commits a file_claims row
  // (claimFileInDatabase, src/store/batches.ts) and only then renames the file into claimed/. A crash between
  // the two leaves the row behind with no expiry; at the next start the same file (same name, size, mtime,
  // inode) loses the claim to that dead row and stays in the inbox for ever, unpaid and unreported. The
  // state below is exactly that crash's. Expected: a file claim without a batch, older than a lease (or any,
  // when alone on SQLite), is released at start, or the claim row is written in the transaction that
  // records the batch.
  it('a daemon killed between claiming a file in the database and moving it: the file is still taken at the next start', async () => {
    const e2e = await startE2e();
    const first = await e2e.startDaemon();
    expect(await first.stop()).toBe(0);

    const rows = makeRows('CW-CLAIM', 3);
    await e2e.drop('claimed-then-killed.csv', toCsv(rows));
    const st = await lstat(join(e2e.inbox, 'claimed-then-killed.csv'));
    const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'));
    try {
      db.prepare('INSERT INTO file_claims (file_key, instance_id, claimed_at) VALUES (?, ?, ?)').run(
        `claimed-then-killed.csv|${st.size}|${Math.trunc(st.mtimeMs)}|${st.ino}`,
        'the-process-that-was-killed',
        Date.now() - 60_000,
      );
    } finally {
      db.close();
    }

    await e2e.startDaemon();
    const batch = await e2e.waitForBatch('claimed-then-killed.csv', ['COMPLETE'], 30_000);
    expect(batch.counts).toEqual({ PAID: 3 });
    expect(ledgerByReference(e2e.ledger()).size).toBe(3);
  });

  it('killed with a batch half read (its first rows READY, holding their references): read again at the next start, each row paid once', async () => {
    const e2e = await startE2e({ balances: { USDT: '1000000000000', USDC: '1000000000000' } });
    // One row more than a transaction of the reader (5,000): the kill comes after the first chunk's commit.
    const rows = makeRows('CW-READ', 5_001);
    const dying = spawnPayoutd(e2e, 'killed-mid-read', { PAYOUTD_FAULT_KILL_AT: 'mid-read:1' });
    await dying.running();
    await e2e.drop('half-read.csv', toCsv(rows));
    expect((await dying.exit).signal, 'the daemon killed itself at the kill point').toBe('SIGKILL');

    // What the kill left: the batch still being read, its first chunk stored READY, nothing sent.
    const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'), { readonly: true });
    try {
      expect(db.prepare('SELECT state FROM batches').all()).toEqual([{ state: 'VALIDATING' }]);
      expect(db.prepare('SELECT state, count(*) AS n FROM payouts GROUP BY state').all()).toEqual([{ state: 'READY', n: 5_000 }]);
    } finally {
      db.close();
    }
    expect(e2e.ledger()).toEqual([]);
    // The operator sees the stored rows as READY, and that none of them is sent while the batch is read.
    const status = await e2e.cli(['status']);
    expect(status.stdout).toMatch(/half-read\.csv\s.*VALIDATING\s.*READY=5000.*being read: nothing sent yet/);

    await e2e.startDaemon();
    // Read again from the start: its own earlier rows are gone, so none of them is taken for a duplicate.
    const batch = await e2e.waitForBatch('half-read.csv', ['ACTIVE', 'COMPLETE'], 30_000);
    expect([batch.validCount, batch.invalidCount]).toEqual([5_001, 0]);
    const byReference = await waitFor(
      () => {
        const seen = ledgerByReference(e2e.ledger());
        return seen.size === rows.length ? seen : undefined;
      },
      'a payout for every row',
      // Every row is paid through the sandbox: minutes on a loaded machine. The test is of once, not of speed.
      150_000,
      500,
    );
    expect([...byReference.values()].filter((entries) => entries.length !== 1)).toEqual([]);
  }, 240_000);

  // BUG (reported): `payoutd run` installs its SIGTERM/SIGINT/SIGHUP handlers only after startDaemon() has
  // resolved (src/cli/commands/run.ts, runDaemon). Start-up includes migrations and recovery — re-reading a
  // half-read batch, which for a large file takes seconds to minutes — and a SIGTERM (systemctl stop) or a
  // SIGHUP (systemctl reload) in that window kills the process by the signal's default action: no exit 0, no
  // "stopped cleanly". Safe for the money (the crash-recovery path covers it) but not the promised graceful
  // stop. Expected: handlers installed before startDaemon; a stop requested during start-up is honoured as
  // soon as start-up can be abandoned (or right after it), exiting 0.
  it('SIGTERM while the daemon re-reads a batch interrupted by a crash: exits 0', async () => {
    const e2e = await startE2e({ balances: { USDT: '1000000000000', USDC: '1000000000000' } });
    const first = await e2e.startDaemon();
    await e2e.drop('big.csv', toCsv(makeRows('CW-START', 40_000)));
    await first.waitForLog((l) => l.msg === 'batch file received', 20_000);
    await first.kill();

    const second = e2e.spawnDaemon();
    await second.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('resuming the reading of a batch'), 20_000);
    const code = await second.stop(15_000);
    expect(second.exited, JSON.stringify(second.exited)).toEqual({ code: 0, signal: null });
    expect(code).toBe(0);
  });
});

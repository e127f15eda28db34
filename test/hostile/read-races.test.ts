/**
 * A batch file that changes under the daemon after it was taken: truncated
 * or deleted while it is read, or an upload that paused longer than the
 * stability window (so the file was taken) and then went on writing into
 * the same inode. The batch must be refused, held, or read consistently —
 * never paid in part without anyone being told.
 */
import { open, readdir, truncate, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv, type BatchRow } from '../e2e/batch-files.js';
import { ledgerByReference, startE2e, waitFor, type BatchStatus, type DaemonProcess, type E2e } from '../e2e/harness.js';

/** Enough rows that reading takes a second or more, so the test can act while it happens. */
const BIG = 30_000;
const RICH = { USDT: '1000000000000', USDC: '1000000000000' };

async function claimedPath(e2e: E2e, name: string): Promise<string> {
  const dir = join(e2e.stateDir, 'claimed');
  const found = await waitFor(async () => (await readdir(dir)).find((n) => n.endsWith(`__${name}`)), `${name} in claimed/`, 5_000, 2);
  return join(dir, found);
}

function received(daemon: DaemonProcess, name: string): Promise<unknown> {
  return daemon.waitForLog((l) => l.msg === 'batch file received' && l['file'] === name, 20_000, `"batch file received" for ${name}`);
}

/** Paid references among `rows`. */
function paidCount(e2e: E2e, rows: BatchRow[]): number {
  const perRef = ledgerByReference(e2e.ledger());
  return rows.filter((r) => perRef.has(r.merchantReferenceId)).length;
}

/** Refused, held, or read whole and paid whole: never a part of the file paid as if it were all of it. */
async function expectNotPaidInPart(e2e: E2e, name: string, rows: BatchRow[]): Promise<BatchStatus> {
  const b = await e2e.waitForBatches(
    (bs) =>
      bs.find(
        (x) =>
          x.fileName === name &&
          (x.state === 'REJECTED' || x.state === 'COMPLETE' || (x.state === 'ACTIVE' && x.holdCode === 'FILE_CHANGED')),
      ),
    `${name} refused, held or complete`,
    60_000,
  );
  // Give a wrongly released batch time to show payouts.
  await new Promise((r) => setTimeout(r, 1500));
  const paid = paidCount(e2e, rows);
  if (b.state === 'COMPLETE') {
    expect(b.rowCount, 'a completed batch read the whole file').toBe(rows.length);
    expect(paid).toBe(rows.length);
  } else {
    expect(paid, `${b.state} ${b.holdCode ?? ''}: ${b.rejectReason ?? b.holdReason ?? ''}`).toBe(0);
    expect(b.rejectReason ?? b.holdReason ?? '').not.toBe('');
  }
  return b;
}

describe('a file that changes after it was taken', () => {
  it('truncated at a row boundary while being read: held (FILE_CHANGED) or refused, nothing paid', async () => {
    const e2e = await startE2e({ balances: RICH });
    const daemon = await e2e.startDaemon();
    const rows = makeRows('RR-TRUNC', BIG);
    const text = toCsv(rows);
    await e2e.drop('truncated.csv', text);
    await received(daemon, 'truncated.csv');
    const path = await claimedPath(e2e, 'truncated.csv');
    // Cut after a whole row, so what is left parses cleanly: only the change itself can give it away.
    await truncate(path, Buffer.byteLength(text.slice(0, text.indexOf('\n', Math.floor(text.length / 3)) + 1)));
    const b = await expectNotPaidInPart(e2e, 'truncated.csv', rows);
    expect(b.state).not.toBe('COMPLETE');
    if (b.state === 'ACTIVE') expect(b.holdReason).toMatch(/size changed .* after the claim/);
    expect(daemon.exited).toBeNull();
  });

  it('deleted while being read: refused or held, nothing paid', async () => {
    const e2e = await startE2e({ balances: RICH });
    const daemon = await e2e.startDaemon();
    const rows = makeRows('RR-DELETE', BIG);
    await e2e.drop('deleted.csv', toCsv(rows));
    await received(daemon, 'deleted.csv');
    await unlink(await claimedPath(e2e, 'deleted.csv'));
    const b = await expectNotPaidInPart(e2e, 'deleted.csv', rows);
    expect(b.state).not.toBe('COMPLETE');
    expect(daemon.exited).toBeNull();
  });

  it('an upload that pauses past the stability window and goes on while the file is read: held FILE_CHANGED, nothing paid', async () => {
    const e2e = await startE2e({ balances: RICH });
    const daemon = await e2e.startDaemon();
    const rows = makeRows('RR-GROW', BIG + 200);
    const text = toCsv(rows);
    const cut = text.indexOf('\n', Math.floor(text.length * 0.9)) + 1;
    // Written in place under its final name, as OpenSSH sftp does, and kept open across the pause.
    const handle = await open(join(e2e.inbox, 'growing.csv'), 'w');
    try {
      await handle.write(text.slice(0, cut));
      await received(daemon, 'growing.csv');
      await handle.write(text.slice(cut));
    } finally {
      await handle.close();
    }
    const b = await expectNotPaidInPart(e2e, 'growing.csv', rows);
    expect([b.state, b.holdCode]).toEqual(['ACTIVE', 'FILE_CHANGED']);
    expect(b.holdReason).toMatch(/after the claim: the upload went on/);
    expect(daemon.exited).toBeNull();
  });

  // BUG (reported): the claimed file is compared with its claim only once, just before the batch becomes
  // ACTIVE (the intake's holds at acceptance). A small file is read and accepted within
  // milliseconds, so an upload that resumes after any pause longer than inbox.stableForMs writes into a
  // batch already being paid: the appended rows are never paid and nothing says so. Expected: the change
  // is detected while the batch is ACTIVE (e.g. verifyUnchanged before each submit pass and before the
  // result is written) and the batch is held FILE_CHANGED. Fixed by BatchHolds.watchTakenFiles (src/holds) on
  // every finish pass; and a held batch is not finished, even when every row of the accepted part was paid
  // before the change was seen (listFinishedActiveBatches, src/store/settlement.ts): under load that
  // order once gave COMPLETE with the hold beside it.
  it('an upload that goes on after its batch was accepted: the batch is held FILE_CHANGED, not completed silently', async () => {
    // One create a second: the batch stays ACTIVE long enough to be seen, however slow the machine.
    const e2e = await startE2e({ sandbox: { faults: { latencyMs: 1000 } }, config: { submit: { concurrency: 1 } } });
    const daemon = await e2e.startDaemon();
    const rows = makeRows('RR-LATE', 40);
    const text = toCsv(rows);
    const cut = text.indexOf('\n', Math.floor(text.length / 2)) + 1;
    const handle = await open(join(e2e.inbox, 'late.csv'), 'w');
    try {
      await handle.write(text.slice(0, cut));
      await e2e.waitForBatch('late.csv', ['ACTIVE'], 20_000);
      await handle.write(text.slice(cut));
    } finally {
      await handle.close();
    }
    const b = await e2e.waitForBatches(
      (bs) => bs.find((x) => x.fileName === 'late.csv' && (x.state === 'COMPLETE' || x.holdCode === 'FILE_CHANGED')),
      'late.csv complete or held',
      30_000,
    );
    expect(daemon.exited).toBeNull();
    expect([b.state, b.holdCode], `${b.rowCount} of ${rows.length} rows read; ${paidCount(e2e, rows)} paid`).toEqual([
      'ACTIVE',
      'FILE_CHANGED',
    ]);
  });
});

/**
 * Files the daemon may not read (an SFTP sender's mode 0600; see ./unreadable-world.ts for how the tests make
 * one). Such a file used to be either never answered (a line in the log at every rescan, nothing in the outbox)
 * or, when empty, taken into claimed/ where it could be neither read nor put back, and the next start then
 * failed on it. Now it is answered once in the outbox, left in the inbox, and taken once it is readable; one
 * found in claimed/ without a batch is set aside at start and answered, and the start goes on.
 */
import { chmod, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e, waitFor } from './harness.js';
import { DAEMON_USER, makeDaemonDir, refusalsOf, writeUnreadable } from './unreadable-world.js';

const errorsOf = (logs: { level?: string }[]): unknown[] => logs.filter((l) => l.level === 'error' || l.level === 'fatal');

describe('e2e: a file payoutd may not read', () => {
  it('is answered once in the outbox, left in the inbox, and taken once readable', async () => {
    const e2e = await startE2e({ runAs: DAEMON_USER });
    const daemon = await e2e.startDaemon();
    const path = join(e2e.inbox, 'private.csv');
    await writeUnreadable(path, toCsv(makeRows('PRIV', 2)));

    const [refusal] = await waitFor(async () => {
      const found = await refusalsOf(e2e, 'private.csv');
      return found.length > 0 ? found : undefined;
    }, 'the refusal of private.csv');
    expect(refusal).toMatchObject({ batch_id: '', file: 'private.csv', verdict: 'REJECTED' });
    expect(refusal?.['reason']).toMatch(
      /^payoutd may not read this file \(permission denied: mode 0[0-7]{3}, owner uid \d+, group gid \d+; payoutd runs as /,
    );
    expect(refusal?.['reason']).toMatch(
      /To have it paid, make it readable by the user payoutd runs as .*taken once readable; nothing from it is paid until then$/,
    );

    // Rescans go on (every 500 ms) while another file is taken and paid: no second answer, no error.
    await e2e.drop('ok.csv', toCsv(makeRows('OK', 2)));
    await e2e.waitForBatch('ok.csv', ['COMPLETE']);
    expect(await readdir(e2e.inbox)).toEqual(['private.csv']);
    expect(await refusalsOf(e2e, 'private.csv')).toHaveLength(1);
    expect(errorsOf(daemon.logs)).toEqual([]);

    await chmod(path, 0o644);
    const batch = await e2e.waitForBatch('private.csv', ['COMPLETE']);
    expect(batch.counts).toEqual({ PAID: 2 });
  });

  it('is answered once per version across restarts: the same file not again, a changed one again', async () => {
    const e2e = await startE2e({ runAs: DAEMON_USER });
    const first = await e2e.startDaemon();
    const path = join(e2e.inbox, 'private.csv');
    await writeUnreadable(path, toCsv(makeRows('PRIV', 2)));
    await waitFor(async () => (await refusalsOf(e2e, 'private.csv')).length > 0, 'the refusal of private.csv');
    await first.stop();

    // Started again on the same unchanged file: its answer is in the outbox already.
    const second = await e2e.startDaemon();
    await e2e.drop('ok.csv', toCsv(makeRows('OK', 1)));
    await e2e.waitForBatch('ok.csv', ['COMPLETE']);
    expect(await refusalsOf(e2e, 'private.csv')).toHaveLength(1);
    await second.kill();

    // Written again while payoutd was down, still unreadable: a new version, answered again.
    await writeUnreadable(path, toCsv(makeRows('PRIV', 3)));
    const third = await e2e.startDaemon();
    await waitFor(async () => (await refusalsOf(e2e, 'private.csv')).length === 2, 'the refusal of the changed private.csv');
    await e2e.drop('ok2.csv', toCsv(makeRows('OK2', 1)));
    await e2e.waitForBatch('ok2.csv', ['COMPLETE']);
    expect(await refusalsOf(e2e, 'private.csv')).toHaveLength(2);
    expect(errorsOf([...first.logs, ...second.logs, ...third.logs])).toEqual([]);
  });

  it('when empty, is left in the inbox (not taken), and a restart starts', async () => {
    // The empty file does not end with a line break: without the fix it was claimed after this wait.
    const e2e = await startE2e({ runAs: DAEMON_USER, config: { inbox: { unterminatedStableForMs: 1000 } } });
    const first = await e2e.startDaemon();
    const path = join(e2e.inbox, 'empty.csv');
    await writeUnreadable(path, '');
    await waitFor(async () => (await refusalsOf(e2e, 'empty.csv')).length > 0, 'the refusal of empty.csv');
    // Past the unterminated wait, rescans included: still in the inbox, nothing in claimed/.
    await e2e.drop('ok.csv', toCsv(makeRows('OK', 1)));
    await e2e.waitForBatch('ok.csv', ['COMPLETE']);
    expect(await readdir(e2e.inbox)).toEqual(['empty.csv']);
    expect((await readdir(join(e2e.stateDir, 'claimed'))).filter((n) => n.endsWith('empty.csv'))).toEqual([]);
    expect(errorsOf(first.logs)).toEqual([]);

    await first.kill();
    const second = await e2e.startDaemon();
    await chmod(path, 0o644);
    const batch = await e2e.waitForBatch('empty.csv', ['REJECTED']);
    expect(batch.rejectCode).toBe('EMPTY');
    expect(second.exited).toBeNull();
  });

  it('taken into claimed/ before this was checked, is set aside at start, answered, and the daemon starts', async () => {
    const e2e = await startE2e({ runAs: DAEMON_USER });
    // What a claim used to leave: an unreadable file in claimed/ with no batch; beside it, one the last stop left.
    const claimed = join(e2e.stateDir, 'claimed');
    await makeDaemonDir(claimed);
    await writeUnreadable(join(claimed, '20260101T000000Z-0123456789ab__stuck.csv'), toCsv(makeRows('STUCK', 2)));
    await writeFile(join(claimed, '20260101T000000Z-0123456789ac__fine.csv'), toCsv(makeRows('FINE', 2)));

    const daemon = await e2e.startDaemon();
    const batch = await e2e.waitForBatch('fine.csv', ['COMPLETE']);
    expect(batch.counts).toEqual({ PAID: 2 });
    const rejected = join(e2e.stateDir, 'rejected');
    expect((await readdir(rejected)).sort()).toEqual([
      '20260101T000000Z-0123456789ab__stuck.csv',
      '20260101T000000Z-0123456789ab__stuck.csv.reason.txt',
    ]);
    const [refusal] = await refusalsOf(e2e, 'stuck.csv');
    expect(refusal).toMatchObject({ batch_id: '', file: 'stuck.csv', verdict: 'REJECTED' });
    expect(refusal?.['reason']).toMatch(/^payoutd may not read this file \(permission denied: mode 0[0-7]{3}, owner uid \d+/);
    expect(refusal?.['reason']).toContain(`set aside in ${rejected}. To have it paid, make it readable`);
    expect(refusal?.['reason']).toMatch(/and drop it into the inbox again; nothing from it is paid until then$/);
    expect(daemon.logs.filter((l) => l.level === 'error').map((l) => l.msg)).toEqual([
      expect.stringMatching(/^a claimed file with no batch record set aside: payoutd may not read this file/),
    ]);
    expect(e2e.ledger().filter((p) => p.merchantReferenceId.startsWith('STUCK'))).toEqual([]);
  });
});

/**
 * The daemon as `payoutd run` wires it, on the system clock and real work
 * loops: a restart after a crash with creates on the wire, and a file
 * dropped in the inbox, each followed until the batch is COMPLETE and its
 * result file is written.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, chown, link, mkdir, readdir, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DaemonDeps } from '../../src/daemon/daemon.js';
import { systemClock } from '../../src/domain/clock.js';
import { listBatchesInStates, type BatchRecord } from '../../src/store/batches.js';
import { recordConsoleUpload } from '../../src/store/console-access.js';
import { claimReadyRows } from '../../src/store/claims.js';
import type { Clock } from '../../src/domain/clock.js';
import { fileCounter, firstAcceptedBatch, pipelineDaemon, stopPipelineDaemons, type PipelineDaemon } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, linesContaining, startPipeline, waitFor, type Pipeline } from './harness.js';
import { requestOfText } from '../../src/domain/request-values.js';
import { inodeOf } from '../support/files.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

/** A uid no user of the machine is likely to have: the owner of a file dropped by someone other than payoutd. */
const OTHER_UID = 54_321;

async function fastPipeline(): Promise<Pipeline> {
  return startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 }, duplicatePolicy: 'allow' } });
}

function daemonFor(
  p: Pipeline,
  over: Record<string, unknown> = {},
  clock: Clock = systemClock,
  hooks: Pick<DaemonDeps, 'onBatchEvent'> = {},
): Promise<PipelineDaemon> {
  return pipelineDaemon(
    p,
    {
      inbox: { stableForMs: 20 },
      batch: { onInvalidRows: 'reject-file', balanceCheck: { enabled: false } },
      submit: { notFoundGraceMs: 0, unsafeShortGrace: true },
      poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
      ...over,
    },
    clock,
    hooks,
  );
}

describe('pipeline: the daemon', () => {
  it('after a crash with creates on the wire, the restarted daemon adopts or creates each once and completes the batch', async () => {
    const p = await fastPipeline();
    const refs = ['DM-1', 'DM-2', 'DM-3', 'DM-4'];
    const batch = await p.receive('crash.csv', csvFile(refs.map((r) => csvRow(r))));
    const claimed = await claimReadyRows(p.db, 10, p.clock.now());
    for (const row of claimed.slice(0, 2)) await p.client.createPayout(requestOfText(row.requestValues ?? ''));
    expect(await p.states(batch.id)).toEqual(['CREATING', 'CREATING', 'CREATING', 'CREATING']);

    const { daemon, outbox } = await daemonFor(p);
    await daemon.start();
    await waitFor(async () => (await p.batch(batch.id)).state === 'COMPLETE', 'the batch to complete', 15_000);
    await daemon.stop();

    expect(await p.states(batch.id)).toEqual(['PAID', 'PAID', 'PAID', 'PAID']);
    for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);
    expect(p.sandbox.stats().creates).toBe(4);
    // Adopted (already PAID at the service, or PENDING and then settled), or created after a query proved it absent.
    for (const ref of ['DM-1', 'DM-2']) {
      const events = (await p.events(ref)).filter((e) => e !== 'polled');
      expect(events.slice(0, 3)).toEqual(['intent', 'interrupted', 'reconciled-found']);
      expect([[], ['settled']]).toContainEqual(events.slice(3));
    }
    for (const ref of ['DM-3', 'DM-4']) {
      const events = (await p.events(ref)).filter((e) => e !== 'polled');
      expect(events).toEqual(['intent', 'interrupted', 'reconciled-absent', 'intent', 'created', 'settled']);
    }
    const files = await readdir(outbox);
    const result = files.find((f) => f.startsWith(batch.id) && f.endsWith('.result.csv'));
    expect(result).toBeDefined();
    const text = await readFile(join(outbox, result as string), 'utf8');
    for (const ref of refs) expect(text).toMatch(new RegExp(`${ref},PAID`));
  });

  it('pays a file dropped in the inbox end to end and writes its ack and result files', async () => {
    const p = await fastPipeline();
    const { daemon, inbox, outbox } = await daemonFor(p);
    await writeFile(join(inbox, 'drop.csv'), csvFile([csvRow('DD-1'), csvRow('DD-2', { 'beneficiary.accountNumber': '2222220000' })]));
    await daemon.start();
    const batch = await firstAcceptedBatch(p, daemon);
    await waitFor(async () => (await p.batch(batch.id)).state === 'COMPLETE', 'the batch to complete', 15_000);
    await daemon.stop();
    expect(await p.states(batch.id)).toEqual(['PAID', 'CANCELLED']);
    expect(p.ledgerCount('DD-1')).toBe(1);
    expect(p.ledgerCount('DD-2')).toBe(1);
    const files = (await readdir(outbox)).filter((f) => f.startsWith(batch.id));
    expect(files.some((f) => f.endsWith('.ack.csv'))).toBe(true);
    expect(files.some((f) => f.endsWith('.result.csv'))).toBe(true);
    // Logs never carry a full account number or the API key.
    expect(p.logLines.filter((l) => l.includes('2222220000') || l.includes('1234567890'))).toEqual([]);
  });

  // chown needs root (as in CI); the file's owner is what the test is about.
  it.skipIf(process.getuid?.() !== 0)(
    "takes a file's owner for its uploader, not a console upload recorded under the same name and bytes",
    async () => {
      const p = await fastPipeline();
      const { daemon, inbox } = await daemonFor(p);
      const content = csvFile([csvRow('DO-1')]);
      const path = join(inbox, 'owned.csv');
      await writeFile(path, content);
      await chown(path, OTHER_UID, OTHER_UID);
      // A console upload recorded under the same name, bytes and even inode: the owner still decides.
      const sha256 = createHash('sha256').update(content).digest('hex');
      await recordConsoleUpload(p.db, {
        fileName: 'owned.csv',
        sha256,
        size: content.length,
        inode: await inodeOf(path),
        uploader: 'li',
        uploadedAt: Date.now() - 1000,
      });
      await daemon.start();
      let batch: BatchRecord | undefined;
      await waitFor(async () => {
        await daemon.tickInbox();
        batch = (await listBatchesInStates(p.db, ['ACTIVE', 'COMPLETE'])).find((b) => b.fileName === 'owned.csv');
        return batch !== undefined;
      }, 'the dropped file to be accepted');
      expect([batch?.uploadedBy === 'li', batch?.uploadedByUid]).toEqual([false, OTHER_UID]);
    },
  );

  it("names the console uploader of payoutd's own file, and no one (not payoutd's account) when none was recorded", async () => {
    const p = await fastPipeline();
    const { daemon, inbox } = await daemonFor(p);
    const recorded = csvFile([csvRow('DU-1')]);
    // Both owned by this process's user, as a console upload is.
    await writeFile(join(inbox, 'console.csv'), recorded);
    await writeFile(join(inbox, 'unrecorded.csv'), csvFile([csvRow('DU-2')]));
    const upload = { fileName: 'console.csv', sha256: createHash('sha256').update(recorded).digest('hex'), size: recorded.length };
    const inode = await inodeOf(join(inbox, 'console.csv'));
    await recordConsoleUpload(p.db, { ...upload, inode, uploader: 'li', uploadedAt: Date.now() - 2000 });
    // Another file of the same name and bytes uploaded later, as once li's is taken and its name free again.
    await recordConsoleUpload(p.db, { ...upload, inode: `${BigInt(inode) + 1n}`, uploader: 'bo', uploadedAt: Date.now() - 1000 });
    await daemon.start();
    let batches: BatchRecord[] = [];
    await waitFor(async () => {
      await daemon.tickInbox();
      // The uploader is recorded as the batch is received, before its reading.
      batches = await listBatchesInStates(p.db, ['RECEIVED', 'VALIDATING', 'ACTIVE', 'COMPLETE']);
      return batches.length === 2;
    }, 'both dropped files to be received');
    const uploaderOf = (name: string) => {
      const b = batches.find((x) => x.fileName === name);
      return [b?.uploadedBy, b?.uploadedByUid];
    };
    expect(uploaderOf('console.csv')).toEqual(['li', null]);
    expect(uploaderOf('unrecorded.csv')).toEqual([null, null]);
  });

  it('records no uploader for a file others could write when taken: a second hard link, or group or others may write', async () => {
    const p = await fastPipeline();
    const { daemon, inbox } = await daemonFor(p);
    const root = process.getuid?.() === 0;
    const keep = join(inbox, '..', 'kept-links');
    await mkdir(keep, { recursive: true });
    /** Drops `name` (owned by `uid` when root may chown) with `mode`, recorded as li's console upload, linked `links` times. */
    const drop = async (name: string, mode: number, links: number, uid?: number): Promise<void> => {
      const content = csvFile([csvRow(`DL-${name.replace(/\W/g, '')}`)]);
      const path = join(inbox, name);
      await writeFile(path, content);
      await chmod(path, mode);
      if (uid !== undefined) await chown(path, uid, uid);
      for (let k = 1; k < links; k++) await link(path, join(keep, `${name}.${k}`));
      const sha256 = createHash('sha256').update(content).digest('hex');
      await recordConsoleUpload(p.db, {
        fileName: name,
        sha256,
        size: content.length,
        inode: await inodeOf(path),
        uploader: 'li',
        uploadedAt: Date.now() - 1000,
      });
    };
    await drop('plain.csv', 0o644, 1);
    await drop('linked.csv', 0o644, 2);
    await drop('group.csv', 0o664, 1);
    await drop('others.csv', 0o646, 1);
    if (root) {
      await drop('theirs.csv', 0o644, 1, OTHER_UID);
      await drop('theirs-linked.csv', 0o644, 2, OTHER_UID);
      await drop('theirs-group.csv', 0o664, 1, OTHER_UID);
    }
    await daemon.start();
    let batches: BatchRecord[] = [];
    await waitFor(
      async () => {
        await daemon.tickInbox();
        batches = await listBatchesInStates(p.db, ['RECEIVED', 'VALIDATING', 'ACTIVE', 'COMPLETE']);
        return batches.length === (root ? 7 : 4);
      },
      'every dropped file to be received',
      15_000,
    );
    const uploaderOf = (name: string) => {
      const b = batches.find((x) => x.fileName === name);
      return [b?.uploadedBy ?? null, b?.uploadedByUid ?? null];
    };
    // Neither the console user recorded for the inode nor the owner: no uploader, so no approval can be given.
    expect(['plain.csv', 'linked.csv', 'group.csv', 'others.csv'].map(uploaderOf)).toEqual([
      ['li', null],
      [null, null],
      [null, null],
      [null, null],
    ]);
    if (root) {
      expect(['theirs.csv', 'theirs-linked.csv', 'theirs-group.csv'].map((n) => uploaderOf(n)[1])).toEqual([OTHER_UID, null, null]);
    }
    expect(linesContaining(p.logLines, 'linked.csv has 2 hard links').length).toBeGreaterThan(0);
    expect(linesContaining(p.logLines, 'group.csv is writable by its group (mode 0664) when it was taken').length).toBeGreaterThan(0);
  });

  it('writes the .xlsx of each outbox file and archives the taken file of the finished batch by day and batch id', async () => {
    const p = await fastPipeline();
    // Not watched after it is taken: archived as soon as its batch is finished.
    const { daemon, inbox, outbox } = await daemonFor(p, { inbox: { stableForMs: 20, watchTakenForMs: 0 } });
    await writeFile(join(inbox, 'kept.csv'), csvFile([csvRow('DA-1'), csvRow('DA-2', { 'beneficiary.accountNumber': '0022220000' })]));
    await daemon.start();
    const accepted = await firstAcceptedBatch(p, daemon);
    const id = accepted.id;
    await waitFor(async () => (await p.batch(id)).archivedAt != null, 'the taken file to be archived', 15_000);
    const batch = await p.batch(id);
    const day = new Date(batch.receivedAt).toISOString().slice(0, 10).split('-');
    expect(batch.storedPath).toBe(join(p.dir, 'state', 'archive', ...day, `${id}_kept.csv`));
    expect(await readFile(batch.storedPath, 'utf8')).toContain('DA-2');
    expect((await readdir(join(p.dir, 'state', 'claimed'))).filter((n) => n.endsWith('kept.csv'))).toEqual([]);
    await waitFor(async () => (await readdir(outbox)).includes(`${id}_kept.csv.retry.xlsx`), 'the retry .xlsx');
    await daemon.stop();
    const files = (await readdir(outbox)).filter((f) => f.startsWith(id)).sort();
    for (const kind of ['ack', 'result', 'summary', 'retry'])
      for (const ext of ['csv', 'xlsx']) expect(files, `${kind}.${ext}`).toContain(`${id}_kept.csv.${kind}.${ext}`);
  });

  it('deletes nothing of a batch that just finished while the system clock jumps a month ahead for a moment', async () => {
    const p = await fastPipeline();
    let jumpMs = 0;
    const clock: Clock = { now: () => Date.now() + jumpMs };
    const { daemon, inbox, outbox } = await daemonFor(
      p,
      { inbox: { stableForMs: 20, watchTakenForMs: 0 }, retention: { days: 30, pruneEveryMs: 50 } },
      clock,
    );
    await writeFile(join(inbox, 'kept.csv'), csvFile([csvRow('DJ-1'), csvRow('DJ-2')]));
    await daemon.start();
    const id = (await firstAcceptedBatch(p, daemon)).id;
    await waitFor(async () => (await p.batch(id)).archivedAt != null, 'the finished batch to be archived', 15_000);
    const files = async () => (await readdir(outbox)).filter((f) => f.startsWith(id)).sort();
    const before = await files();
    expect(before).toContain(`${id}_kept.csv.result.csv`);

    // A restored VM or a wrong time source: the system clock a month ahead, for at least one finish pass.
    jumpMs = 31 * 86_400_000;
    const said = (text: string) => linesContaining(p.logLines, text).length > 0;
    const pruned = async () => (await p.batch(id)).prunedAt != null;
    await waitFor(async () => said('the system clock jumped ahead') || (await pruned()), 'a finish pass on the jumped clock', 15_000);
    jumpMs = 0;
    await waitFor(
      async () => said('back in line with the counted time') || (await pruned()),
      'a finish pass on the clock set right',
      15_000,
    );
    await daemon.stop();

    const batch = await p.batch(id);
    expect(batch.prunedAt).toBeNull();
    expect(await readFile(batch.storedPath, 'utf8')).toContain('DJ-2');
    expect(await files()).toEqual(expect.arrayContaining(before));
    const requests = (await p.db('payouts').where({ batch_id: id }).orderBy('line').pluck('request_values')) as unknown[];
    expect(requests.map((r) => r !== null)).toEqual([true, true]);
  });

  it('answers every entry of the inbox in the outbox, under names that are safe to list and open', async () => {
    const p = await fastPipeline();
    const files = fileCounter();
    const { daemon, inbox, outbox } = await daemonFor(p, {}, systemClock, { onBatchEvent: files.onBatchEvent });
    await writeFile(join(p.dir, 'elsewhere.csv'), csvFile([csvRow('DA-LINK')]));
    await symlink(join(p.dir, 'elsewhere.csv'), join(inbox, 'linked.csv'));
    execFileSync('mkfifo', [join(inbox, 'pipe\n.csv')]);
    await mkdir(join(inbox, 'folder.csv'));
    await writeFile(join(inbox, '..dots.csv'), csvFile([csvRow('DA-DOTS')]));
    await writeFile(join(inbox, 'line\nbreak\u0007.csv'), csvFile([csvRow('DA-NL')]));
    await writeFile(join(inbox, '.in.upload.csv'), csvFile([csvRow('DA-HIDDEN')]));
    await utimes(join(inbox, '.in.upload.csv'), new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
    await daemon.start();
    await waitFor(
      async () => {
        await daemon.tickInbox();
        return (await listBatchesInStates(p.db, ['COMPLETE'])).length === 2;
      },
      'the two files to be paid',
      // Generous: the real reader thread and sandbox share two cores with the rest of the suite.
      30_000,
    );
    await daemon.stop();

    const names = await readdir(outbox);
    for (const name of names) expect(name, JSON.stringify(name)).not.toMatch(/^[.-]|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\]/u);
    const acks = await Promise.all(
      names.filter((n) => n.endsWith('.ack.csv')).map(async (n) => ({ name: n, text: await readFile(join(outbox, n), 'utf8') })),
    );
    const refusal = (file: string): string | undefined => acks.find((a) => a.text.includes(`,${file},,,REJECTED,`))?.name;
    expect(refusal('linked.csv')).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{12}_linked\.csv\.ack\.csv$/);
    expect(refusal('"pipe\n.csv"')).toMatch(/_pipe_\.csv\.ack\.csv$/);
    expect(refusal('folder.csv')).toMatch(/_folder\.csv\.ack\.csv$/);
    expect(acks.find((a) => a.name.endsWith('_linked.csv.ack.csv'))?.text).toMatch(/symbolic link.*nothing from it is paid/);
    expect(acks.find((a) => a.name.endsWith('_folder.csv.ack.csv'))?.text).toMatch(/a directory/);
    expect(p.ledgerCount('DA-LINK')).toBe(0);
    expect(p.ledgerCount('DA-HIDDEN')).toBe(0);

    const paid = await listBatchesInStates(p.db, ['COMPLETE']);
    expect(paid.map((b) => b.fileName).sort()).toEqual(['..dots.csv', 'line\nbreak\u0007.csv']);
    for (const b of paid) expect(names).toContain(`${b.id}_${b.fileName === '..dots.csv' ? 'dots.csv' : 'line_break_.csv'}.result.csv`);
    expect(p.ledgerCount('DA-DOTS')).toBe(1);
    expect(p.ledgerCount('DA-NL')).toBe(1);

    const ignored = p.logLines.filter((l) => l.includes('inbox entry ignored'));
    expect(ignored).toHaveLength(1);
    expect(ignored[0]).toContain('.in.upload.csv');
    // payoutd_files_total: the three entries refused count as files seen and rejected; the hidden one is no file yet.
    expect(files.counts).toEqual({ seen: 5, accepted: 2, rejected: 3, completed: 2 });
  });
});

/**
 * Hostile and broken input against one real daemon: many files dropped at
 * once (test/hostile/files.ts), plus a directory, a symlink and a FIFO in
 * the inbox. Each is answered with its specific reason (batch status and
 * ack, or for the entries that are not files an ack of their own besides
 * the log and a reason file), nothing of a refused file is paid, every legal
 * file is paid, every outbox name is safe to list, a dotfile left lying is
 * logged, the daemon keeps running, and a valid file dropped at the end is
 * still paid.
 *
 * Two daemons on one state directory: test/e2e/single-instance.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { ledgerByReference, readOutboxCsv, startE2e, waitFor } from '../e2e/harness.js';
import { hostileFiles } from './files.js';
import { isTempName } from '../../src/report/index.js';

/** The outbox file of a batch by its id (the harness's name helper assumes the dropped name is kept as is; awkward names are made safe). */
function outboxFile(outbox: string, batchId: string, kind: 'ack' | 'result'): Promise<string> {
  return waitFor(
    async () => (await readdir(outbox)).find((n) => n.startsWith(`${batchId}_`) && n.endsWith(`.${kind}.csv`)),
    `the ${kind} file of ${batchId}`,
    10_000,
  );
}

describe('hostile input: every file answered with its reason, the daemon unaffected', () => {
  it(
    'refuses each broken file for its own reason, pays the legal ones, and still pays a file dropped at the end',
    { timeout: 120_000 },
    async () => {
      // The empty file and the binary junk do not end with a line break: they wait unterminatedStableForMs.
      const e2e = await startE2e({ config: { inbox: { stableForMs: 300, rescanIntervalMs: 400, unterminatedStableForMs: 2000 } } });
      const daemon = await e2e.startDaemon();
      const files = hostileFiles();
      for (const f of files) await e2e.drop(f.name, f.content);

      // Entries that are not regular files.
      const outside = join(e2e.dir, 'outside.csv');
      const linked = makeRows('H-LINK', 2);
      await writeFile(outside, toCsv(linked));
      await symlink(outside, join(e2e.inbox, 'h-symlink.csv'));
      await mkdir(join(e2e.inbox, 'h-directory.csv'));
      execFileSync('mkfifo', [join(e2e.inbox, 'h-fifo.csv')]);
      // A dotfile (an upload client's temp name) left lying: never taken, logged once.
      await writeFile(join(e2e.inbox, '.h-hidden.csv'), toCsv(makeRows('H-HIDDEN', 1)));
      await utimes(join(e2e.inbox, '.h-hidden.csv'), new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));

      const batches = await e2e.waitForBatches(
        (bs) =>
          files.every((f) => bs.some((b) => b.fileName === f.name && ['COMPLETE', 'REJECTED', 'DUPLICATE'].includes(b.state)))
            ? bs
            : undefined,
        'every dropped file to be answered',
        60_000,
      );
      const perRef = ledgerByReference(e2e.ledger());
      for (const f of files) {
        const mine = batches.filter((b) => b.fileName === f.name);
        expect(mine, f.name).toHaveLength(1);
        const b = mine[0];
        if (!b) continue;
        expect([b.state, b.rejectCode], `${f.name}: ${b.rejectReason ?? ''}`).toEqual([f.state, f.code ?? null]);
        if (f.reason) expect(b.rejectReason, f.name).toMatch(f.reason);
        const ack = await readOutboxCsv(join(e2e.outbox, await outboxFile(e2e.outbox, b.id, 'ack')));
        if (f.reason) expect(ack.rows.map((r) => r['reason']).join('\n'), `${f.name} ack`).toMatch(f.reason);
        for (const [ref, reason] of Object.entries(f.rowReasons ?? {})) {
          const row = ack.rows.find((r) => r['merchant_reference_id'] === ref);
          expect(row?.['verdict'], `${f.name} ${ref}`).toBe('REJECTED');
          expect(row?.['reason'], `${f.name} ${ref}`).toMatch(reason);
        }
        for (const ref of f.paid) expect(perRef.get(ref)?.length ?? 0, `${f.name} ${ref}`).toBe(1);
      }
      // Nothing but the legal files was paid.
      const paid = new Set(files.flatMap((f) => f.paid));
      expect([...perRef.keys()].filter((ref) => !paid.has(ref))).toEqual([]);

      // Outbox files of awkward names stay in the outbox, named after the batch, and are safe to list and open
      // (a file being written meanwhile, a status file on an event, is a hidden temp file until its rename).
      for (const name of (await readdir(e2e.outbox)).filter((n) => !isTempName(n))) {
        expect(resolve(e2e.outbox, name).startsWith(`${e2e.outbox}/`)).toBe(true);
        expect(name, JSON.stringify(name)).not.toMatch(/^[.-]|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\\]/u);
      }
      expect(existsSync(join(e2e.dir, 'etc'))).toBe(false);

      // The symlink, the directory and the FIFO: refused by name, with the reason, never followed or opened.
      const refusals = await waitFor(
        () => {
          const r = daemon.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('inbox entry refused'));
          return ['h-symlink.csv', 'h-directory.csv', 'h-fifo.csv'].every((n) => r.some((l) => l['name'] === n)) ? r : undefined;
        },
        'the three special entries to be refused',
        10_000,
      );
      const reasonOf = (name: string): string => String(refusals.find((l) => l['name'] === name)?.msg);
      expect(reasonOf('h-symlink.csv')).toMatch(/symbolic link.*never followed/);
      expect(reasonOf('h-directory.csv')).toMatch(/a directory/);
      expect(reasonOf('h-fifo.csv')).toMatch(/FIFO.*never opened/);
      for (const r of linked) expect(perRef.get(r.merchantReferenceId), 'the symlink target is not paid').toBeUndefined();
      const rejected = await readdir(join(e2e.stateDir, 'rejected'));
      for (const n of ['h-symlink.csv', 'h-fifo.csv']) {
        const parked = rejected.find((x) => x.endsWith(`__${n}`));
        expect(parked, n).toBeDefined();
        expect(await readFile(join(e2e.stateDir, 'rejected', `${parked as string}.reason.txt`), 'utf8')).toContain(JSON.stringify(n));
      }
      expect(await readFile(outside, 'utf8')).toBe(toCsv(linked));

      // Each of them answered in the outbox too, as a refused file is: an ack with the reason.
      const answers = await waitFor(
        async () => {
          const acks = (await readdir(e2e.outbox)).filter((n) => /^\d{8}T\d{6}Z-[0-9a-f]{12}_.*\.ack\.csv$/.test(n));
          return acks.length >= 3 ? Promise.all(acks.map((n) => readOutboxCsv(join(e2e.outbox, n)))) : undefined;
        },
        'the refusals of the three special entries in the outbox',
        10_000,
      );
      const answered = (name: string) => answers.find((a) => a.rows[0]?.['file'] === name)?.rows;
      expect(answered('h-symlink.csv')).toMatchObject([
        { batch_id: '', line: '', verdict: 'REJECTED', reason: expect.stringMatching(/symbolic link/) },
      ]);
      expect(answered('h-directory.csv')).toMatchObject([{ verdict: 'REJECTED', reason: expect.stringMatching(/a directory/) }]);
      expect(answered('h-fifo.csv')).toMatchObject([{ verdict: 'REJECTED', reason: expect.stringMatching(/FIFO/) }]);
      expect(daemon.logs.filter((l) => l.msg?.startsWith('inbox entry ignored')).map((l) => l['name'])).toEqual(['.h-hidden.csv']);
      expect(perRef.get('H-HIDDEN-0001')).toBeUndefined();

      // Still running, and still paying.
      expect(daemon.exited).toBeNull();
      const last = makeRows('H-LAST', 4, { cancelEvery: 4 });
      await e2e.drop('h-last-valid.csv', toCsv(last));
      const done = await e2e.waitForBatch('h-last-valid.csv', ['COMPLETE'], 30_000);
      expect(done.counts).toEqual({ PAID: 3, CANCELLED: 1 });
      expect(daemon.exited).toBeNull();
    },
  );
});

import { AsyncLocalStorage, executionAsyncResource } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Buffer } from 'node:buffer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/domain/errors.js';
import { InboxWatcher, verifyUnchanged } from '../../src/ingest/inbox/index.js';
import { type Folders, type Harness, harness, makeFolders, names, nextTimestamp, sha256, waitFor } from './helpers.js';

let folders: Folders;
const started: InboxWatcher[] = [];

beforeEach(async () => {
  folders = await makeFolders();
});

afterEach(async () => {
  for (const w of started.splice(0)) await w.stop();
  await folders.cleanup();
});

async function startHarness(options: Parameters<typeof harness>[1] = {}): Promise<Harness> {
  const h = harness(folders, options);
  await h.watcher.start();
  started.push(h.watcher);
  return h;
}

const inboxPath = (name: string): string => join(folders.inbox, name);

describe('InboxWatcher', () => {
  it('claims files already present at start, only after the stability window', async () => {
    writeFileSync(inboxPath('a.csv'), 'id,amount\n1,10.50\n');
    writeFileSync(inboxPath('b.csv'), 'id,amount\n2,3\n');
    const h = await startHarness();

    await h.step(0);
    await h.step(4999);
    expect(h.offered).toEqual([]);
    await h.step(1);

    expect(h.claimed.map((c) => c.originalName).sort()).toEqual(['a.csv', 'b.csv']);
    for (const c of h.claimed) {
      expect(dirname(c.storedPath)).toBe(h.watcher.claimedDir);
      expect(c.sha256).toBe(sha256(readFileSync(c.storedPath)));
      expect(c.size).toBe((await stat(c.storedPath)).size);
    }
    expect(await names(folders.inbox)).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  it('claims a file written in pieces only once it stops changing, for 3 times its longest pause', async () => {
    const path = inboxPath('pieces.csv');
    writeFileSync(path, 'id,amount\n');
    const h = await startHarness();
    await h.step(0);

    await h.step(3000);
    appendFileSync(path, '1,10\n');
    await h.step(0);
    await h.step(3000); // 6000 since start, only 3000 since the last write
    expect(h.offered).toEqual([]);
    appendFileSync(path, '2,20\n');
    await h.step(0);
    await h.step(5000); // the window alone would take it now
    expect(h.offered).toEqual([]);
    expect(h.watcher.pending()).toEqual([
      {
        name: 'pieces.csv',
        unchangedSince: h.clock.now() - 5000,
        stableAt: h.clock.now() + 4000,
        waitsMs: 4000,
        waitingFor: 'upload-pauses',
      },
    ]);
    await h.step(3999);
    expect(h.offered).toEqual([]);
    await h.step(1); // 3 x the 3000 pauses

    expect(h.claimed).toHaveLength(1);
    expect(readFileSync(h.claimed[0]!.storedPath, 'utf8')).toBe('id,amount\n1,10\n2,20\n');
    expect(h.claimed[0]!.size).toBe(Buffer.byteLength('id,amount\n1,10\n2,20\n'));
  });

  it('ignores temp names, then claims the file once renamed to its final name (seen through chokidar)', async () => {
    for (const name of ['x.csv.filepart', '.in.y.csv', 'z.csv.part', 'w.tmp', 'v.csv.partial', 'u.crdownload', '.hidden.csv', 'skip.bak']) {
      writeFileSync(inboxPath(name), 'id\n');
    }
    const h = await startHarness({ ignore: ['*.bak'] });
    await h.step(0);
    await h.step(60_000);
    expect(h.offered).toEqual([]);
    expect(h.watcher.pending()).toEqual([]);

    renameSync(inboxPath('x.csv.filepart'), inboxPath('x.csv'));
    await waitFor(() => h.watcher.pending().some((p) => p.name === 'x.csv'), 'chokidar to report x.csv');
    await h.step(0);
    await h.step(5000);

    expect(h.claimed.map((c) => c.originalName)).toEqual(['x.csv']);
    expect(await names(folders.inbox)).toEqual([
      '.hidden.csv',
      '.in.y.csv',
      'skip.bak',
      'u.crdownload',
      'v.csv.partial',
      'w.tmp',
      'z.csv.part',
    ]);
  });

  it('with requireDoneMarker waits for <name>.done and consumes it at claim', async () => {
    writeFileSync(inboxPath('batch.csv'), 'id\n1\n');
    const h = await startHarness({ requireDoneMarker: true, watchEvents: false });
    await h.step(0);
    await h.step(10_000);
    expect(h.offered).toEqual([]);

    writeFileSync(inboxPath('batch.csv.done'), '');
    await h.step(0);

    expect(h.claimed.map((c) => c.originalName)).toEqual(['batch.csv']);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('with requireDoneMarker, a marker older than the file is not the one it waits for; one sent after it is', async () => {
    writeFileSync(inboxPath('batch.csv.done'), ''); // left from an earlier upload of that name
    await nextTimestamp();
    writeFileSync(inboxPath('batch.csv'), 'id\n1\n');
    const h = await startHarness({ requireDoneMarker: true, watchEvents: false });
    await h.step(0);
    await h.run(10_000);
    expect(h.offered).toEqual([]);
    expect(h.watcher.pending()).toMatchObject([{ name: 'batch.csv', waitingFor: 'done-marker' }]);
    expect(h.markerNotices.map((n) => [n.kind, n.name])).toEqual([['older-than-file', 'batch.csv']]);

    await nextTimestamp();
    writeFileSync(inboxPath('batch.csv.done'), ''); // the sender's marker for this upload, written into the same inode
    await h.step(0);
    expect(h.claimed.map((c) => [c.originalName, c.doneMarker])).toEqual([['batch.csv', true]]);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('moves the .ctl sidecar along, and a sidecar that appears restarts the window', async () => {
    writeFileSync(inboxPath('pay.csv'), 'id\n1\n');
    const h = await startHarness({ watchEvents: false });
    await h.step(0);
    await h.step(4000);
    writeFileSync(inboxPath('pay.csv.ctl'), 'rows=1\n');
    await h.step(0);
    await h.step(4000);
    expect(h.offered).toEqual([]);
    await h.step(1000);

    expect(h.offered).toEqual([]); // the sidecar came 4000 after the file: that pause counts 3 times
    await h.step(6999);
    expect(h.offered).toEqual([]);
    await h.step(1);

    const [claimed] = h.claimed;
    expect(claimed?.controlPath).toBe(`${claimed?.storedPath}.ctl`);
    expect(readFileSync(claimed!.controlPath!, 'utf8')).toBe('rows=1\n');
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('reports a directory, a symlink and a FIFO once, without opening them or blocking other files', async () => {
    mkdirSync(inboxPath('sub'));
    writeFileSync(join(inboxPath('sub'), 'inner.csv'), 'id\n');
    writeFileSync(join(folders.base, 'target.csv'), 'id\n');
    symlinkSync(join(folders.base, 'target.csv'), inboxPath('link.csv'));
    execFileSync('mkfifo', [inboxPath('pipe.csv')]);
    writeFileSync(inboxPath('ok.csv'), 'id\n1\n');
    const h = await startHarness();

    await h.step(0);
    const byName = Object.fromEntries(h.rejected.map((r) => [r.entry.name, r]));
    expect(Object.keys(byName).sort()).toEqual(['link.csv', 'pipe.csv', 'sub']);
    expect(byName['sub']!.entry.kind).toBe('directory');
    expect(byName['sub']!.entry.movedTo).toBeUndefined();
    expect(byName['link.csv']!.entry.kind).toBe('symlink');
    expect(byName['pipe.csv']!.entry.kind).toBe('fifo');
    for (const name of ['link.csv', 'pipe.csv']) {
      const movedTo = byName[name]!.entry.movedTo!;
      expect(dirname(movedTo)).toBe(h.watcher.rejectedDir);
      expect(readFileSync(`${movedTo}.reason.txt`, 'utf8')).toContain(JSON.stringify(name));
    }
    expect(readFileSync(join(folders.base, 'target.csv'), 'utf8')).toBe('id\n'); // the link target is untouched

    await h.step(5000);
    await h.step(30_000); // a rescan sees the directory again: not reported twice
    await h.step(30_000);
    expect(h.rejected).toHaveLength(3);
    expect(h.claimed.map((c) => c.originalName)).toEqual(['ok.csv']);
    expect(await names(folders.inbox)).toEqual(['sub']);
    expect(await names(inboxPath('sub'))).toEqual(['inner.csv']);
    expect(h.errors).toEqual([]);
  });

  it('claims names with spaces, unicode, leading dashes and path-like content safely, keeping the original name', async () => {
    const originals = [
      'batch with spaces.csv',
      'paie-été-€-日本.csv',
      '-rf --help.csv',
      'a..\\..\\..\\etc\\passwd.csv',
      'x..%2F..%2Fescape.csv',
      'tab\there\nnl.csv',
    ];
    for (const name of originals) writeFileSync(inboxPath(name), `${name}\n`);
    const h = await startHarness();
    await h.step(0);
    await h.step(5000);

    expect(h.claimed.map((c) => c.originalName).sort()).toEqual([...originals].sort());
    for (const c of h.claimed) {
      expect(dirname(c.storedPath)).toBe(h.watcher.claimedDir);
      const stored = basename(c.storedPath);
      expect(stored).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{12}__[\p{L}\p{M}\p{N}+=@,][\p{L}\p{M}\p{N}._+=@,-]*$/u);
      expect(readFileSync(c.storedPath, 'utf8')).toBe(`${c.originalName}\n`);
    }
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('forgets a file deleted between detection and claim', async () => {
    writeFileSync(inboxPath('gone.csv'), 'id\n');
    const results: unknown[] = [];
    const h = await startHarness({
      onCandidateReady: async (candidate, hh) => {
        unlinkSync(candidate.path);
        results.push(await hh.watcher.claim(candidate));
      },
    });
    await h.step(0);
    await h.step(5000);
    expect(results).toEqual([null]);
    await h.step(0);
    expect(h.watcher.pending()).toEqual([]);
    expect(await names(h.watcher.claimedDir)).toEqual([]);
    expect(h.errors).toEqual([]);
  });

  it('detects, through verifyUnchanged, an upload that goes on writing into the claimed inode', async () => {
    const path = inboxPath('slow.csv');
    // The SFTP server's open handle: it survives the rename into claimed/.
    const fd = openSync(path, 'a');
    writeSync(fd, 'id,amount\n1,10\n');
    try {
      const h = await startHarness();
      await h.step(0);
      await h.step(5000);
      const claimed = h.claimed[0]!;
      expect(await verifyUnchanged(claimed)).toEqual({ changed: false });

      writeSync(fd, '2,20\n');
      const verdict = await verifyUnchanged(claimed);
      expect(verdict.changed).toBe(true);
      expect(verdict.reason).toMatch(/size changed from 15 to 20 bytes/);
    } finally {
      closeSync(fd);
    }
  });

  it('finds a file through the rescan when no event arrives', async () => {
    const h = await startHarness({ watchEvents: false, rescanIntervalMs: 30_000 });
    writeFileSync(inboxPath('late.csv'), 'id\n');
    await h.step(0);
    await h.step(29_999);
    expect(h.watcher.pending()).toEqual([]);
    await h.step(1);
    expect(h.watcher.pending().map((p) => p.name)).toEqual(['late.csv']);
    await h.step(5000);
    expect(h.claimed.map((c) => c.originalName)).toEqual(['late.csv']);
  });

  it('finds a file created while stopped when started again', async () => {
    const h = await startHarness();
    await h.watcher.stop();
    writeFileSync(inboxPath('while-stopped.csv'), 'id\n');
    await h.watcher.start();
    expect(h.watcher.pending().map((p) => p.name)).toEqual(['while-stopped.csv']);
  });

  it('offers a file the caller left in place again only after the rescan interval', async () => {
    writeFileSync(inboxPath('held.csv'), 'id\n');
    const h = await startHarness({ onCandidateReady: async () => undefined, rescanIntervalMs: 30_000 });
    await h.step(0);
    await h.step(5000);
    await h.step(1000);
    await h.step(20_000);
    expect(h.offered).toHaveLength(1);
    await h.step(10_000);
    expect(h.offered).toHaveLength(2);
  });

  it('reports a failing callback through onError and keeps going', async () => {
    writeFileSync(inboxPath('a.csv'), 'id\n');
    writeFileSync(inboxPath('b.csv'), 'id\n');
    const h = await startHarness({
      onCandidateReady: async (candidate, hh) => {
        if (candidate.name === 'a.csv') throw new Error('database is down: password=hunter2');
        const claimed = await hh.watcher.claim(candidate);
        if (claimed !== null) hh.claimed.push(claimed);
      },
    });
    await h.step(0);
    await h.step(5000);
    expect(h.claimed.map((c) => c.originalName)).toEqual(['b.csv']);
    expect(h.errors.map((e) => e.code)).toEqual(['INBOX_CALLBACK_FAILED']);
    expect(h.errors[0]!.message).not.toContain('hunter2');
  });

  it('stop() waits for the callback in flight and no other offer follows', async () => {
    writeFileSync(inboxPath('a.csv'), 'id\n');
    writeFileSync(inboxPath('b.csv'), 'id\n');
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const h = await startHarness({
      onCandidateReady: async () => {
        entered();
        await gate;
      },
    });
    await h.step(0);
    h.clock.advance(5000);
    const pass = h.watcher.tick();
    await inside;
    let stopped = false;
    const stopping = h.watcher.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    release();
    await stopping;
    await pass;
    expect(h.offered).toHaveLength(1);
  });

  it('stop() called from inside the callback (not awaited there) ends the watcher after that callback', async () => {
    writeFileSync(inboxPath('a.csv'), 'id\n');
    writeFileSync(inboxPath('b.csv'), 'id\n');
    let stopping: Promise<void> | undefined;
    const h = await startHarness({
      onCandidateReady: async (_candidate, hh) => {
        stopping = hh.watcher.stop();
      },
    });
    await h.step(0);
    await h.step(5000);
    await stopping;
    expect(h.offered).toHaveLength(1);
  });

  it('turns on no async context tracking, in its callbacks or after (on Node 20 it slows every promise of the process)', async (ctx) => {
    // An enabled AsyncLocalStorage (Node 20's, on async_hooks) stamps each new async resource with a symbol
    // of its own, besides the symbols node:timers gives an Immediate.
    const stampsOfANewResource = (): Promise<number> =>
      new Promise((done) => setImmediate(() => done(Object.getOwnPropertySymbols(executionAsyncResource()).length)));
    const before = await stampsOfANewResource();
    // Node 24's AsyncLocalStorage (on AsyncContextFrame) stamps nothing: there this test proves nothing.
    const probe = new AsyncLocalStorage<true>();
    const stampsBySomeContext = await probe.run(true, stampsOfANewResource);
    probe.disable();
    if (stampsBySomeContext === before) ctx.skip();
    writeFileSync(inboxPath('a.csv'), 'id\n');
    let stampsInside = -1;
    const h = await startHarness({
      onCandidateReady: async () => {
        stampsInside = await stampsOfANewResource();
      },
    });
    await h.step(0);
    await h.step(5000);
    expect(h.offered.map((c) => c.name)).toEqual(['a.csv']);
    expect(stampsInside).toBe(before);
    expect(await stampsOfANewResource()).toBe(before);
  });

  it('reports a name that is not valid UTF-8 once and leaves it in place', async () => {
    const raw = Buffer.concat([Buffer.from(`${folders.inbox}/`), Buffer.from([0x66, 0xe9, 0x2e, 0x63, 0x73, 0x76])]);
    writeFileSync(raw, 'id\n');
    const h = await startHarness({ watchEvents: false });
    await h.step(0);
    await h.step(30_000);
    await h.step(30_000);
    expect(h.rejected.map((r) => [r.entry.kind, r.entry.name])).toEqual([['invalid-name', 'fé.csv']]);
    expect(existsSync(raw)).toBe(true);
  });

  it('does not report its own storage folder when it lives inside the inbox', async () => {
    const h = harness(folders, { storageDir: join(folders.inbox, 'payoutd') });
    await h.watcher.start();
    started.push(h.watcher);
    writeFileSync(inboxPath('a.csv'), 'id\n');
    await h.step(30_000);
    await h.step(5000);
    expect(h.rejected).toEqual([]);
    expect(h.claimed.map((c) => c.originalName)).toEqual(['a.csv']);
  });

  it('refuses storage on another filesystem than the inbox', async (ctx) => {
    const shm = '/dev/shm';
    if (!existsSync(shm) || (await stat(shm)).dev === (await stat(folders.base)).dev) ctx.skip();
    const storage = join(shm, `payoutd-test-${process.pid}-${Date.now()}`);
    try {
      await expect(harness(folders, { storageDir: storage }).watcher.start()).rejects.toMatchObject({ code: 'INBOX_CROSS_DEVICE' });
      await expect(harness(folders, { rejectedDir: storage }).watcher.start()).rejects.toMatchObject({ code: 'INBOX_CROSS_DEVICE' });
    } finally {
      execFileSync('rm', ['-rf', '--', storage]);
    }
  });

  it('reports an entry that cannot be moved aside once, with one error, and does not retry it', async () => {
    execFileSync('mkfifo', [inboxPath('pipe.csv')]);
    const h = await startHarness({ watchEvents: false });
    // The rejected folder becomes a plain file: every move aside fails.
    rmSync(h.watcher.rejectedDir, { recursive: true });
    writeFileSync(h.watcher.rejectedDir, '');
    await h.step(0);
    await h.step(30_000);
    await h.step(30_000);
    expect(h.rejected.map((r) => [r.entry.name, r.entry.kind, r.entry.movedTo])).toEqual([['pipe.csv', 'fifo', undefined]]);
    expect(h.errors.map((e) => e.code)).toEqual(['INBOX_MOVE_ASIDE_FAILED']);
    expect(await names(folders.inbox)).toEqual(['pipe.csv']);
  });

  it('names the option, the value and its type when an option is wrong', () => {
    const make = () =>
      new InboxWatcher({
        inboxDir: folders.inbox,
        storageDir: folders.storage,
        stableForMs: 0,
        onCandidateReady: async () => undefined,
        onRejected: () => undefined,
        onError: () => undefined,
      });
    expect(make).toThrow(ConfigError);
    expect(make).toThrow('Expected `stableForMs` to be a whole number of milliseconds from 1 and up, got 0 (number)');
  });

  it('refuses to claim a path outside the inbox', async () => {
    writeFileSync(join(folders.base, 'outside.csv'), 'id\n');
    const h = await startHarness();
    const st = await stat(join(folders.base, 'outside.csv'));
    await expect(
      h.watcher.claim({ name: '../outside.csv', path: join(folders.base, 'outside.csv'), size: st.size, mtimeMs: st.mtimeMs, ino: st.ino }),
    ).rejects.toMatchObject({ code: 'INBOX_CLAIM_FAILED' });
    expect(existsSync(join(folders.base, 'outside.csv'))).toBe(true);
  });
});

describe('InboxWatcher: patience that fits the upload', () => {
  it('a file growing in bursts with 8 s pauses under a 5 s window is not offered 5 s after a burst, and is offered once, whole', async () => {
    const path = inboxPath('bursts.csv');
    // The first burst is cut inside a row (its pause is the unterminated rule's: no pause was seen yet);
    // the later ones end with a line break, so only the pauses seen can hold them.
    const bursts = ['id,amount\n1,1', '0\n2,20\n', '3,30\n', '4,40\n'];
    writeFileSync(path, bursts[0]!);
    const h = await startHarness({ watchEvents: false });
    for (const [i, burst] of bursts.entries()) {
      if (i > 0) {
        await h.run(3000);
        expect(h.offered, `3 s more: 8 s after burst ${i}`).toEqual([]);
        appendFileSync(path, burst);
      }
      await h.step(0);
      await h.run(5000);
      expect(h.offered, `5 s after burst ${i + 1}`).toEqual([]); // a fixed 5 s window takes it here
    }
    expect(h.watcher.pending()).toMatchObject([{ name: 'bursts.csv', waitingFor: 'upload-pauses', waitsMs: 3 * 8000 - 5000 }]);
    await h.run(3 * 8000 - 5000 - 1000);
    expect(h.offered).toEqual([]);
    await h.run(1000);
    expect(h.offered.map((c) => [c.name, c.size])).toEqual([['bursts.csv', Buffer.byteLength(bursts.join(''))]]);
    expect(readFileSync(h.claimed[0]!.storedPath, 'utf8')).toBe(bursts.join(''));
  });

  it('waits no longer than maxStableForMs after the last change, however long the upload paused', async () => {
    const path = inboxPath('slow.csv');
    writeFileSync(path, 'id,amount\n1,1'); // cut inside a row: the first pause is held by the unterminated rule
    const h = await startHarness({ watchEvents: false, maxStableForMs: 30_000 });
    await h.step(0);
    await h.run(20_000);
    appendFileSync(path, '0\n'); // after a pause of 20 s: 3 x 20 s, capped at 30 s
    await h.step(0);
    expect(h.watcher.pending()).toMatchObject([{ name: 'slow.csv', waitingFor: 'upload-pauses', waitsMs: 30_000 }]);
    await h.run(29_000);
    expect(h.offered).toEqual([]);
    await h.run(1000);
    expect(h.claimed.map((c) => c.originalName)).toEqual(['slow.csv']);
  });
});

describe('InboxWatcher: a file that does not end with a line break', () => {
  const unterminated = 'id,amount\n1,10\n2,2'; // cut inside its last field

  it('is not offered before unterminatedStableForMs, then is (the intake decides)', async () => {
    writeFileSync(inboxPath('cut.csv'), unterminated);
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.run(5000);
    expect(h.offered).toEqual([]);
    expect(h.watcher.pending()).toMatchObject([{ name: 'cut.csv', waitingFor: 'unterminated', waitsMs: 55_000 }]);
    await h.run(54_000);
    expect(h.offered).toEqual([]);
    await h.run(1000);
    expect(h.claimed.map((c) => [c.originalName, c.size, c.doneMarker])).toEqual([['cut.csv', unterminated.length, false]]);
  });

  it('holds an empty file as long (an export is never empty; an upload that has not started yet is)', async () => {
    writeFileSync(inboxPath('empty.csv'), '');
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.run(59_000);
    expect(h.offered).toEqual([]);
    await h.run(1000);
    expect(h.offered.map((c) => c.size)).toEqual([0]);
  });

  it('goes at the window when <name>.done is present; the claim records the marker and consumes it', async () => {
    writeFileSync(inboxPath('vouched.csv'), unterminated);
    writeFileSync(inboxPath('vouched.csv.done'), '');
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.step(5000);
    expect(h.claimed.map((c) => [c.originalName, c.doneMarker])).toEqual([['vouched.csv', true]]);
    expect(h.offered[0]!.doneMarkerPath).toBe(inboxPath('vouched.csv.done'));
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('is not claimed when the marker it was offered on is gone by the claim', async () => {
    writeFileSync(inboxPath('vouched.csv'), unterminated);
    writeFileSync(inboxPath('vouched.csv.done'), '');
    const results: unknown[] = [];
    const h = await startHarness({
      watchEvents: false,
      unterminatedStableForMs: 60_000,
      onCandidateReady: async (candidate, hh) => {
        unlinkSync(inboxPath('vouched.csv.done'));
        results.push(await hh.watcher.claim(candidate));
      },
    });
    await h.step(0);
    await h.step(5000);
    expect(results).toEqual([null]);
    expect(await names(folders.inbox)).toEqual(['vouched.csv']);
  });

  it('a terminated file is not delayed; a .done beside it is recorded and consumed even when markers are not required', async () => {
    writeFileSync(inboxPath('plain.csv'), 'id,amount\n1,10\n');
    writeFileSync(inboxPath('marked.csv'), 'id,amount\n1,10\n');
    writeFileSync(inboxPath('marked.csv.done'), '');
    const h = await startHarness({ watchEvents: false });
    await h.step(0);
    await h.step(5000);
    expect(h.claimed.map((c) => [c.originalName, c.doneMarker]).sort()).toEqual([
      ['marked.csv', true],
      ['plain.csv', false],
    ]);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('a marker left from an earlier upload of that name does not vouch for the next one, stalled inside its last value', async () => {
    writeFileSync(inboxPath('again.csv.done'), ''); // its file was taken before it landed
    await nextTimestamp();
    const path = inboxPath('again.csv');
    writeFileSync(path, 'id,account\n1,10000042683410\n');
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.run(3000);
    appendFileSync(path, '2,100000426834'); // the next burst, then the client stalls
    const marker = await stat(inboxPath('again.csv.done'));
    const file = await stat(path);
    expect(marker.ctimeMs).toBeLessThan(file.ctimeMs);
    await h.step(0);
    await h.run(20_000);
    expect(h.offered).toEqual([]);
    expect(h.watcher.pending()).toMatchObject([{ name: 'again.csv', waitingFor: 'unterminated' }]);
    // Told once, with both times, however many passes look at it.
    expect(h.markerNotices).toEqual([
      {
        kind: 'older-than-file',
        name: 'again.csv',
        markerPath: inboxPath('again.csv.done'),
        markerChangedMs: marker.ctimeMs,
        fileChangedMs: file.ctimeMs,
      },
    ]);

    // Left alone past the long wait, it is offered as unterminated (the intake refuses it); the old marker is not recorded.
    await h.run(40_000);
    expect(h.claimed.map((c) => [c.originalName, c.doneMarker])).toEqual([['again.csv', false]]);
    expect(h.markerNotices).toHaveLength(1);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('a marker sent after the complete file vouches for it, also when an older one was there first', async () => {
    writeFileSync(inboxPath('resent.csv.done'), '');
    await nextTimestamp();
    writeFileSync(inboxPath('resent.csv'), unterminated);
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.run(5000);
    expect(h.offered).toEqual([]);
    await nextTimestamp();
    writeFileSync(inboxPath('resent.csv.done'), '');
    await h.step(0);
    expect(h.claimed.map((c) => [c.originalName, c.doneMarker])).toEqual([['resent.csv', true]]);
    expect(h.offered[0]!.doneMarkerPath).toBe(inboxPath('resent.csv.done'));
  });

  it('reads the end again when the file changes: a line break written later releases it at the window', async () => {
    const path = inboxPath('resumed.csv');
    writeFileSync(path, unterminated);
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 600_000 });
    await h.step(0);
    await h.run(6000);
    expect(h.offered).toEqual([]);
    appendFileSync(path, '0\n');
    await h.step(0);
    await h.run(3 * 6000 - 1000);
    expect(h.offered).toEqual([]);
    await h.run(1000);
    expect(h.claimed.map((c) => c.size)).toEqual([unterminated.length + 2]);
  });
});

describe('InboxWatcher: a .done marker with no file beside it', () => {
  it('is removed once alone for longer than stableForMs, and told; a marker beside its file is left', async () => {
    writeFileSync(inboxPath('gone.csv.done'), '');
    writeFileSync(inboxPath('held.csv.done'), '');
    await nextTimestamp();
    writeFileSync(inboxPath('held.csv'), 'id\n1'); // unterminated: waits, its marker (older) beside it
    const h = await startHarness({ watchEvents: false, unterminatedStableForMs: 60_000 });
    await h.step(0);
    await h.run(5000);
    expect(await names(folders.inbox)).toEqual(['gone.csv.done', 'held.csv', 'held.csv.done']);
    await h.step(1);
    expect(await names(folders.inbox)).toEqual(['held.csv', 'held.csv.done']);
    expect(h.markerNotices.filter((n) => n.kind === 'removed-alone')).toEqual([
      { kind: 'removed-alone', name: 'gone.csv', markerPath: inboxPath('gone.csv.done'), aloneForMs: 5001 },
    ]);
    expect(h.offered).toEqual([]);
  });

  it('is removed once the file it stood beside is gone (withdrawn by its sender), without waiting for a listing', async () => {
    writeFileSync(inboxPath('withdrawn.csv'), 'id\n1');
    await nextTimestamp();
    writeFileSync(inboxPath('withdrawn.csv.done'), '');
    const h = await startHarness({ watchEvents: false, requireDoneMarker: true, rescanIntervalMs: 600_000 });
    await h.step(0);
    unlinkSync(inboxPath('withdrawn.csv'));
    await h.step(1000);
    await h.run(5000);
    expect(await names(folders.inbox)).toEqual(['withdrawn.csv.done']);
    await h.step(1);
    expect(await names(folders.inbox)).toEqual([]);
    expect(h.markerNotices).toEqual([
      { kind: 'removed-alone', name: 'withdrawn.csv', markerPath: inboxPath('withdrawn.csv.done'), aloneForMs: 5001 },
    ]);
  });
});

describe('InboxWatcher: every entry gets an answer', () => {
  it('takes names beginning with ".." and names with control characters, like any other', async () => {
    for (const name of ['..two-dots.csv', 'line\nbreak.csv', 'bell\u0007.csv']) writeFileSync(inboxPath(name), 'id\n1\n');
    const h = await startHarness({ watchEvents: false });
    await h.step(0);
    await h.step(5000);
    expect(h.claimed.map((c) => c.originalName).sort()).toEqual(['..two-dots.csv', 'bell\u0007.csv', 'line\nbreak.csv']);
    for (const c of h.claimed) expect(basename(c.storedPath)).toMatch(/^\d{8}T\d{6}Z-[0-9a-f]{12}__[\p{L}\p{N}][\p{L}\p{N}._-]*$/u);
  });

  it('tells once, per name and inode, of a dotfile not written to for 12 windows; never takes it', async () => {
    const now = Date.now();
    const lastWritten = (ms: number) => new Date(ms);
    writeFileSync(inboxPath('.in.batch.csv'), 'id\n1\n');
    utimesSync(inboxPath('.in.batch.csv'), lastWritten(now - 12 * 5000 + 30_000), lastWritten(now - 12 * 5000 + 30_000));
    writeFileSync(inboxPath('.being-written.csv'), 'id\n');
    const h = harness(folders, { watchEvents: false, rescanIntervalMs: 30_000 });
    h.clock.set(now);
    await h.watcher.start();
    started.push(h.watcher);
    await h.step(0);
    expect(h.ignored).toEqual([]);
    appendFileSync(inboxPath('.being-written.csv'), '1\n');
    utimesSync(inboxPath('.being-written.csv'), lastWritten(now + 30_000), lastWritten(now + 30_000));
    await h.step(30_000); // the next listing: 12 windows since it was written
    expect(h.ignored.map((i) => [i.entry.name, i.entry.kind, i.entry.unchangedForMs])).toEqual([['.in.batch.csv', 'file', 12 * 5000]]);
    expect(h.ignored[0]!.reason).toMatch(/never taken.*rename it without the leading dot/);
    await h.step(30_000);
    await h.step(30_000);
    expect(h.ignored.filter((i) => i.entry.name === '.in.batch.csv')).toHaveLength(1);

    // Another file under the same name (created while the first exists: another inode) is told of again.
    writeFileSync(join(folders.base, 'again'), 'id\n2\n');
    utimesSync(join(folders.base, 'again'), lastWritten(now), lastWritten(now));
    renameSync(join(folders.base, 'again'), inboxPath('.in.batch.csv'));
    await h.step(30_000);
    expect(h.ignored.filter((i) => i.entry.name === '.in.batch.csv')).toHaveLength(2);
    expect(h.offered).toEqual([]);
    expect(await names(folders.inbox)).toEqual(['.being-written.csv', '.in.batch.csv']);
  });
});

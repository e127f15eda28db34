/**
 * A console upload let into a real inbox folder, recorded in a real SQLite
 * file: a refused duplicate leaves the record of the upload that got in; an
 * upload comes with its `.done` marker, so an inbox that requires markers
 * takes it and a CSV without a final line break is not held as cut short.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acceptUpload, type UploadTarget } from '../../src/console/upload.js';
import { ManualClock } from '../../src/domain/clock.js';
import { InboxWatcher, claimFile, type ClaimedFile, type InboxCandidate } from '../../src/ingest/inbox/index.js';
import { consoleUploaderOf, recordConsoleUpload } from '../../src/store/index.js';
import { useTestDatabase } from '../support/database.js';
import { inodeOf } from '../support/files.js';

const CSV = 'merchantReferenceId,payoutAmount\nINV-1,1000.00\n';
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const body = (text: string): Readable => Readable.from([Buffer.from(text)]);

describe('console upload', () => {
  const t = useTestDatabase('payoutd-console-upload-');
  let dir = '';
  let target: UploadTarget;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-console-upload-dirs-'));
    for (const d of ['inbox', 'state']) await mkdir(join(dir, d));
    // One clock reading for every upload: two identical uploads in the same millisecond.
    target = { db: t.db, inbox: join(dir, 'inbox'), stateDir: join(dir, 'state'), maxBytes: 1 << 20, ignore: [], now: () => 1_000 };
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('an identical upload refused in the same millisecond keeps the record of the one let in', async () => {
    await acceptUpload(target, 'same.csv', 'mallory', body(CSV));
    await expect(acceptUpload(target, 'same.csv', 'mallory', body(CSV))).rejects.toMatchObject({ code: 'UPLOAD_NAME_TAKEN' });
    expect(await readdir(target.inbox)).toEqual(['same.csv', 'same.csv.done']);
    // Otherwise the waiting file's batch would name no console uploader, and she could approve it.
    const inode = await inodeOf(join(target.inbox, 'same.csv'));
    expect(await consoleUploaderOf(t.db, { fileName: 'same.csv', sha256: sha256(CSV), inode, receivedAt: 2_000 })).toBe('mallory');
  });

  it('a file taken from the inbox stays its uploader’s when someone uploads the same name and bytes before the lookup', async () => {
    let now = 1_000;
    target.now = () => now;
    await acceptUpload(target, 'june.csv', 'alice', body(CSV));
    // The daemon's claim renames Alice's file out of the inbox (as claimFile does); the name is free again.
    const claimed = join(dir, 'claimed-june.csv');
    await rename(join(target.inbox, 'june.csv'), claimed);
    await rm(join(target.inbox, 'june.csv.done'));
    now = 2_000;
    // Bob's identical upload is let in and recorded before the daemon looks up who uploaded Alice's file.
    await acceptUpload(target, 'june.csv', 'bob', body(CSV));
    const lookup = async (path: string) =>
      consoleUploaderOf(t.db, { fileName: 'june.csv', sha256: sha256(CSV), inode: await inodeOf(path), receivedAt: 3_000 });
    // Otherwise Alice's batch would be Bob's, and Alice could approve her own upload.
    expect(await lookup(claimed)).toBe('alice');
    expect(await lookup(join(target.inbox, 'june.csv'))).toBe('bob');
  });

  it('an upload recorded before inodes were names its file only when no upload of that inode was recorded', async () => {
    // As migration 0022 leaves the record of an upload still waiting in the inbox: no inode.
    await t.db('console_uploads').insert({ file_name: 'may.csv', sha256: sha256(CSV), size: 1, uploader: 'alice', uploaded_at: 500 });
    await recordConsoleUpload(t.db, { fileName: 'may.csv', sha256: sha256(CSV), size: 1, inode: '77', uploader: 'bob', uploadedAt: 400 });
    const lookup = async (inode: string) => consoleUploaderOf(t.db, { fileName: 'may.csv', sha256: sha256(CSV), inode, receivedAt: 3_000 });
    expect(await lookup('77')).toBe('bob');
    expect(await lookup('78')).toBe('alice');
  });

  /** The inbox watching `target.inbox` as the daemon would, driven by hand; the files it offers. */
  async function watch(requireDoneMarker: boolean): Promise<{ w: InboxWatcher; clock: ManualClock; offered: InboxCandidate[] }> {
    const clock = new ManualClock(10_000);
    const offered: InboxCandidate[] = [];
    const w = new InboxWatcher({
      inboxDir: target.inbox,
      storageDir: join(dir, 'storage'),
      stableForMs: 1_000,
      unterminatedStableForMs: 600_000,
      requireDoneMarker,
      clock,
      autoTick: false,
      watchEvents: false,
      onCandidateReady: (c) => {
        offered.push(c);
        return Promise.resolve();
      },
      onRejected: () => undefined,
      onError: () => undefined,
    });
    await w.start();
    return { w, clock, offered };
  }

  /** Watches the inbox past its window; the names offered, and the claim of the first. */
  async function takeAfterWindow(requireDoneMarker: boolean): Promise<{ offered: string[]; claimed: ClaimedFile | null | undefined }> {
    const { w, clock, offered } = await watch(requireDoneMarker);
    try {
      await w.tick();
      clock.advance(1_001);
      await w.tick();
      const first = offered[0];
      const options = { claimedDir: join(dir, 'claimed'), clock, requireDoneMarker };
      return { offered: offered.map((c) => c.name), claimed: first === undefined ? undefined : await claimFile(first, options) };
    } finally {
      await w.stop();
    }
  }

  it.each([
    ['an inbox that requires .done markers takes it', true, CSV],
    ['a CSV without a final line break (as Google Sheets exports it) is taken as complete', false, CSV.trimEnd()],
  ])('a console upload comes with its .done marker: %s', async (_, requireDoneMarker, text) => {
    await acceptUpload(target, 'march.csv', 'alice', body(text));
    const { offered, claimed } = await takeAfterWindow(requireDoneMarker);
    expect(offered).toEqual(['march.csv']);
    // The batch record keeps that a marker came with it: the reading then accepts a last line without a line break.
    expect(claimed?.doneMarker).toBe(true);
    expect(await readdir(target.inbox)).toEqual([]);
  });

  it('a marker left in the inbox before the upload is replaced by its own: an inbox that requires markers takes it', async () => {
    await writeFile(join(target.inbox, 'april.csv.done'), ''); // left alone by an earlier sender of that name
    await new Promise((r) => setTimeout(r, 30)); // filesystem timestamps are coarse
    await acceptUpload(target, 'april.csv', 'alice', body(CSV.trimEnd()));
    const { offered, claimed } = await takeAfterWindow(true);
    expect(offered).toEqual(['april.csv']);
    expect(claimed?.doneMarker).toBe(true);
  });

  it('a refused upload leaves no marker, and none vouches for the file waiting under that name', async () => {
    await writeFile(join(target.inbox, 'taken.csv'), 'merchantReferenceId,payoutAmount\nINV-1,15');
    await expect(acceptUpload(target, 'taken.csv', 'alice', body(CSV))).rejects.toMatchObject({ code: 'UPLOAD_NAME_TAKEN' });
    expect(await readdir(target.inbox)).toEqual(['taken.csv']);
  });

  it('refuses a name too long in UTF-8 bytes, though short in characters, saying so; nothing is left behind', async () => {
    const long = `${'ü'.repeat(150)}.csv`;
    await expect(acceptUpload(target, long, 'alice', body(CSV))).rejects.toMatchObject({
      code: 'UPLOAD_BAD_NAME',
      message: expect.stringMatching(/is too long: 304 bytes, at most 200 .*rename the file with a shorter name$/) as unknown,
    });
    // The longest name taken, and its marker's, fit the filesystem.
    const longest = `${'a'.repeat(196)}.csv`;
    await acceptUpload(target, longest, 'alice', body(CSV));
    expect((await readdir(target.inbox)).sort()).toEqual([longest, `${longest}.done`]);
    expect(await readdir(join(target.stateDir, 'console-upload'))).toEqual([]);
  });

  it('a file that cannot be put into the inbox is refused with what to do, and names no uploader', async () => {
    await rm(target.inbox, { recursive: true });
    await expect(acceptUpload(target, 'gone.csv', 'alice', body(CSV))).rejects.toMatchObject({
      code: 'UPLOAD_FAILED',
      message:
        '"gone.csv" was not uploaded: it could not be put into the inbox (ENOENT); try again, and tell the administrator if it fails again',
    });
    expect(await t.db('console_uploads').where({ file_name: 'gone.csv' })).toEqual([]);
    expect(await readdir(join(target.stateDir, 'console-upload'))).toEqual([]);
  });

  it('an inbox on another filesystem than the state directory is named as the cause', async (ctx) => {
    // Memory-backed where there is one: never the filesystem of a temp folder on disk.
    const elsewhere = await mkdtemp(join('/dev/shm', 'payoutd-console-inbox-')).catch(() => null);
    if (elsewhere === null) return ctx.skip();
    try {
      if ((await stat(elsewhere)).dev === (await stat(target.stateDir)).dev) ctx.skip();
      await expect(acceptUpload({ ...target, inbox: elsewhere }, 'far.csv', 'alice', body(CSV))).rejects.toMatchObject({
        code: 'UPLOAD_FAILED',
        message: expect.stringContaining('the inbox is not on the filesystem of payoutd') as unknown,
      });
      expect(await readdir(elsewhere)).toEqual([]);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });
});

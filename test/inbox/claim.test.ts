import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { claimFile, settleClaim } from '../../src/ingest/inbox/claim.js';
import { type InboxCandidate, moveAside, verifyUnchanged } from '../../src/ingest/inbox/index.js';
import { type Folders, makeFolders, names, nextTimestamp, sha256 } from './helpers.js';

let folders: Folders;
let claimedDir: string;
const clock = new ManualClock(Date.UTC(2026, 2, 4, 5, 6, 7));

beforeEach(async () => {
  folders = await makeFolders();
  claimedDir = join(folders.storage, 'claimed');
});
afterEach(() => folders.cleanup());

async function candidateFor(name: string): Promise<InboxCandidate> {
  const path = join(folders.inbox, name);
  const st = await lstat(path);
  return { name, path, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

const options = () => ({ claimedDir, clock, requireDoneMarker: false });

describe('claimFile', () => {
  it('moves the file under a claim id and hashes it streaming', async () => {
    const content = Buffer.alloc(3 * 1024 * 1024 + 7, 'x');
    writeFileSync(join(folders.inbox, 'big.csv'), content);
    const claimed = await claimFile(await candidateFor('big.csv'), options());

    expect(claimed).not.toBeNull();
    expect(claimed!.claimId).toMatch(/^20260304T050607Z-[0-9a-f]{12}$/);
    expect(claimed!.storedPath).toBe(join(claimedDir, `${claimed!.claimId}__big.csv`));
    expect(claimed!.sha256).toBe(sha256(content));
    expect(claimed!.size).toBe(content.length);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('tells the stored path before the rename, so the caller holds the file in claimed/ from its first moment', async () => {
    writeFileSync(join(folders.inbox, 'told.csv'), 'id\n');
    const candidate = await candidateFor('told.csv');
    const seen: { storedPath: string; inInbox: boolean; inClaimed: boolean }[] = [];
    const beforeRename = (storedPath: string): void => {
      seen.push({ storedPath, inInbox: existsSync(candidate.path), inClaimed: existsSync(storedPath) });
    };
    const claimed = await claimFile(candidate, { ...options(), beforeRename });
    expect(seen).toEqual([{ storedPath: claimed?.storedPath, inInbox: true, inClaimed: false }]);
  });

  it('claims an empty file (the pipeline rejects it with a reason)', async () => {
    writeFileSync(join(folders.inbox, 'empty.csv'), '');
    const claimed = await claimFile(await candidateFor('empty.csv'), options());
    expect(claimed?.size).toBe(0);
    expect(claimed?.sha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('refuses a candidate that no longer matches what was judged stable, leaving it in place', async () => {
    writeFileSync(join(folders.inbox, 'grew.csv'), 'id\n');
    const candidate = await candidateFor('grew.csv');
    appendFileSync(candidate.path, '1\n');
    expect(await claimFile(candidate, options())).toBeNull();
    expect(readFileSync(candidate.path, 'utf8')).toBe('id\n1\n');
  });

  it('refuses a file replaced under the same name (another inode)', async () => {
    writeFileSync(join(folders.inbox, 'r.csv'), 'id\n');
    const candidate = await candidateFor('r.csv');
    writeFileSync(join(folders.base, 'other'), 'id\n');
    renameSync(join(folders.base, 'other'), candidate.path);
    expect(await claimFile({ ...candidate, mtimeMs: (await lstat(candidate.path)).mtimeMs }, options())).toBeNull();
  });

  it('returns null for a file that vanished', async () => {
    writeFileSync(join(folders.inbox, 'v.csv'), 'id\n');
    const candidate = await candidateFor('v.csv');
    renameSync(candidate.path, join(folders.base, 'v.csv'));
    expect(await claimFile(candidate, options())).toBeNull();
  });

  it('with markers required, refuses without <name>.done and consumes it', async () => {
    writeFileSync(join(folders.inbox, 'm.csv'), 'id\n');
    const candidate = await candidateFor('m.csv');
    const withMarkers = { ...options(), requireDoneMarker: true };
    expect(await claimFile(candidate, withMarkers)).toBeNull();
    writeFileSync(`${candidate.path}.done`, '');
    expect(await claimFile(candidate, withMarkers)).not.toBeNull();
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('records whether <name>.done came with the file, and consumes it even when markers are not required', async () => {
    writeFileSync(join(folders.inbox, 'plain.csv'), 'id\n');
    writeFileSync(join(folders.inbox, 'marked.csv'), 'id\n');
    writeFileSync(join(folders.inbox, 'marked.csv.done'), '');
    expect((await claimFile(await candidateFor('plain.csv'), options()))?.doneMarker).toBe(false);
    expect((await claimFile(await candidateFor('marked.csv'), options()))?.doneMarker).toBe(true);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('refuses a candidate offered on the strength of a marker older than the file, leaving both in place', async () => {
    writeFileSync(join(folders.inbox, 'cut.csv.done'), ''); // left from an earlier upload of that name
    await nextTimestamp();
    writeFileSync(join(folders.inbox, 'cut.csv'), 'id,account\n1,100000426834');
    const candidate = { ...(await candidateFor('cut.csv')), doneMarkerPath: join(folders.inbox, 'cut.csv.done') };
    const told: [number, number][] = [];
    const onStaleMarker = (marker: { ctimeMs: number }, file: { ctimeMs: number }): void => void told.push([marker.ctimeMs, file.ctimeMs]);
    expect(await claimFile(candidate, { ...options(), onStaleMarker })).toBeNull();
    expect(await claimFile(candidate, { ...options(), requireDoneMarker: true })).toBeNull();
    expect(await names(folders.inbox)).toEqual(['cut.csv', 'cut.csv.done']);
    const [marker, file] = [await lstat(`${candidate.path}.done`), await lstat(candidate.path)];
    expect(told).toEqual([[marker.ctimeMs, file.ctimeMs]]);
  });

  it('takes a terminated file with a marker older than it, consuming the marker but not recording it', async () => {
    writeFileSync(join(folders.inbox, 'end.csv.done'), '');
    await nextTimestamp();
    writeFileSync(join(folders.inbox, 'end.csv'), 'id\n1\n');
    expect((await claimFile(await candidateFor('end.csv'), options()))?.doneMarker).toBe(false);
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('compares the marker with the file as claimed: a rewrite after the check (same size, mtime set back) is not vouched for', async () => {
    const path = join(folders.inbox, 'rewritten.csv');
    const setBack = new Date(Date.UTC(2026, 2, 1)); // as `put -p` sets it: the sender's time, whole seconds
    writeFileSync(path, 'id,account\n1,10000042683410');
    utimesSync(path, setBack, setBack);
    await nextTimestamp();
    writeFileSync(`${path}.done`, '');
    const candidate = { ...(await candidateFor('rewritten.csv')), doneMarkerPath: `${path}.done` };
    await nextTimestamp();
    // The next upload of that name, cut inside its last value, into the same inode: size and mtime as judged.
    writeFileSync(path, 'id,account\n1,10000042683419');
    utimesSync(path, setBack, setBack);
    expect(await claimFile(candidate, options())).toBeNull();
    expect(await names(folders.inbox)).toEqual(['rewritten.csv', 'rewritten.csv.done']);
  });

  it('refuses a candidate offered on the strength of its marker when the marker is gone', async () => {
    writeFileSync(join(folders.inbox, 'cut.csv'), 'id\n1');
    const candidate = { ...(await candidateFor('cut.csv')), doneMarkerPath: join(folders.inbox, 'cut.csv.done') };
    expect(await claimFile(candidate, options())).toBeNull();
    expect(await names(folders.inbox)).toEqual(['cut.csv']);
    writeFileSync(join(folders.inbox, 'cut.csv.done'), '');
    expect((await claimFile(candidate, options()))?.doneMarker).toBe(true);
  });

  it('puts a file that changed between the check and the rename back, for the watcher to judge again', async () => {
    writeFileSync(join(folders.inbox, 'race.csv'), 'id\n');
    const candidate = await candidateFor('race.csv');
    mkdirSync(claimedDir, { recursive: true });
    const storedPath = join(claimedDir, 'X__race.csv');
    renameSync(candidate.path, storedPath);
    appendFileSync(storedPath, '1\n'); // the upload goes on after the check

    expect(await settleClaim(candidate, 'X', storedPath)).toBeNull();
    expect(readFileSync(candidate.path, 'utf8')).toBe('id\n1\n');
    expect(existsSync(storedPath)).toBe(false);
  });

  it('never overwrites a new upload when putting a changed file back', async () => {
    writeFileSync(join(folders.inbox, 'race.csv'), 'id\n');
    const candidate = await candidateFor('race.csv');
    mkdirSync(claimedDir, { recursive: true });
    const storedPath = join(claimedDir, 'X__race.csv');
    renameSync(candidate.path, storedPath);
    appendFileSync(storedPath, '1\n');
    writeFileSync(candidate.path, 'new upload\n');

    await expect(settleClaim(candidate, 'X', storedPath)).rejects.toMatchObject({ code: 'INBOX_CLAIM_RACE' });
    expect(readFileSync(candidate.path, 'utf8')).toBe('new upload\n');
    expect(readFileSync(storedPath, 'utf8')).toBe('id\n1\n');
  });
});

describe('verifyUnchanged', () => {
  it('reports a claimed file that is gone', async () => {
    writeFileSync(join(folders.inbox, 'a.csv'), 'id\n');
    const claimed = (await claimFile(await candidateFor('a.csv'), options()))!;
    renameSync(claimed.storedPath, join(folders.base, 'elsewhere'));
    expect(await verifyUnchanged(claimed)).toEqual({ changed: true, reason: 'the claimed file is gone' });
  });
});

describe('moveAside', () => {
  it('moves a file into the rejected folder with a reason file', async () => {
    const rejectedDir = join(folders.storage, 'rejected');
    writeFileSync(join(folders.inbox, '-odd name.txt'), 'not a csv');
    const moved = await moveAside(join(folders.inbox, '-odd name.txt'), rejectedDir, 'not a CSV file', { clock });

    expect(basename(moved.storedPath)).toMatch(/^20260304T050607Z-[0-9a-f]{12}__odd_name\.txt$/);
    expect(readFileSync(moved.storedPath, 'utf8')).toBe('not a csv');
    expect(moved.reasonPath).toBe(`${moved.storedPath}.reason.txt`);
    expect(readFileSync(moved.reasonPath, 'utf8')).toBe('not a CSV file\nfile: "-odd name.txt"\nmoved aside: 2026-03-04T05:06:07.000Z\n');
    expect(await names(folders.inbox)).toEqual([]);
  });

  it('keeps the name of a claimed file and shows its original name', async () => {
    writeFileSync(join(folders.inbox, 'b.csv'), '');
    const claimed = (await claimFile(await candidateFor('b.csv'), options()))!;
    const rejectedDir = join(folders.storage, 'rejected');
    const moved = await moveAside(claimed.storedPath, rejectedDir, 'empty file', { clock, originalName: claimed.originalName });
    expect(moved.storedPath).toBe(join(rejectedDir, basename(claimed.storedPath)));
    expect(readFileSync(moved.reasonPath, 'utf8')).toContain('file: "b.csv"');
  });

  it('says when the file is gone', async () => {
    await expect(moveAside(join(folders.inbox, 'nope.csv'), join(folders.storage, 'rejected'), 'x')).rejects.toMatchObject({
      code: 'INBOX_GONE',
    });
  });
});

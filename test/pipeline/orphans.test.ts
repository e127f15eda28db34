/**
 * The search for claimed files without a batch record (src/ingest/orphans.ts), on a real SQLite file. It runs
 * at start and, with several instances, once per rescan interval while files are being claimed: what this
 * process holds is never an orphan, one that is too young is left for later, an entry that is not a regular
 * file is set aside and answered, never read through, and one that cannot be examined or set aside is left and
 * reported without stopping the search.
 */
import { lstat, mkdir, readFile, readdir, readlink, symlink, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RejectedEntry } from '../../src/ingest/index.js';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: orphan claims', () => {
  it('finds claimed files without a record, but none held, too young or that cannot be set aside', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const recorded = await p.claim('recorded.csv', csvFile([csvRow('OC-1')]));
    await p.intake.receive(recorded);
    const claimedDir = dirname(recorded.storedPath);
    const orphan = await p.claim('orphan.csv', csvFile([csvRow('OC-2')]));
    const held = await p.claim('held.csv', csvFile([csvRow('OC-3')]));
    // A link to itself, with no rejected folder to move it into (a file has its name).
    await symlink('loop.csv', join(claimedDir, 'loop.csv'));
    await writeFile(join(p.dir, 'rejected'), '');
    await writeFile(join(claimedDir, '.tmp-write'), '');
    p.clock.set(Date.now() + 5_000); // the daemon's clock after the renames (ctime), however slow the setup was

    const left: string[] = [];
    const search = (minAgeMs: number) =>
      p.intake.orphanClaims(claimedDir, { minAgeMs, held: (path) => path === held.storedPath, onLeft: (path) => left.push(path) });
    expect((await search(0)).map((o) => [o.storedPath, o.sha256, o.size])).toEqual([[orphan.storedPath, orphan.sha256, orphan.size]]);
    expect(left).toEqual([join(claimedDir, 'loop.csv')]);
    expect(p.logLines.filter((l) => l.includes('cannot be moved aside: it stays in claimed/, never read (a symbolic link'))).toHaveLength(
      1,
    );
    // Renamed less than a lease ago (ctime): perhaps another process's claim on its way to its record.
    expect(await search(60_000)).toEqual([]);
  });

  it('sets a symlink found in claimed/ aside and answers it, never reading the file it points at', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const elsewhere = join(p.dir, 'elsewhere.csv');
    const content = csvFile([csvRow('OC-LINK')]);
    await writeFile(elsewhere, content);
    // payoutd never puts a link there (a claim renames a regular file): whatever it points at is not a claim.
    const claimedDir = join(p.dir, 'claimed');
    await mkdir(claimedDir, { recursive: true });
    const stored = '20260101T000000Z-0123456789ab__linked.csv';
    await symlink(elsewhere, join(claimedDir, stored));
    // Nor is a link beside a claimed file its control file.
    const plain = await p.claim('plain.csv', content);
    await writeFile(join(p.dir, 'elsewhere.ctl'), 'rows=1\n');
    await symlink(join(p.dir, 'elsewhere.ctl'), `${plain.storedPath}.ctl`);
    p.clock.set(Date.now() + 5_000);

    const answered: [RejectedEntry, string][] = [];
    const orphans = await p.intake.orphanClaims(claimedDir, { onUnreadable: (entry, reason) => void answered.push([entry, reason]) });
    expect(orphans.map((o) => [o.storedPath, o.sha256, o.controlPath])).toEqual([[plain.storedPath, plain.sha256, undefined]]);
    const movedTo = join(p.dir, 'rejected', stored);
    expect(answered).toEqual([
      [
        { name: 'linked.csv', path: join(claimedDir, stored), kind: 'symlink', movedTo },
        expect.stringMatching(/^a symbolic link, not a regular file/),
      ],
    ]);
    expect((await readdir(claimedDir)).sort()).toEqual([basename(plain.storedPath), `${basename(plain.storedPath)}.ctl`]);
    expect((await lstat(movedTo)).isSymbolicLink()).toBe(true);
    expect(await readlink(movedTo)).toBe(elsewhere);
    expect(await readFile(`${movedTo}.reason.txt`, 'utf8')).toMatch(/^a symbolic link, not a regular file/);
    expect(await readFile(elsewhere, 'utf8')).toBe(content);
    expect(p.logLines.filter((l) => l.includes('set aside: a symbolic link'))).toHaveLength(1);
  });
});

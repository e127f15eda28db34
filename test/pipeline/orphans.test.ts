/**
 * The search for claimed files without a batch record (src/ingest/orphans.ts), on a real SQLite file. It runs
 * at start and, with several instances, once per rescan interval while files are being claimed: what this
 * process holds is never an orphan, one that is too young is left for later, and an entry that cannot be
 * examined is left and reported without stopping the search.
 */
import { symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: orphan claims', () => {
  it('finds claimed files without a record, but none held, too young or beyond examination', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const recorded = await p.claim('recorded.csv', csvFile([csvRow('OC-1')]));
    await p.intake.receive(recorded);
    const claimedDir = dirname(recorded.storedPath);
    const orphan = await p.claim('orphan.csv', csvFile([csvRow('OC-2')]));
    const held = await p.claim('held.csv', csvFile([csvRow('OC-3')]));
    // A link to itself: stat fails with ELOOP, an error other than a permission.
    await symlink('loop.csv', join(claimedDir, 'loop.csv'));
    await writeFile(join(claimedDir, '.tmp-write'), '');
    p.clock.set(Date.now() + 5_000); // the daemon's clock after the renames (ctime), however slow the setup was

    const left: string[] = [];
    const search = (minAgeMs: number) =>
      p.intake.orphanClaims(claimedDir, { minAgeMs, held: (path) => path === held.storedPath, onLeft: (path) => left.push(path) });
    expect((await search(0)).map((o) => [o.storedPath, o.sha256, o.size])).toEqual([[orphan.storedPath, orphan.sha256, orphan.size]]);
    expect(left).toEqual([join(claimedDir, 'loop.csv')]);
    expect(p.logLines.filter((l) => l.includes('cannot be examined: it stays in claimed/'))).toHaveLength(1);
    // Renamed less than a lease ago (ctime): perhaps another process's claim on its way to its record.
    expect(await search(60_000)).toEqual([]);
  });
});

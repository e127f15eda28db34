/**
 * Alone on SQLite: a file left in claimed/ without a batch record while the daemon runs. A claim whose file
 * changed under it is put back into the inbox by link(), which the kernel refuses for another user's file
 * (fs.protected_hardlinks); the file then stayed in claimed/, unpaid and unanswered, until the next restart.
 * The finish pass now looks for such orphans once per rescan interval, alone as with several instances.
 */
import { rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

const FOUND = 'found a claimed file with no batch record';

describe('e2e: a claimed file left without a record while the daemon runs', () => {
  it('is received by a later finish pass, once, and paid', { timeout: 60_000 }, async () => {
    const e2e = await startE2e();
    const daemon = await e2e.startDaemon();
    // What a claim that could not put its file back leaves: the file in claimed/ under its claimed name, no batch.
    const staged = join(e2e.dir, 'left.csv');
    await writeFile(staged, toCsv(makeRows('LATE-ORPHAN', 2)));
    const second = Math.floor(Date.now() / 1000) - 5;
    await utimes(staged, second, second);
    await rename(staged, join(e2e.stateDir, 'claimed', '20260101T000000Z-0123456789ab__left.csv'));

    const batch = await e2e.waitForBatch('left.csv', ['COMPLETE'], 30_000);
    expect(batch.counts).toEqual({ PAID: 2 });
    expect(daemon.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(FOUND))).toHaveLength(1);
    expect((await e2e.batches()).filter((b) => b.fileName === 'left.csv')).toHaveLength(1);
  });
});

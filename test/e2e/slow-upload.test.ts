/**
 * E2E 4: a file that arrives slowly under its final name — written in pieces
 * by the test, and uploaded by a real OpenSSH sftp session (a private sshd,
 * test/support/sftp.ts) — is taken only once complete: one batch, every row
 * in it.
 *
 * The daemon's watcher looks at the inbox once a second. A pause between two
 * pieces that spans more than two of those ticks is sure to be observed twice
 * unchanged, so a fixed window would take a file mid-upload if the pause
 * exceeded inbox.stableForMs; it is shorter here, and the file must not be
 * taken (the window also grows with the pauses seen).
 */
import { existsSync, statSync } from 'node:fs';
import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SftpServer, sftpSkipReason } from '../support/sftp.js';
import { makeRows, toCsv, type BatchRow } from './batch-files.js';
import { startE2e, type E2e } from './harness.js';

/** The watcher's fixed pass interval in the daemon (InboxWatcher checkIntervalMs default). */
const WATCHER_TICK_MS = 1000;

async function expectOneCompleteBatch(e2e: E2e, fileName: string, rows: BatchRow[], timeoutMs: number): Promise<void> {
  const batch = await e2e.waitForBatch(fileName, ['ACTIVE', 'COMPLETE', 'REJECTED', 'DUPLICATE'], timeoutMs);
  expect(batch.state, batch.rejectReason ?? '').not.toBe('REJECTED');
  expect(batch.holdCode, batch.holdReason ?? '').toBeNull();
  expect(batch.rowCount).toBe(rows.length);
  const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
  expect(ack.rows.map((r) => r['merchant_reference_id'])).toEqual(rows.map((r) => r.merchantReferenceId));
  expect(ack.rows.every((r) => r['verdict'] === 'ACCEPTED')).toBe(true);
  expect((await e2e.batches()).map((b) => b.fileName)).toEqual([fileName]);
}

const sftpSkip = sftpSkipReason();

describe('e2e: a file written slowly', () => {
  it('written in pieces with pauses of several watcher ticks (but under stableForMs) is taken once, whole', async () => {
    const stableForMs = 4000;
    const pauseMs = 2300;
    expect(pauseMs).toBeGreaterThan(2 * WATCHER_TICK_MS);
    expect(pauseMs).toBeLessThan(stableForMs);
    const e2e = await startE2e({ config: { inbox: { stableForMs } } });
    const rows = makeRows('E2E-SLOW', 40);
    const text = toCsv(rows);
    await e2e.startDaemon();

    // Pieces cut at arbitrary byte offsets (mid-row, mid-character possibly), as a network upload delivers them.
    const bytes = Buffer.from(text, 'utf8');
    const cuts = [0, 0.3, 0.7, 1].map((f) => Math.round(f * bytes.length));
    const handle = await open(join(e2e.inbox, 'slow.csv'), 'w');
    try {
      for (let i = 0; i + 1 < cuts.length; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, pauseMs));
        await handle.write(bytes.subarray(cuts[i], cuts[i + 1]));
        // The daemon must not have taken the file while it is still being written.
        expect(existsSync(join(e2e.inbox, 'slow.csv')), `taken after piece ${i + 1}`).toBe(true);
      }
    } finally {
      await handle.close();
    }
    await expectOneCompleteBatch(e2e, 'slow.csv', rows, 15_000);
  });

  const title = 'uploaded by a real OpenSSH sftp session, growing in bursts under its final name, is taken once, whole';
  it.skipIf(sftpSkip !== null)(sftpSkip === null ? title : `${title} (skipped: ${sftpSkip})`, async () => {
    // sftp writes a whole request at once and paces the next by the bandwidth limit, so a file a little
    // larger than one request lands in two bursts with a pause of one request's time at the rate; at this
    // rate that pause is under stableForMs (the suite's slower cases are in test/inbox/sftp.test.ts).
    const rateKbit = 1000;
    const stableForMs = 4000;
    const e2e = await startE2e({ config: { inbox: { stableForMs } }, balances: { USDT: '100000000', USDC: '100000000' } });
    const rows = makeRows('E2E-SFTP', 3200);
    const source = join(e2e.dir, 'upload-source.csv');
    await writeFile(source, toCsv(rows));
    expect(statSync(source).size).toBeGreaterThan(300 * 1024);
    await e2e.startDaemon();

    const target = join(e2e.inbox, 'sftp-batch.csv');
    const sizes = new Set<number>();
    const sampler = setInterval(() => {
      const st = statSync(target, { throwIfNoEntry: false });
      if (st !== undefined) sizes.add(st.size);
    }, 20);
    const server = await SftpServer.start();
    try {
      await server.upload({ source, targetDir: e2e.inbox, remoteName: 'sftp-batch.csv', rateKbit, timeoutMs: 30_000 });
    } finally {
      clearInterval(sampler);
      await server.close();
    }
    // It really grew under its final name (a partial size was seen before the full one).
    expect([...sizes].some((s) => s > 0 && s < statSync(source).size)).toBe(true);
    await expectOneCompleteBatch(e2e, 'sftp-batch.csv', rows, 20_000);
  });
});

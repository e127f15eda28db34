/**
 * Real OpenSSH sftp uploads into the inbox (test/support/sftp.ts: a private
 * sshd on loopback), watched with the real clock: a file that grows in
 * bursts under its final name, with pauses longer than the stability window
 * or with the client stopped mid-upload, is offered once, whole. Skipped,
 * with the reason, where there is no sshd.
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type InboxCandidate, type InboxError, InboxWatcher, type InboxWatcherOptions } from '../../src/ingest/inbox/index.js';
import { SftpServer, sftpSkipReason } from '../support/sftp.js';
import { type Folders, makeFolders, sha256, waitFor } from './helpers.js';

const skip = sftpSkipReason();
if (skip !== null) console.warn(`test/inbox/sftp.test.ts skipped: ${skip}`);

/**
 * A batch of `bytes` or more whose header has an odd length and whose rows an even one: every line
 * ends at an odd offset, so a cut at a multiple of a power of two (where sftp's bursts end) is always
 * inside a row, as most cuts of a real upload are.
 */
function batchOf(bytes: number): string {
  const lines = ['id,name,amount\n'];
  let size = lines[0]!.length;
  for (let i = 1; size < bytes; i++) {
    let row = `${i},payee-${i},${i}.25\n`;
    if (row.length % 2 === 1) row = `${i},payee-${i}x,${i}.25\n`;
    lines.push(row);
    size += row.length;
  }
  return lines.join('');
}

/** Sizes of a file sampled every 50 ms while an upload runs, with when each was first seen. */
function sampleSizes(path: string): { stop: () => { at: number; size: number }[] } {
  const seen: { at: number; size: number }[] = [];
  const timer = setInterval(() => {
    const size = statSync(path, { throwIfNoEntry: false })?.size;
    if (size !== undefined && seen.at(-1)?.size !== size) seen.push({ at: Date.now(), size });
  }, 50);
  return {
    stop: () => {
      clearInterval(timer);
      return seen;
    },
  };
}

let folders: Folders;
let server: SftpServer | undefined;
let watcher: InboxWatcher | undefined;

beforeAll(async () => {
  if (skip === null) server = await SftpServer.start();
}, 30_000);
afterAll(() => server?.close());
beforeEach(async () => {
  folders = await makeFolders();
});
afterEach(async () => {
  await watcher?.stop();
  watcher = undefined;
  await folders.cleanup();
});

/** A watcher on the real clock that claims what it is offered, recording each offer and whether the upload was still running. */
async function watch(options: Partial<InboxWatcherOptions>, uploading: () => boolean) {
  const offers: { candidate: InboxCandidate; whileUploading: boolean }[] = [];
  const errors: InboxError[] = [];
  const w = new InboxWatcher({
    inboxDir: folders.inbox,
    storageDir: folders.storage,
    ...options,
    onCandidateReady: async (candidate) => {
      offers.push({ candidate, whileUploading: uploading() });
      await w.claim(candidate);
    },
    onRejected: () => undefined,
    onError: (error) => errors.push(error),
  });
  watcher = w;
  await w.start();
  return { offers, errors };
}

describe.skipIf(skip !== null)('a real sftp upload', () => {
  it('is claimed whole, after the upload ends', async () => {
    const source = join(folders.base, 'upload.csv');
    writeFileSync(source, batchOf(1_900_000));
    let uploading = true;
    const { offers, errors } = await watch({ stableForMs: 2000, checkIntervalMs: 100 }, () => uploading);
    const sizes = sampleSizes(join(folders.inbox, 'batch-1.csv'));
    await server!.upload({ source, targetDir: folders.inbox, remoteName: 'batch-1.csv', rateKbit: 2000 }).finally(() => {
      uploading = false;
    });
    expect(sizes.stop().length).toBeGreaterThan(2); // it really grew under its final name
    await waitFor(() => offers.length > 0, 'the offer', 20_000);
    expect(offers.map((o) => [o.candidate.size, o.whileUploading])).toEqual([[statSync(source).size, false]]);
    expect(errors).toEqual([]);
  }, 60_000);

  it('at 40 kbit/s, in bursts with pauses longer than a 5 s window, is offered only once, whole', async () => {
    const source = join(folders.base, 'slow.csv');
    writeFileSync(source, batchOf(150_000));
    let uploading = true;
    const { offers, errors } = await watch({ stableForMs: 5000 }, () => uploading);
    const target = join(folders.inbox, 'slow.csv');
    const sizes = sampleSizes(target);
    // Smaller write requests than sftp's own: bursts far enough apart to beat the window, close enough for a test.
    await server!.upload({ source, targetDir: folders.inbox, remoteName: 'slow.csv', rateKbit: 40, bufferBytes: 65_536 }).finally(() => {
      uploading = false;
    });
    const seen = sizes.stop();
    const pauses = seen.slice(1).map((s, i) => s.at - seen[i]!.at);
    expect(Math.max(...pauses), `sizes seen: ${JSON.stringify(seen)}`).toBeGreaterThan(5000); // the premise: gaps longer than the window
    expect(offers, 'offered while the upload was still running').toEqual([]);

    await waitFor(() => offers.length > 0, 'the offer', 90_000);
    await new Promise((r) => setTimeout(r, 1500)); // a second offer would come within a pass or two
    expect(offers.map((o) => [o.candidate.name, o.candidate.size])).toEqual([['slow.csv', statSync(source).size]]);
    expect(errors).toEqual([]);
    const claimedDir = join(folders.storage, 'claimed');
    expect(readdirSync(claimedDir).map((name) => sha256(readFileSync(join(claimedDir, name))))).toEqual([sha256(readFileSync(source))]);
  }, 150_000);

  it('stopped mid-upload for longer than the window, is not taken while it is stopped, and is offered once, whole', async () => {
    const source = join(folders.base, 'stalled.csv');
    writeFileSync(source, batchOf(1_300_000));
    let uploading = true;
    const { offers, errors } = await watch({ stableForMs: 5000, maxStableForMs: 15_000 }, () => uploading);
    const outcome = await server!
      .upload({
        source,
        targetDir: folders.inbox,
        remoteName: 'stalled.csv',
        rateKbit: 2000,
        stall: { afterMs: 2000, forMs: 12_000 },
      })
      .finally(() => {
        uploading = false;
      });
    expect(outcome.stalledAtBytes, 'the premise: stopped part-way').toBeGreaterThan(0);
    expect(outcome.stalledAtBytes).toBeLessThan(statSync(source).size);
    expect(offers, 'offered while the upload was still running').toEqual([]);

    await waitFor(() => offers.length > 0, 'the offer', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(offers.map((o) => [o.candidate.name, o.candidate.size])).toEqual([['stalled.csv', statSync(source).size]]);
    expect(errors).toEqual([]);
  }, 120_000);
});

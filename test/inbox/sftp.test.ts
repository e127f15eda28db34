/**
 * A real OpenSSH sftp upload into the inbox, slow enough to grow in bursts
 * under its final name. Needs root and openssh-server, so it runs only with
 * PAYOUTD_SFTP_CHECK=1 (uses /work/shared/checks/sftp-upload.sh or SFTP_UPLOAD_SCRIPT).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ClaimedFile, InboxWatcher } from '../../src/ingest/inbox/index.js';
import { type Folders, makeFolders, sha256, waitFor } from './helpers.js';

const script = process.env['SFTP_UPLOAD_SCRIPT'] ?? '/work/shared/checks/sftp-upload.sh';
const enabled = process.env['PAYOUTD_SFTP_CHECK'] === '1' && existsSync(script) && existsSync('/usr/sbin/sshd');

let folders: Folders;
beforeEach(async () => {
  folders = await makeFolders();
});
afterEach(() => folders.cleanup());

describe.skipIf(!enabled)('a real sftp upload', () => {
  it('is claimed whole, after the upload ends, with the real clock', async () => {
    const source = join(folders.base, 'upload.csv');
    const rows = Array.from({ length: 60_000 }, (_, i) => `${i},payee-${i},${i}.25\n`).join('');
    writeFileSync(source, `id,name,amount\n${rows}`);
    const claimed: ClaimedFile[] = [];
    let uploadDone = false;
    const claimedWhileUploading: boolean[] = [];
    const watcher = new InboxWatcher({
      inboxDir: folders.inbox,
      storageDir: folders.storage,
      stableForMs: 2000,
      checkIntervalMs: 100,
      onCandidateReady: async (candidate) => {
        claimedWhileUploading.push(!uploadDone);
        const c = await watcher.claim(candidate);
        if (c !== null) claimed.push(c);
      },
      onRejected: () => undefined,
      onError: (error) => {
        throw error;
      },
    });
    await watcher.start();
    try {
      // ~1.9 MB at 2000 kbit/s: several seconds of growth in bursts (sftp keeps ~2 MB in flight, so smaller files land at once).
      const upload = promisify(execFile)('bash', [script, folders.inbox, source, '2000', 'batch-1.csv']);
      const sizes = new Set<number>();
      const sampler = setInterval(() => {
        const st = statSync(join(folders.inbox, 'batch-1.csv'), { throwIfNoEntry: false });
        if (st !== undefined) sizes.add(st.size);
      }, 50);
      await upload.finally(() => clearInterval(sampler));
      uploadDone = true;
      expect(sizes.size).toBeGreaterThan(2); // it really grew under its final name
      await waitFor(() => claimed.length > 0, 'the claim', 10_000);
    } finally {
      await watcher.stop();
    }
    expect(claimedWhileUploading).toEqual([false]);
    expect(claimed[0]!.originalName).toBe('batch-1.csv');
    expect(claimed[0]!.sha256).toBe(sha256(readFileSync(source)));
  }, 60_000);
});

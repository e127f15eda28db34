/**
 * The README's walkthrough against a sandbox in its own process, as written:
 * `payoutd sandbox --init DIR`, `payoutd sandbox --config DIR/sandbox.json`,
 * then `payoutd run --config DIR/payoutd.yaml` starts, its folders made.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, childEnv, DaemonProcess } from './harness.js';

const run = promisify(execFile);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('e2e: payoutd sandbox --init', () => {
  it('writes a daemon config that `payoutd run` starts with, making its folders', async () => {
    const root = await mkdtemp(join(tmpdir(), 'payoutd-sbx-'));
    const dir = join(root, 'sbx');
    const port = await freePort();
    await run(process.execPath, [BIN, 'sandbox', '--init', dir, '--port', String(port)], { env: childEnv() });
    const sandbox = new DaemonProcess(
      'sandbox',
      spawn(process.execPath, [BIN, 'sandbox', '--config', join(dir, 'sandbox.json')], { env: childEnv(), stdio: 'pipe' }),
    );
    let daemon: DaemonProcess | null = null;
    try {
      await sandbox.waitForLog((l) => String(l.raw ?? '').includes('payout sandbox listening'), 30_000, 'the sandbox listening');
      daemon = new DaemonProcess(
        'daemon',
        spawn(process.execPath, [BIN, 'run', '--config', join(dir, 'payoutd.yaml')], { env: childEnv(), stdio: 'pipe' }),
      );
      await daemon.running();
      for (const folder of ['inbox', 'outbox', 'state']) expect(existsSync(join(dir, 'var', folder)), folder).toBe(true);
      expect(await daemon.stop()).toBe(0);
    } finally {
      if (daemon) await daemon.kill();
      await sandbox.kill();
      await rm(root, { recursive: true, force: true });
    }
  }, 120_000);
});

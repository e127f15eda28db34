/**
 * The start check renames a probe file along each rename payoutd relies on (inbox into the state directory, the
 * approvals folder into it) and exits 78 naming both folders when one fails. EXDEV between two bind mounts of one
 * filesystem is what systemd's ReadWritePaths= and StateDirectory= give: made here in a private mount namespace
 * (`unshare -m`, root), skipped with the reason where that is not permitted. The shipped layout, one mount over
 * the whole tree, takes a file and acknowledges it. And the probes a start that died left are removed by the next.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { chmod, mkdir, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { checkFolders } from '../../src/daemon/startup-checks.js';
import { makeRows, toCsv } from '../e2e/batch-files.js';
import { BIN, childEnv, DaemonProcess, startE2e, waitFor, type E2e } from '../e2e/harness.js';

/** Binds each folder named after the count onto itself, then runs the rest of the arguments in that namespace. */
const BIND_AND_RUN = 'n=$1; shift; while [ "$n" -gt 0 ]; do mount --bind "$1" "$1" || exit 1; shift; n=$((n - 1)); done; exec "$@"';

function bindMountsPermitted(): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-mount-'));
  try {
    return spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', BIND_AND_RUN, 'sh', '1', dir, 'true']).status === 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const permitted = bindMountsPermitted();
if (!permitted) console.warn('test/systemd/mounts: bind mounts skipped: unshare -m and mount --bind are not permitted here (needs root)');

/** `payoutd run` on the world's config with `mounts` each bind-mounted onto itself, as systemd's ReadWritePaths= does. */
function spawnMounted(e2e: E2e, mounts: string[]): DaemonProcess {
  const args = ['-m', '--propagation', 'private', 'sh', '-c', BIND_AND_RUN, 'sh', String(mounts.length), ...mounts];
  const child = spawn('unshare', [...args, process.execPath, BIN, 'run', '--config', e2e.configPath], {
    cwd: e2e.dir,
    env: childEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const daemon = new DaemonProcess('mounted-daemon', child);
  onTestFinished(() => daemon.kill());
  return daemon;
}

async function exitOf(daemon: DaemonProcess): Promise<number | null> {
  const exit = await waitFor(() => daemon.exited, 'the daemon to exit by itself', 20_000);
  // The last lines of its pipes arrive after the exit event.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return exit.code;
}

const probes = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((n) => n.startsWith('.payoutd-rename-check.'));

describe.skipIf(!permitted)('the rename check, on bind mounts of one filesystem', () => {
  it('an inbox mounted apart from the state directory (ReadWritePaths= per folder): exit 78 naming both', async () => {
    const e2e = await startE2e();
    const daemon = spawnMounted(e2e, [e2e.inbox]);
    expect(await exitOf(daemon)).toBe(78);
    expect(daemon.stderr, daemon.transcript()).toEqual([
      `payoutd: FOLDER_CROSS_DEVICE: paths.stateDir: ${e2e.stateDir}/claimed and paths.inbox ${e2e.inbox} are not on one mount ` +
        '(a rename between them fails with EXDEV); files are claimed by a rename: put both under one mount of one filesystem ' +
        '(a bind mount counts as a mount of its own, and so does each ReadWritePaths= and StateDirectory= folder of a systemd unit: ' +
        'give the unit one ReadWritePaths= above both)',
    ]);
    expect(daemon.logs.some((l) => l.msg === 'payoutd running')).toBe(false);
    expect([...(await probes(e2e.inbox)), ...(await probes(join(e2e.stateDir, 'claimed')))]).toEqual([]);
  });

  it('an approvals folder mounted apart, with approval on: exit 78 naming it', async () => {
    const e2e = await startE2e();
    const approvals = join(e2e.dir, 'approvals');
    await mkdir(approvals);
    await chmod(approvals, 0o3770);
    await e2e.writeConfig({ paths: { approvals }, approval: { required: 'always', approvers: { users: ['root'] } } });
    const daemon = spawnMounted(e2e, [approvals]);
    expect(await exitOf(daemon)).toBe(78);
    expect(daemon.stderr, daemon.transcript()).toHaveLength(1);
    expect(daemon.stderr[0]).toContain(
      `FOLDER_CROSS_DEVICE: paths.stateDir: ${e2e.stateDir}/approval-files and paths.approvals ${approvals} are not on one mount`,
    );
    expect(await probes(approvals)).toEqual([]);
  });

  it('the shipped layout, one mount over inbox, outbox and state: a dropped file is taken and acknowledged', async () => {
    const e2e = await startE2e();
    const daemon = spawnMounted(e2e, [e2e.dir]);
    await daemon.running();
    await e2e.drop('mounted.csv', toCsv(makeRows('MNT', 2)));
    const batch = await e2e.waitForBatch('mounted.csv', ['ACTIVE', 'COMPLETE'], 30_000);
    await e2e.waitForOutbox(batch, 'ack');
    expect(await daemon.stop()).toBe(0);
  });
});

describe("the rename check's probe files", () => {
  it('are gone after the check; those a start that died left are removed by the next, a fresh one (another instance checking) is not', () => {
    const dir = mkdtempSync(join(tmpdir(), 'payoutd-probes-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const config = loadConfig({ env: {}, cwd: dir }, { paths: { inbox: 'inbox', outbox: 'outbox', stateDir: 'state' } });
    const claimed = join(dir, 'state', 'claimed');
    for (const d of [config.paths.inbox, config.paths.outbox, claimed]) mkdirSync(d, { recursive: true });
    const now = Date.now();
    const leftover = '.payoutd-rename-check.1234.deadbeef.tmp';
    const fresh = '.payoutd-rename-check.5678.cafebabe.tmp';
    for (const d of [config.paths.inbox, claimed]) {
      writeFileSync(join(d, leftover), '');
      utimesSync(join(d, leftover), new Date(now - 120_000), new Date(now - 120_000));
    }
    writeFileSync(join(config.paths.inbox, fresh), '');
    checkFolders(config, now);
    expect(readdirSync(config.paths.inbox)).toEqual([fresh]);
    expect(readdirSync(claimed)).toEqual([]);
  });
});

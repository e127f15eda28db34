/**
 * The shipped systemd unit stays valid and hardened: `systemd-analyze
 * verify` accepts it and `systemd-analyze security --offline=true` scores
 * its exposure at 2.0 or lower. Skipped, with the reason, where the machine
 * has no systemd-analyze. Every folder the daemon writes in the README's
 * layout (the example config) is writable under ProtectSystem=strict and made
 * by tmpfiles.d, and the folders files are renamed between sit under one
 * ReadWritePaths= entry: each entry is a bind mount, and a rename between two
 * fails (EXDEV). Nothing in the unit sets an option over the config file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { approvalsFolderRisk } from '../../src/approval/index.js';

const UNIT = fileURLToPath(new URL('../../systemd/payoutd.service', import.meta.url));
const available = spawnSync('systemd-analyze', ['--version']).status === 0;
if (!available) console.warn('test/systemd skipped: systemd-analyze is not installed on this machine');

describe.skipIf(!available)('systemd unit', () => {
  it('passes systemd-analyze verify', () => {
    const r = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' });
    expect(r.stderr.split('\n').filter((l) => l.includes('payoutd.service'))).toEqual([]);
    expect(r.status).toBe(0);
  });

  it('scores an overall exposure of 2.0 or lower', () => {
    const out = execFileSync('systemd-analyze', ['security', '--offline=true', UNIT], { encoding: 'utf8' });
    const m = /Overall exposure level for payoutd\.service: (\d+\.\d+)/.exec(out);
    expect(m).not.toBeNull();
    expect(Number(m?.[1])).toBeLessThanOrEqual(2.0);
  });

  it('keeps the settings the README promises', () => {
    const unit = readFileSync(UNIT, 'utf8');
    for (const line of [
      'Type=exec',
      'NoNewPrivileges=yes',
      'CapabilityBoundingSet=',
      'ProtectSystem=strict',
      'PrivateTmp=yes',
      'LogsDirectory=payoutd',
      'LoadCredential=merchant-key:/etc/payoutd/merchant.pem',
      'SystemCallFilter=@system-service',
      // A configuration mistake (exit 78) is not restarted in a loop; an unreachable service (69) is.
      'Restart=on-failure',
      'RestartPreventExitStatus=78',
    ]) {
      expect(unit.split('\n')).toContain(line);
    }
    // V8 aborts under it (nodejs #55509).
    expect(unit).not.toMatch(/^MemoryDenyWriteExecute=yes/m);
  });
});

/** The unit's and tmpfiles.d's folders, read as systemd reads them. */
const read = (file: string): string => readFileSync(fileURLToPath(new URL(`../../systemd/${file}`, import.meta.url)), 'utf8');

describe('the folders the daemon writes, in the README layout', () => {
  // The README's layout: its example config, with approval on (paths.approvals defaults to `approvals` beside the inbox).
  const config = loadConfig(
    { file: fileURLToPath(new URL('../../config/payoutd.example.yaml', import.meta.url)), env: {}, cwd: '/etc/payoutd' },
    { approval: { required: 'always', approvers: { users: ['maria'] } } },
  );
  const unit = read('payoutd.service').split('\n');
  const writable = unit.filter((l) => l.startsWith('ReadWritePaths=')).flatMap((l) => l.slice('ReadWritePaths='.length).split(/\s+/));
  const made = read('payoutd.tmpfiles.conf')
    .split('\n')
    .filter((l) => l.startsWith('d '))
    .map((l) => l.split(/\s+/)[1]);

  /** The ReadWritePaths= entry a folder is under (each entry is a mount of its own), or undefined. */
  const mountOf = (folder: string): string | undefined => writable.find((w) => folder === w || folder.startsWith(`${w}/`));

  it('are writable under ProtectSystem=strict, and made by tmpfiles.d', () => {
    const { inbox, outbox, approvals, stateDir } = config.paths;
    for (const folder of [inbox, outbox, approvals as string, stateDir]) {
      expect(mountOf(folder), folder).toBeDefined();
      expect(made, folder).toContain(folder);
    }
    expect(approvals).toBe('/srv/payoutd/approvals');
    expect(stateDir).toBe('/srv/payoutd/state');
    expect(config.databaseFile.startsWith(`${stateDir}/`)).toBe(true);
  });

  it('put the inbox, the approvals folder and the state directory under one mount: files are taken by renames between them', () => {
    const { inbox, approvals, stateDir } = config.paths;
    expect(mountOf(inbox)).toBe('/srv/payoutd');
    expect(mountOf(approvals as string)).toBe(mountOf(inbox));
    expect(mountOf(stateDir)).toBe(mountOf(inbox));
    // A StateDirectory= would be a bind mount apart from the inbox's.
    expect(unit.filter((l) => l.startsWith('StateDirectory='))).toEqual([]);
  });

  it('set no option over the config file: `payoutd status -c` reads the state the service uses', () => {
    expect(unit.filter((l) => /^Environment=.*PAYOUTD_/.test(l))).toEqual([]);
  });

  it('give the approvals folder a mode payoutd starts with: shared with the SFTP group, sticky', () => {
    const line = read('payoutd.tmpfiles.conf')
      .split('\n')
      .find((l) => l.split(/\s+/)[1] === config.paths.approvals) as string;
    const mode = parseInt(line.split(/\s+/)[2] as string, 8);
    expect(mode & 0o070).toBe(0o070);
    expect(approvalsFolderRisk(config.paths.approvals as string, mode)).toBeNull();
  });
});

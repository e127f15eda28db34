/**
 * E2E: the mistakes an operator makes with `payoutd run --config`, each met
 * by the real process with one line on stderr naming the option and the fix,
 * and the exit code systemd acts on: 78 (EX_CONFIG, not restarted) for a
 * configuration to fix, 69 (EX_UNAVAILABLE, restarted) for a payout service
 * that did not answer within startup.waitForServiceMs. Nothing is said to
 * be running before the checks pass. Then SIGHUP on a running daemon: a
 * typo is refused and the daemon runs on; a new concurrency is applied and
 * the creates on the wire follow it. And a one-shot command next to a
 * running daemon on the embedded sandbox uses the daemon's sandbox.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { mergeDeep } from '../../src/config/load.js';
import { API_PATHS } from '../../src/sandbox/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { makeRows, toCsv } from './batch-files.js';
import { BIN, childEnv, DaemonProcess, startE2e, waitFor, type E2e, type ExitInfo } from './harness.js';

const CREATE = API_PATHS.find((p) => p.endsWith('/fiat-payout/create')) as (typeof API_PATHS)[number];

const servers: Server[] = [];
const mitms: Mitm[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  await Promise.all(mitms.splice(0).map((m) => m.close()));
});

/** A port something listens on (held until the test ends). */
async function busyPort(): Promise<number> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Spawns `payoutd run --config` on the world's config and waits for it to exit on its own. */
async function runToExit(e2e: E2e, timeoutMs = 30_000): Promise<{ daemon: DaemonProcess; exit: ExitInfo }> {
  const daemon = e2e.spawnDaemon();
  const exit = await waitFor(() => daemon.exited, `${daemon.label} to exit by itself`, timeoutMs);
  // The last lines of its pipes arrive after the exit event.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { daemon, exit };
}

/** It said nothing but the one line, started nothing, and no Node stack trace reached either stream. */
function expectOneLine(daemon: DaemonProcess, exit: ExitInfo, code: number, line: string | RegExp): void {
  expect(exit).toEqual({ code, signal: null });
  expect(daemon.stderr, daemon.transcript()).toHaveLength(1);
  if (typeof line === 'string') expect(daemon.stderr[0]).toBe(line);
  else expect(daemon.stderr[0]).toMatch(line);
  expect(daemon.logs.some((l) => l.msg === 'payoutd running')).toBe(false);
  expect(daemon.transcript()).not.toMatch(/^\s+at /m);
}

describe('e2e: start-up checks', () => {
  it('unknown options: named with the nearest valid key, removed ones with what to do; exit 78', async () => {
    const e2e = await startE2e();
    await e2e.writeConfig({ submit: { concurency: 4 } });
    let r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: CONFIG_INVALID: ${e2e.configPath}: submit.concurency: unknown option; did you mean submit.concurrency?`,
    );

    await e2e.writeConfig({ batch: { read: { workers: 2 } } });
    r = await runToExit(e2e);
    expectOneLine(r.daemon, r.exit, 78, /^payoutd: CONFIG_INVALID: .*: batch\.read: removed option: .*; delete it$/);
  });

  it('a range error names the option and the value; exit 78', async () => {
    const e2e = await startE2e();
    await e2e.writeConfig({ metrics: { enabled: true, port: 99999 } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: CONFIG_INVALID: ${e2e.configPath}: metrics.port: must be a port number 1-65535 (or 0 for any free port), got 99999`,
    );
  });

  it('a missing inbox is named, not created (exit 78); with paths.create: true it is made', async () => {
    const e2e = await startE2e();
    const misspelled = join(e2e.dir, 'inbx');
    await e2e.writeConfig({ paths: { inbox: misspelled } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: FOLDER_MISSING: paths.inbox: ${misspelled} does not exist; create it or set paths.create: true`,
    );
    expect(existsSync(misspelled)).toBe(false);

    await e2e.writeConfig({ paths: { inbox: misspelled, create: true } });
    const daemon = await e2e.startDaemon();
    expect(existsSync(misspelled)).toBe(true);
    expect(await daemon.stop()).toBe(0);
  });

  it('an approvals folder others may write in without the sticky bit is refused (exit 78); one it makes has the bit', async () => {
    const e2e = await startE2e();
    const approval = { required: 'always', approvers: { users: ['root'] } };
    const approvals = join(e2e.dir, 'approvals');
    await mkdir(approvals);
    // As an SFTP group's folder without the sticky bit: any member could rename an approver's rejection to .approve.
    await chmod(approvals, 0o2770);
    await e2e.writeConfig({ paths: { approvals }, approval });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: FOLDER_UNSAFE: paths.approvals: ${approvals} (mode 2770) is writable by other users without the sticky bit, ` +
        `so one user can rename or delete another's approval file; set the sticky bit: chmod +t ${approvals} ` +
        '(mode 3770 with the setgid SFTP group, as systemd/payoutd.tmpfiles.conf makes it)',
    );

    await chmod(approvals, 0o3770);
    let daemon = await e2e.startDaemon();
    expect(await daemon.stop()).toBe(0);

    const made = join(e2e.dir, 'made', 'approvals');
    await e2e.writeConfig({ paths: { approvals: made, create: true }, approval });
    daemon = await e2e.startDaemon();
    expect((await stat(made)).mode & 0o1000).toBe(0o1000);
    expect(await daemon.stop()).toBe(0);
  });

  it('a metrics or webhook port in use, or a host not here: one line, exit 78, no stack trace', async () => {
    const e2e = await startE2e();
    const port = await busyPort();
    await e2e.writeConfig({ metrics: { enabled: true, port } });
    let r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: PORT_IN_USE: metrics.port: cannot listen on 127.0.0.1:${port}: EADDRINUSE; another process holds the port: stop it or choose another metrics.port`,
    );

    await e2e.writeConfig({ webhook: { enabled: true, port, secret: 'webhook-secret-0123456789abcdef' } });
    r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      /^payoutd: PORT_IN_USE: webhook\.port: cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE; .* webhook\.port$/,
    );

    // An address this machine does not have (TEST-NET-1) is the host's fault, not the port's.
    await e2e.writeConfig({ metrics: { enabled: true, host: '192.0.2.1', port: 0 } });
    r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      /^payoutd: HOST_NOT_HERE: metrics\.host: cannot listen on 192\.0\.2\.1:0: EADDRNOTAVAIL; this machine has no such address: .*$/,
    );
  });

  it('webhook.secretFile naming an empty file: one line naming the option and the file, exit 78', async () => {
    const e2e = await startE2e();
    const secretFile = join(e2e.dir, 'webhook-secret');
    await writeFile(secretFile, '\n', { mode: 0o600 });
    await e2e.writeConfig({ webhook: { enabled: true, port: 0, secretFile } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      `payoutd: SECRET_EMPTY: webhook.secretFile ${secretFile} is empty (or holds only white space): write the secret into that file, or point webhook.secretFile at the file that holds it`,
    );
  });

  it('an unreachable payout service: retried (said once) for startup.waitForServiceMs, then exit 69; its URL shown without credentials', async () => {
    const e2e = await startE2e();
    const port = await closedPort();
    await e2e.writeConfig({
      api: { baseUrl: `http://gw:GatewayS3cret@127.0.0.1:${port}/gw?token=QueryS3cret`, retry: { maxAttempts: 2, baseMs: 20, maxMs: 50 } },
      startup: { waitForServiceMs: 1500 },
    });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      69,
      `payoutd: SERVICE_UNAVAILABLE: api.baseUrl: the payout service at http://127.0.0.1:${port}/gw did not answer within ` +
        'startup.waitForServiceMs (1500 ms): ECONNREFUSED; check api.baseUrl and the network, or raise startup.waitForServiceMs',
    );
    const waiting = r.daemon.logs.filter((l) => String(l.msg).startsWith('payout service not answering at start'));
    expect(waiting).toHaveLength(1);
    expect(waiting[0]?.level).toBe('warn');
    expect(waiting[0]?.url).toBe(`http://127.0.0.1:${port}/gw`);
    // The user, password and query of a URL may be a gateway's credentials.
    expect(r.daemon.transcript()).not.toMatch(/S3cret/);
  });

  it('an option an environment variable set is said at start by the variable, a secret without its value', async () => {
    const e2e = await startE2e();
    const stateDir = join(e2e.dir, 'state-from-env');
    await mkdir(stateDir);
    const apiKey = (parseYaml(await readFile(e2e.configPath, 'utf8')) as { api: { apiKey: string } }).api.apiKey;
    const env = { ...childEnv(), PAYOUTD_STATE_DIR: stateDir, PAYOUTD_API_KEY: apiKey };
    const child = spawn(process.execPath, [BIN, 'run', '--config', e2e.configPath], {
      cwd: e2e.dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const daemon = new DaemonProcess('env-daemon', child);
    onTestFinished(() => daemon.kill());
    await daemon.running();
    expect(await daemon.stop()).toBe(0);
    const said = daemon.logs.filter((l) => typeof l.variable === 'string');
    expect(said.map(({ level, option, variable, value }) => ({ level, option, variable, value }))).toEqual([
      { level: 'info', option: 'api.apiKey', variable: 'PAYOUTD_API_KEY', value: undefined },
      { level: 'info', option: 'paths.stateDir', variable: 'PAYOUTD_STATE_DIR', value: stateDir },
    ]);
    expect(said[1]?.msg).toBe('paths.stateDir is set by the environment variable PAYOUTD_STATE_DIR, over the config file');
    expect(daemon.transcript()).not.toContain(apiKey);
    expect(existsSync(join(stateDir, 'payoutd.sqlite'))).toBe(true);
  });

  it('a wrong API key: the service refused the credentials; exit 78', async () => {
    const e2e = await startE2e();
    await e2e.writeConfig({ api: { apiKey: 'not-the-merchants-key' } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      /^payoutd: CREDENTIALS_REFUSED: api\.apiKey: the payout service refused the credentials: 1004 \(HTTP 401\) unknown API key; check api\.apiKey /,
    );
    expect(e2e.sandbox.stats().authFailures['1004']).toBe(1);
  });

  it('a clock outside the service window: the refusal says so by the service clock; exit 78', async () => {
    // The service's clock is 10 minutes ahead of this machine's (the sandbox accepts ±300 s).
    const e2e = await startE2e({ sandbox: { clock: { now: () => Date.now() + 600_000 } } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      /^payoutd: CLOCK_SKEW: system clock: this machine's clock is (599|600) s behind the payout service's \(its Date header on refusing the credentials: 1004 \(HTTP 401\) timestamp outside the accepted window\); the service accepts ±300 s \(api\.clockSkewSeconds\): correct the system time/,
    );
  });

  it("a clock the service still accepts but beyond api.clockSkewSeconds: told by the token answer's timestamp; exit 78", async () => {
    // A lenient service (±900 s) whose clock is 400 s behind: it issues credentials, and their timestamp shows the offset.
    const e2e = await startE2e({ sandbox: { clockSkewSeconds: 900, clock: { now: () => Date.now() - 400_000 } } });
    const r = await runToExit(e2e);
    expectOneLine(
      r.daemon,
      r.exit,
      78,
      /^payoutd: CLOCK_SKEW: system clock: this machine's clock is (399|400) s ahead of the payout service's \(its token answer's timestamp\); the service accepts ±300 s/,
    );
    expect(e2e.sandbox.stats().accessTokensIssued).toBe(1);

    // Told the service's real window, it starts.
    await e2e.writeConfig({ api: { clockSkewSeconds: 900 } });
    const daemon = await e2e.startDaemon();
    expect(await daemon.stop()).toBe(0);
  });
});

describe('e2e: SIGHUP', () => {
  /** Replaces the config file with its current content with `change` merged over it. */
  async function editConfig(e2e: E2e, change: Record<string, unknown>): Promise<void> {
    const current = parseYaml(await readFile(e2e.configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(e2e.configPath, toYaml(mergeDeep(current, change)));
  }

  it('a config with a typo is refused with the mistake; the daemon runs on with the running configuration', async () => {
    const e2e = await startE2e();
    const daemon = await e2e.startDaemon();
    const good = await readFile(e2e.configPath, 'utf8');
    await editConfig(e2e, { log: { level: 'warn', levle: 'warn' } });
    process.kill(daemon.pid as number, 'SIGHUP');
    const refused = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: configuration not reloaded'), 5000);
    expect(refused.level).toBe('error');
    expect(refused.msg).toBe(
      `SIGHUP: configuration not reloaded, the running one stays: ${e2e.configPath}: log.levle: unknown option; did you mean log.level?`,
    );
    // Still running, still paying, still at level info (the valid level: warn of the refused file was not taken).
    // (The file is put back for `payoutd status`, which the test reads; the daemon is not told.)
    await writeFile(e2e.configPath, good);
    const before = daemon.logs.length;
    await e2e.drop('after-hup.csv', toCsv(makeRows('HUP-TYPO', 3)));
    expect((await e2e.waitForBatch('after-hup.csv', ['COMPLETE'], 30_000)).counts).toEqual({ PAID: 3 });
    expect(daemon.exited).toBeNull();
    expect(daemon.logs.slice(before).some((l) => l.level === 'info')).toBe(true);
    expect(daemon.logs.some((l) => String(l.msg).includes('SIGHUP: log.level changed'))).toBe(false);
  });

  it('a new submit.concurrency is applied and said; a restart option is named as needing one', async () => {
    const e2e = await startE2e({ sandbox: { faults: { endpoints: [CREATE], latencyMs: 150 } } });
    const mitm = await startMitm(e2e.sandbox.url);
    mitms.push(mitm);
    await e2e.writeConfig({ api: { baseUrl: mitm.url }, submit: { concurrency: 1 } });
    const daemon = await e2e.startDaemon();
    await e2e.drop('one-at-a-time.csv', toCsv(makeRows('HUP-C1', 8)));
    await e2e.waitForBatch('one-at-a-time.csv', ['COMPLETE'], 30_000);
    expect(mitm.peakCreatesInFlight).toBe(1);

    await editConfig(e2e, { submit: { concurrency: 4 }, inbox: { stableForMs: 400 } });
    process.kill(daemon.pid as number, 'SIGHUP');
    const applied = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: submit.concurrency'), 5000);
    expect(applied.msg).toBe('SIGHUP: submit.concurrency changed 1 -> 4: applied');
    const restart = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: inbox.stableForMs'), 5000);
    expect(restart.msg).toBe('SIGHUP: inbox.stableForMs changed: needs a restart');
    expect(daemon.logs.filter((l) => String(l.msg).startsWith('SIGHUP: '))).toHaveLength(2);

    mitm.peakCreatesInFlight = 0;
    await e2e.drop('four-at-a-time.csv', toCsv(makeRows('HUP-C4', 24)));
    await e2e.waitForBatch('four-at-a-time.csv', ['COMPLETE'], 30_000);
    expect(mitm.peakCreatesInFlight).toBeGreaterThan(1);
    expect(mitm.peakCreatesInFlight).toBeLessThanOrEqual(4);
    expect(await daemon.stop()).toBe(0);
  });
});

describe('e2e: one-shot commands next to a running daemon on the embedded sandbox', () => {
  it("`payoutd balance` talks to the daemon's sandbox (one ledger), even on a fixed sandbox.port", async () => {
    const e2e = await startE2e();
    const port = await closedPort();
    await e2e.writeConfig({ api: { baseUrl: 'embedded' }, sandbox: { port, settlementMinDelayMs: 50, settlementMaxDelayMs: 200 } });
    await e2e.startDaemon();
    await e2e.drop('embedded.csv', toCsv(makeRows('EMB', 3)));
    await e2e.waitForBatch('embedded.csv', ['COMPLETE'], 30_000);

    const r = await e2e.cli(['balance', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const { balances } = JSON.parse(r.stdout) as { balances: { currency: string; available: string }[] };
    // The daemon's payouts were debited from the ledger the command read.
    const spent = balances.filter((b) => b.available !== '1000000');
    expect(spent.length).toBeGreaterThan(0);
  });
});

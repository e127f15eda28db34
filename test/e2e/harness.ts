/**
 * End-to-end harness: the real `payoutd run` process (compiled dist/, spawned
 * with node) against the embedded sandbox started in the test process on
 * 127.0.0.1. Each test gets a fresh temp folder holding the merchant key, the
 * YAML config, the inbox, outbox and state directory; it is removed when the
 * test passes and kept (with the daemon logs written into it) when it fails.
 * Every wait polls a condition against a deadline: no fixed sleeps.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseCsv } from 'csv-parse/sync';
import { onTestFinished } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { mergeDeep } from '../../src/config/load.js';
import type { BatchView } from '../../src/cli/commands/status.js';
import { startSandbox, type LedgerEntry, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { generateMerchantKeyPair } from '../../src/signing/index.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'payoutd.js');
const DIST_MAIN = join(ROOT, 'dist', 'cli', 'main.js');

// The tests run the compiled CLI, as systemd would; `npm test` builds first.
if (!existsSync(DIST_MAIN)) {
  throw new Error(`${DIST_MAIN} is missing: the e2e tests run the compiled CLI. Run \`npm run build\` first (\`npm test\` does).`);
}

const run = promisify(execFile);

// ---------------------------------------------------------------- waiting

/**
 * Polls `probe` until it returns a value other than undefined/null/false,
 * and resolves to that value; rejects naming `what` after `timeoutMs`.
 */
export async function waitFor<T>(
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

// ---------------------------------------------------------------- the daemon process

/** One pino JSON line of the daemon (or `{ raw }` for a line that is not JSON). */
export interface LogLine {
  level?: string;
  msg?: string;
  raw?: string;
  [key: string]: unknown;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A spawned `payoutd` process whose stdout/stderr lines are captured. */
export class DaemonProcess {
  /** Parsed stdout lines (pino JSON). */
  readonly logs: LogLine[] = [];
  /** stderr lines (CLI errors). */
  readonly stderr: string[] = [];
  /** Resolves when the process has exited. */
  readonly exit: Promise<ExitInfo>;
  private exitInfo: ExitInfo | null = null;

  constructor(
    readonly label: string,
    private readonly child: ChildProcess,
  ) {
    collectLines(child.stdout, (line) => this.logs.push(parseLogLine(line)));
    collectLines(child.stderr, (line) => this.stderr.push(line));
    this.exit = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** null while running. */
  get exited(): ExitInfo | null {
    return this.exitInfo;
  }

  /** Waits for a log line matching `predicate`; fails early if the process exits first. */
  async waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = 10_000, what = 'a matching log line'): Promise<LogLine> {
    return waitFor(
      () => {
        const found = this.logs.find(predicate);
        if (found) return found;
        if (this.exitInfo) throw new Error(`${this.label} exited (${JSON.stringify(this.exitInfo)}) before logging ${what}`);
        return undefined;
      },
      `${this.label} to log ${what}`,
      timeoutMs,
    );
  }

  /** Waits until the daemon says it is watching the inbox. */
  running(timeoutMs = 60_000): Promise<LogLine> {
    return this.waitForLog((l) => l.msg === 'payoutd running', timeoutMs, '"payoutd running"');
  }

  /** SIGTERM, then waits for the exit; returns the exit code (null if killed by a signal). */
  async stop(timeoutMs = 15_000): Promise<number | null> {
    if (!this.exitInfo) this.child.kill('SIGTERM');
    const info = await waitFor(() => this.exitInfo, `${this.label} to exit after SIGTERM`, timeoutMs, 20);
    return info.code;
  }

  /** SIGKILL (no cleanup in the daemon at all), then waits for the exit. */
  async kill(): Promise<void> {
    if (!this.exitInfo) this.child.kill('SIGKILL');
    await this.exit;
  }

  /** Everything it wrote, for a log file kept after a failure. */
  transcript(): string {
    const out = this.logs.map((l) => (l.raw !== undefined ? l.raw : JSON.stringify(l)));
    return [...out, ...this.stderr.map((l) => `[stderr] ${l}`), `[exit] ${JSON.stringify(this.exitInfo)}`].join('\n') + '\n';
  }
}

function parseLogLine(line: string): LogLine {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as LogLine;
  } catch {
    // Not JSON (a crash trace, a stray print): kept verbatim.
  }
  return { raw: line };
}

function collectLines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (!stream) return;
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    rest += chunk;
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts) if (p.length > 0) onLine(p);
  });
  stream.on('end', () => {
    if (rest.length > 0) onLine(rest);
  });
}

/** The environment of a child: ours minus anything that would override the config file. */
export function childEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('PAYOUTD_') || k === 'CREDENTIALS_DIRECTORY') continue;
    env[k] = v;
  }
  return env;
}

// ---------------------------------------------------------------- outbox and state

/** A batch as `payoutd status --json` shows it. */
export type BatchStatus = BatchView;

export type OutboxKind = 'ack' | 'result' | 'summary';

/** Outbox files are `<batchId>_<dropped name>.<kind>.csv` (src/daemon/outbox.ts). */
export function outboxFileName(batch: Pick<BatchStatus, 'id' | 'fileName'>, kind: OutboxKind): string {
  return `${batch.id}_${batch.fileName}.${kind}.csv`;
}

export interface OutboxCsv {
  /** The file began with the UTF-8 byte order mark. */
  bom: boolean;
  header: string[];
  /** The data rows; for an ack, without the totals lines it starts with (verdict TOTAL), which are in `totals`. */
  rows: Record<string, string>[];
  /** An ack's totals lines (verdict TOTAL): per currency the rows and amount, and the batch's verdict. */
  totals: Record<string, string>[];
  text: string;
}

/** Reads an outbox CSV (BOM stripped, every cell a string). */
export async function readOutboxCsv(path: string): Promise<OutboxCsv> {
  const bytes = await readFile(path);
  const bom = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf;
  const records = parseCsv(bytes, { bom: true, skip_empty_lines: true }) as string[][];
  const [header = [], ...data] = records;
  const all = data.map((cells) => Object.fromEntries(header.map((h, i) => [h, cells[i] ?? ''])));
  const isTotal = (r: Record<string, string>): boolean => header.includes('verdict') && r['verdict'] === 'TOTAL';
  return { bom, header, rows: all.filter((r) => !isTotal(r)), totals: all.filter(isTotal), text: bytes.toString('utf8') };
}

/** Payouts in the ledger per merchantReferenceId. */
export function ledgerByReference(entries: readonly LedgerEntry[]): Map<string, LedgerEntry[]> {
  const by = new Map<string, LedgerEntry[]>();
  for (const e of entries) by.set(e.merchantReferenceId, [...(by.get(e.merchantReferenceId) ?? []), e]);
  return by;
}

// ---------------------------------------------------------------- one test's world

export interface E2eOptions {
  /** Deep-merged over the base daemon config before it is written as YAML. */
  config?: Record<string, unknown>;
  /** Sandbox options besides the merchant (settlement, faults, ...). */
  sandbox?: Omit<SandboxOptions, 'merchants'>;
  /** Opening stablecoin balances of the merchant (decimal text). */
  balances?: Record<string, string>;
  /** Runs the daemon and the CLI as this user, the world's folder given to it (chown: needs root). */
  runAs?: RunAs;
}

export interface RunAs {
  uid: number;
  gid: number;
}

export const MERCHANT_CODE = 'E2E-MERCHANT';
const API_KEY = 'e2e-api-key-0123456789';

/**
 * One test's world: sandbox, temp folder, config file, and the daemon
 * processes started on it. Made by `startE2e`, torn down when the test ends.
 */
export class E2e {
  readonly inbox: string;
  readonly outbox: string;
  readonly stateDir: string;
  readonly configPath: string;
  readonly keyPath: string;
  readonly openingBalances: Record<string, string>;
  private readonly daemons: DaemonProcess[] = [];
  private dropCount = 0;

  constructor(
    readonly dir: string,
    readonly sandbox: SandboxServer,
    balances: Record<string, string>,
    private readonly runAs?: RunAs,
  ) {
    this.inbox = join(dir, 'inbox');
    this.outbox = join(dir, 'outbox');
    this.stateDir = join(dir, 'state');
    this.configPath = join(dir, 'payoutd.yaml');
    this.keyPath = join(dir, 'merchant-key.pem');
    this.openingBalances = { ...balances };
  }

  /** Writes the daemon config: the base settings of the brief, with `overrides` merged over them (to `path`: a second config). */
  async writeConfig(overrides: Record<string, unknown> = {}, path = this.configPath): Promise<void> {
    const base = {
      api: { baseUrl: this.sandbox.url, merchantCode: MERCHANT_CODE, apiKey: API_KEY, privateKeyFile: this.keyPath },
      paths: { inbox: this.inbox, outbox: this.outbox, stateDir: this.stateDir },
      inbox: { stableForMs: 300, rescanIntervalMs: 500 },
      poll: { tickMs: 100, firstPollDelayMs: 200, minIntervalMs: 200, maxIntervalMs: 1000 },
      // Creates the sandbox never took in are sent again within the tests' waits (the default is a minute): a
      // grace no production config may have (the sandbox takes a create in before it answers, or never).
      submit: { notFoundGraceMs: 5000, unsafeShortGrace: true },
      batch: { balanceCheck: { enabled: true } },
      log: { level: 'info' },
    };
    await writeFile(path, toYaml(mergeDeep(base, overrides)), { mode: 0o600 });
  }

  /** Spawns `payoutd run --config <file>` (does not wait for it to be ready). */
  spawnDaemon(configPath = this.configPath): DaemonProcess {
    const label = `daemon-${this.daemons.length + 1}`;
    const child = spawn(process.execPath, [BIN, 'run', '--config', configPath], {
      cwd: this.dir,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...this.runAs,
    });
    const d = new DaemonProcess(label, child);
    this.daemons.push(d);
    return d;
  }

  /** Spawns the daemon and waits until it watches the inbox. */
  async startDaemon(): Promise<DaemonProcess> {
    const d = this.spawnDaemon();
    await d.running();
    return d;
  }

  /** Runs a one-shot CLI command on this config; resolves with its output and exit code (never rejects on exit code). */
  async cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [BIN, ...args, '--config', this.configPath], {
        cwd: this.dir,
        env: childEnv(),
        maxBuffer: 64 * 1024 * 1024,
        ...this.runAs,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: unknown; stdout?: string; stderr?: string };
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  /** Every batch, newest first, from `payoutd status --json`. */
  async batches(): Promise<BatchStatus[]> {
    const r = await this.cli(['status', '--json', '--limit', '1000']);
    if (r.code !== 0) throw new Error(`payoutd status failed (${r.code}): ${r.stderr}`);
    return JSON.parse(r.stdout) as BatchStatus[];
  }

  /** Waits until `pick` finds something in the batch list. Each look is one CLI call, so the interval is generous. */
  waitForBatches<T>(pick: (batches: BatchStatus[]) => T | undefined | null | false, what: string, timeoutMs = 15_000): Promise<T> {
    return waitFor(async () => pick(await this.batches()), what, timeoutMs, 200);
  }

  /** Waits for the batch of a dropped file (the newest of that name whose id is not in `skip`) to be in one of `states`. */
  waitForBatch(fileName: string, states: BatchStatus['state'][], timeoutMs = 15_000, skip: string[] = []): Promise<BatchStatus> {
    return this.waitForBatches(
      (bs) => bs.find((b) => b.fileName === fileName && !skip.includes(b.id) && states.includes(b.state)),
      `a batch of ${fileName} in state ${states.join('/')}`,
      timeoutMs,
    );
  }

  outboxPath(batch: Pick<BatchStatus, 'id' | 'fileName'>, kind: OutboxKind): string {
    return join(this.outbox, outboxFileName(batch, kind));
  }

  /** Waits for an outbox file of the batch, then reads it. */
  async waitForOutbox(batch: Pick<BatchStatus, 'id' | 'fileName'>, kind: OutboxKind, timeoutMs = 15_000): Promise<OutboxCsv> {
    const path = this.outboxPath(batch, kind);
    await waitFor(() => existsSync(path), `outbox file ${outboxFileName(batch, kind)}`, timeoutMs);
    return readOutboxCsv(path);
  }

  /** Names in the outbox (temp files of atomic writes excluded). */
  async outboxNames(): Promise<string[]> {
    return (await readdir(this.outbox).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
  }

  /**
   * Drops a file into the inbox the way a careful sender does: written
   * elsewhere, then renamed in, so the daemon never sees it half-written.
   */
  async drop(name: string, content: string | Uint8Array): Promise<void> {
    const staging = join(this.dir, 'staging');
    await mkdir(staging, { recursive: true });
    const tmp = join(staging, `${++this.dropCount}-${name}`);
    await writeFile(tmp, content);
    await rename(tmp, join(this.inbox, name));
  }

  ledger(): LedgerEntry[] {
    return this.sandbox.ledger();
  }

  balances(): Record<string, string> {
    return this.sandbox.balances(MERCHANT_CODE);
  }

  /** Kills what is still running, closes the sandbox, and removes the folder unless the test failed. */
  async finish(failed: boolean): Promise<void> {
    await Promise.all(this.daemons.map((d) => d.kill()));
    await this.sandbox.close();
    if (failed) {
      await Promise.all(this.daemons.map((d) => writeFile(join(this.dir, `${d.label}.log`), d.transcript())));
      console.error(`e2e: test failed; its folder is kept at ${this.dir} (daemon logs in daemon-N.log)`);
      return;
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Starts the sandbox (real HTTP, port 0, fast settlement) with a merchant
 * whose key pair is made here, writes the key (PKCS#8, 0600) and the config
 * into a fresh temp folder, and registers the teardown with the running test.
 */
export async function startE2e(options: E2eOptions = {}): Promise<E2e> {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-e2e-'));
  const keys = generateMerchantKeyPair(2048);
  const balances = options.balances ?? { USDT: '1000000', USDC: '1000000' };
  const sandbox = await startSandbox({
    settlement: { minDelayMs: 100, maxDelayMs: 600 },
    ...options.sandbox,
    merchants: [{ merchantCode: MERCHANT_CODE, apiKey: API_KEY, publicKey: keys.publicKeyBase64, balances }],
  });
  const e2e = new E2e(dir, sandbox, balances, options.runAs);
  onTestFinished((ctx) => e2e.finish(ctx.task.result?.state === 'fail'));
  await writeFile(e2e.keyPath, keys.privateKeyPem, { mode: 0o600 });
  for (const d of [e2e.inbox, e2e.outbox, e2e.stateDir]) await mkdir(d, { recursive: true });
  await e2e.writeConfig(options.config);
  if (options.runAs) await run('chown', ['-R', `${options.runAs.uid}:${options.runAs.gid}`, dir]);
  return e2e;
}

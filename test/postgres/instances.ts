/**
 * Several `payoutd run` processes on one e2e world (test/e2e/harness.ts):
 * one sandbox, one inbox and outbox, one PostgreSQL schema, and per
 * instance its own config file, instance id and state directory — all in the
 * world's temp folder, so on one filesystem as claims by rename require.
 * The world's own config file points at the same schema, so `e2e.cli` and
 * `e2e.batches()` see what the instances share. Processes are killed when
 * the test ends; their logs are written into the kept folder on failure.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, readFile, rename, utimes, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { onTestFinished } from 'vitest';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { mergeDeep } from '../../src/config/load.js';
import { BIN, DaemonProcess, childEnv, startE2e, type E2e, type LogLine } from '../e2e/harness.js';
import type { PgSchema } from './pg.js';

const run = promisify(execFile);

export class Instances {
  private readonly configs = new Map<string, string>();
  private readonly processes: DaemonProcess[] = [];

  constructor(
    readonly e2e: E2e,
    readonly schema: PgSchema,
  ) {}

  /** The state directory of instance `name` (beside the inbox, in the world's folder). */
  stateDir(name: string): string {
    return join(this.e2e.dir, `state-${name}`);
  }

  /** Writes `<dir>/<name>.yaml`: the world's config with this instance's id and state directory, `overrides` merged last. */
  async configure(name: string, overrides: Record<string, unknown> = {}): Promise<string> {
    const base: unknown = parseYaml(await readFile(this.e2e.configPath, 'utf8'));
    const own = { paths: { stateDir: this.stateDir(name) }, instance: { id: name } };
    // A config file's folders must exist (paths.create is off with a file).
    await mkdir(this.stateDir(name), { recursive: true });
    const path = join(this.e2e.dir, `${name}.yaml`);
    await writeFile(path, toYaml(mergeDeep(mergeDeep(base, own), overrides)), { mode: 0o600 });
    this.configs.set(name, path);
    return path;
  }

  configPath(name: string): string {
    const path = this.configs.get(name);
    if (!path) throw new Error(`instance ${name} has no config yet: call configure('${name}') first`);
    return path;
  }

  /** Spawns `payoutd run` for instance `name` (does not wait for it to be ready). */
  spawn(name: string): DaemonProcess {
    const child = spawn(process.execPath, [BIN, 'run', '--config', this.configPath(name)], {
      cwd: this.e2e.dir,
      env: childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const d = new DaemonProcess(name, child);
    this.processes.push(d);
    return d;
  }

  /** Spawns and waits until it watches the inbox. */
  async start(name: string): Promise<DaemonProcess> {
    const d = this.spawn(name);
    await d.running(30_000);
    return d;
  }

  /** Runs a one-shot CLI command with instance `name`'s config; never rejects on the exit code. */
  async cli(name: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [BIN, ...args, '--config', this.configPath(name)], {
        cwd: this.e2e.dir,
        env: childEnv(),
        maxBuffer: 64 * 1024 * 1024,
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: unknown; stdout?: string; stderr?: string };
      if (typeof e.code !== 'number') throw err;
      return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  /** Every process spawned, in order. */
  all(): readonly DaemonProcess[] {
    return this.processes;
  }

  /** Log lines of every process whose msg starts with `prefix`, each with the instance that wrote it. */
  logs(prefix: string): { instance: string; line: LogLine }[] {
    return this.processes.flatMap((d) =>
      d.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix)).map((line) => ({ instance: d.label, line })),
    );
  }

  /**
   * Kills what still runs; on failure writes each transcript as
   * `<name>-<n>.log` into the kept folder, and into PAYOUTD_TEST_LOG_DIR
   * when set (a folder outside the temp area, for runs where /tmp is swept).
   */
  async finish(failed: boolean): Promise<void> {
    await Promise.all(this.processes.map((d) => d.kill()));
    if (!failed) return;
    const dirs = [
      this.e2e.dir,
      ...(process.env.PAYOUTD_TEST_LOG_DIR ? [join(process.env.PAYOUTD_TEST_LOG_DIR, basename(this.e2e.dir))] : []),
    ];
    for (const dir of dirs) {
      await mkdir(dir, { recursive: true });
      await Promise.all(this.processes.map((d, i) => writeFile(join(dir, `${d.label}-${i + 1}.log`), d.transcript())));
    }
    console.error(`postgres: instance logs written to ${dirs.join(' and ')}`);
  }
}

let drops = 0;

/**
 * Drops a file into the world's inbox as a careful sender does (written
 * beside it, then renamed in), with its mtime set to `mtimeSeconds` (default:
 * now, in whole seconds). Whole seconds work around a bug: a fractional
 * mtime cannot be stored in the bigint batches.mtime_ms on PostgreSQL
 * (fractional-mtime.test.ts).
 */
export async function dropFile(e2e: E2e, name: string, content: string, mtimeSeconds = Math.floor(Date.now() / 1000)): Promise<void> {
  const staging = join(e2e.dir, 'staging');
  await mkdir(staging, { recursive: true });
  const tmp = join(staging, `pg-${++drops}-${name}`);
  await writeFile(tmp, content);
  await utimes(tmp, mtimeSeconds, mtimeSeconds);
  await rename(tmp, join(e2e.inbox, name));
}

/**
 * Points the world at the schema (its config file gets `database.client: pg`
 * and the schema's URL, plus `shared`, which every instance inherits) and
 * registers the teardown, which runs before the world's own.
 */
export async function startInstances(e2e: E2e, schema: PgSchema, shared: Record<string, unknown> = {}): Promise<Instances> {
  await e2e.writeConfig(mergeDeep({ database: { client: 'pg', url: schema.url } }, shared) as Record<string, unknown>);
  const instances = new Instances(e2e, schema);
  // onTestFinished hooks run in reverse order of registration: this one before startE2e's, while the folder still exists.
  onTestFinished((ctx) => instances.finish(ctx.task.result?.state === 'fail' && !ctx.task.fails));
  return instances;
}

/** A world whose instances hold leases of `leaseMs` (short: the tests wait for one to run out), instance `name` configured, the schema migrated. */
export async function startShortLease(schema: PgSchema, name: string, leaseMs: number): Promise<{ e2e: E2e; instances: Instances }> {
  const e2e = await startE2e();
  const instances = await startInstances(e2e, schema, {
    inbox: { stableForMs: 200, rescanIntervalMs: 300 },
    instance: { leaseMs },
    api: { timeoutMs: leaseMs / 2 - 100 }, // under half the lease (config refuses more)
  });
  await instances.configure(name);
  const migrated = await instances.cli(name, ['migrate']);
  if (migrated.code !== 0) throw new Error(`payoutd migrate failed (${migrated.code}): ${migrated.stderr}`);
  return { e2e, instances };
}

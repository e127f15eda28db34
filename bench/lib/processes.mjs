// The processes of a bench run: each scenario script in a process group of its
// own (so a failed scenario takes its sandbox and daemon with it), the payoutd
// CLI of this checkout (run, sandbox, migrate, status), and what /proc says of
// a process (CPU time, peak RSS).
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';

export { sleep };

export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const ROOT = resolve(BENCH_DIR, '..');
const BIN = join(ROOT, 'bin', 'payoutd.js');

export const now = () => performance.now();

/** Exits with a word on what to do when this checkout has no build. */
export function checkBuild() {
  if (existsSync(join(ROOT, 'dist', 'cli', 'main.js'))) return;
  console.error(`${join(ROOT, 'dist')} is missing or incomplete: run \`npm run build\` first`);
  process.exit(2);
}

/** A documented module of the build (src/<area>/index.ts compiled to dist/), e.g. dist('api'). */
export function dist(area) {
  return import(pathToFileURL(join(ROOT, 'dist', area, 'index.js')).href);
}

/** Polls `probe` until it returns a truthy value; throws naming `what` after timeoutMs. */
export async function waitFor(probe, what, timeoutMs, intervalMs = 50) {
  const deadline = now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** CPU time (user + system) a live process has used so far, in ms. */
export function cpuMsOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name (which may hold spaces) start after its closing parenthesis.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * 10; // utime + stime, in ticks of 10 ms
}

/** Peak resident set size (VmHWM) of a live process, in MB. */
export function peakRssMb(pid = 'self') {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Math.round(Number(m[1]) / 102.4) / 10;
}

/**
 * Runs bench/scenarios/<script> in a new process group, its parameters as
 * JSON; the script writes its result as JSON to params.resultFile.
 */
export async function runScenario(script, params, timeoutMs) {
  const resultFile = join(params.workDir, `${script}-${Date.now()}.result.json`);
  const child = spawn(process.execPath, [join(BENCH_DIR, 'scenarios', script), JSON.stringify({ ...params, resultFile })], {
    stdio: ['ignore', 'inherit', 'pipe'],
    detached: true,
  });
  const stderr = [];
  createInterface({ input: child.stderr }).on('line', (line) => {
    stderr.push(line);
    process.stderr.write(`  [${script}] ${line}\n`);
  });
  const timer = setTimeout(() => killGroup(child.pid), timeoutMs);
  const code = await new Promise((done) => child.once('exit', (c, signal) => done(c ?? signal)));
  clearTimeout(timer);
  killGroup(child.pid); // whatever the scenario left running (a sandbox, a daemon) goes with its group
  if (code !== 0 || !existsSync(resultFile)) throw new Error(`${script} failed (exit ${code}): ${stderr.slice(-5).join(' | ')}`);
  const result = JSON.parse(readFileSync(resultFile, 'utf8'));
  unlinkSync(resultFile);
  return result;
}

function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is gone already: nothing left to stop.
  }
}

/** Node options for the daemon (`payoutd run`) only, e.g. BENCH_DAEMON_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const DAEMON_NODE_ARGS = (process.env.BENCH_DAEMON_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

/** A running `payoutd <args>` process; its stdout lines are kept (the last 2,000) and logged to <cwd>/<command>.log. */
export class PayoutdProcess {
  constructor(args, cwd) {
    this.startedAt = now();
    this.lines = [];
    this.stderr = [];
    this.exitInfo = null;
    const nodeArgs = args[0] === 'run' ? DAEMON_NODE_ARGS : [];
    this.child = spawn(process.execPath, [...nodeArgs, BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    this.exited = new Promise((done) =>
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        done(this.exitInfo);
      }),
    );
    const log = createWriteStream(join(cwd, `${args[0]}.log`), { flags: 'a' });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      log.write(`${line}\n`);
      this.lines.push({ at: now(), line });
      if (this.lines.length > 2000) this.lines.shift();
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => this.stderr.push(line));
  }

  get pid() {
    return this.child.pid;
  }

  /** Waits for a stdout line matching `re`; fails early when the process exits. */
  waitForLine(re, timeoutMs) {
    return waitFor(
      () => {
        const hit = this.lines.find((l) => re.test(l.line));
        if (hit) return hit;
        if (this.exitInfo) throw new Error(`payoutd exited (${JSON.stringify(this.exitInfo)}): ${this.stderr.slice(-5).join(' | ')}`);
        return null;
      },
      String(re),
      timeoutMs,
      10,
    );
  }

  /** SIGTERM (a graceful stop) and wait for the exit; SIGKILL after 30 s. */
  async stop() {
    if (this.exitInfo) return this.exitInfo;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 30_000);
    const info = await this.exited;
    clearTimeout(timer);
    return info;
  }
}

/** Runs a payoutd command to completion; resolves with its wall time and stdout, rejects on a non-zero exit. */
export function runPayoutd(args, cwd) {
  return new Promise((done, fail) => {
    const started = now();
    const child = spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.once('error', fail);
    child.once('exit', (code) => {
      const wallMs = now() - started;
      if (code !== 0) fail(new Error(`payoutd ${args[0]} exited ${code}: ${Buffer.concat(err).toString('utf8').slice(0, 500)}`));
      else done({ wallMs, stdout: Buffer.concat(out).toString('utf8') });
    });
  });
}

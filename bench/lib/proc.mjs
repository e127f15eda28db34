// Child processes of the bench: scenario scripts (each in its own process
// group, so a failed scenario takes its sandbox and daemon with it), the
// payoutd CLI (daemon, sandbox, status), optional --cpu-prof, and the peak
// RSS of a process read from /proc before it exits.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, existsSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { BENCH_DIR, binPath, now, peakRssMb, waitFor } from './common.mjs';

/** node flags that write a CPU profile into `dir` when the process exits. */
export function cpuProfFlags(dir, name) {
  if (!dir) return [];
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`];
}

/**
 * Runs bench/scenarios/<script> in a new process group with its parameters
 * as JSON; the script writes its result as JSON to params.resultFile.
 */
export async function runScenarioScript(script, params, { timeoutMs, nodeFlags = [] }) {
  const resultFile = join(params.workDir, `${script.replace(/\W/g, '_')}-${Date.now()}.result.json`);
  const child = spawn(process.execPath, [...nodeFlags, join(BENCH_DIR, 'scenarios', script), JSON.stringify({ ...params, resultFile })], {
    stdio: ['ignore', 'inherit', 'pipe'],
    detached: true,
  });
  const stderr = [];
  createInterface({ input: child.stderr }).on('line', (l) => {
    stderr.push(l);
    if (stderr.length > 200) stderr.shift();
    process.stderr.write(`  [${script}] ${l}\n`);
  });
  const started = now();
  const exit = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const timer = setTimeout(() => killGroup(child.pid), timeoutMs);
  const { code, signal } = await exit;
  clearTimeout(timer);
  // Anything the scenario left running (a sandbox, a daemon) goes with its group.
  killGroup(child.pid);
  const wallMs = now() - started;
  if (code !== 0 || !existsSync(resultFile)) {
    throw new Error(
      `${script} failed (exit ${code ?? signal}${wallMs >= timeoutMs ? `, killed after ${timeoutMs} ms` : ''}): ${stderr.slice(-5).join(' | ')}`,
    );
  }
  const result = JSON.parse(readFileSync(resultFile, 'utf8'));
  unlinkSync(resultFile);
  return result;
}

function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone: nothing left to stop.
  }
}

/**
 * A running payoutd process (run or sandbox) whose stdout lines are kept
 * (the last `keep` of them) and offered to `onLine`.
 */
export class PayoutdProcess {
  constructor(root, args, { cwd, nodeFlags = [], keep = 2000, onLine, env, logFile } = {}) {
    this.startedAt = now();
    this.lines = [];
    this.stderr = [];
    this.child = spawn(process.execPath, [...nodeFlags, binPath(root), ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exitInfo = null;
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal, at: now() };
        resolve(this.exitInfo);
      }),
    );
    // Every line also goes to logFile when given (kept with the work dir by --keep).
    const log = logFile ? createWriteStream(logFile, { flags: 'a' }) : null;
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      log?.write(`${line}\n`);
      const at = now();
      this.lines.push({ at, line });
      if (this.lines.length > keep) this.lines.shift();
      onLine?.(line, at);
    });
    createInterface({ input: this.child.stderr }).on('line', (line) => {
      this.stderr.push(line);
      if (this.stderr.length > 100) this.stderr.shift();
    });
  }

  get pid() {
    return this.child.pid;
  }

  peakRssMb() {
    return peakRssMb(this.child.pid);
  }

  /** Waits for a stdout line matching `re`; fails early when the process exits. */
  async waitForLine(re, timeoutMs, what = String(re)) {
    return waitFor(
      () => {
        const hit = this.lines.find((l) => re.test(l.line));
        if (hit) return hit;
        if (this.exitInfo)
          throw new Error(`process exited (${JSON.stringify(this.exitInfo)}) before ${what}: ${this.stderr.slice(-5).join(' | ')}`);
        return null;
      },
      what,
      timeoutMs,
      10,
    );
  }

  /** SIGTERM and wait (graceful stop; a CPU profile is written on the way out). */
  async stop(timeoutMs = 30_000) {
    if (this.exitInfo) return this.exitInfo;
    const asked = now();
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const info = await this.exited;
    clearTimeout(timer);
    return { ...info, stopMs: info.at - asked };
  }
}

/** Runs a payoutd CLI command to completion; returns wall time and output. */
export function runPayoutd(root, args, { cwd, nodeFlags = [] } = {}) {
  return new Promise((resolve, reject) => {
    const started = now();
    const child = spawn(process.execPath, [...nodeFlags, binPath(root), ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.once('error', reject);
    child.once('exit', (code) => {
      const wallMs = now() - started;
      const stdout = Buffer.concat(out).toString('utf8');
      const stderr = Buffer.concat(err).toString('utf8');
      if (code !== 0) reject(new Error(`payoutd ${args[0]} exited ${code}: ${stderr.slice(0, 500)}`));
      else resolve({ wallMs, stdout, stderr });
    });
  });
}

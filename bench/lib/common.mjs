// Shared helpers of the benchmark scripts: where the build under test is
// (--root, default the checkout holding bench/), importing its dist/ modules,
// small timing and file helpers. Plain Node ESM: benches run against the
// compiled dist/, never the TypeScript sources.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';

export { sleep, performance };

/** The checkout that holds this bench/ folder. */
export const BENCH_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_ROOT = resolve(BENCH_DIR, '..');

/** A build to measure: its root must hold dist/ (npm run build) and bin/payoutd.js. */
export function checkRoot(root) {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run \`npm run build\` in ${root} first`);
  return root;
}

/** Imports a compiled module of the build under test, e.g. dist('store/db.js'). */
export function dist(root, rel) {
  return import(pathToFileURL(join(root, 'dist', rel)).href);
}

export function binPath(root) {
  return join(root, 'bin', 'payoutd.js');
}

export const now = () => performance.now();

export function round(x, digits = 1) {
  if (x === null || x === undefined || Number.isNaN(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Peak resident set size (VmHWM) of a live process, in MB; null when it is gone. */
export function peakRssMb(pid = 'self') {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? round(Number.parseInt(m[1], 10) / 1024, 1) : null;
  } catch {
    return null; // the process already exited: nothing to read
  }
}

function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start after the last ')'.
  return stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map((f) => Number.parseInt(f, 10));
}

/** CPU time (user + system) a live process has used so far, in ms; null when it is gone. */
export function cpuMsOf(pid) {
  try {
    const f = statFields(pid);
    return ((f[11] ?? 0) + (f[12] ?? 0)) * 10; // USER_HZ is 100 on Linux
  } catch {
    return null; // the process already exited
  }
}

/** CPU time (user + system) of this process's children that have exited and been waited for, in ms. */
export function childrenCpuMs() {
  const f = statFields('self');
  return ((f[13] ?? 0) + (f[14] ?? 0)) * 10;
}

/** Polls `probe` until it returns a truthy value; throws naming `what` after timeoutMs. */
export async function waitFor(probe, what, timeoutMs, intervalMs = 50) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/** Runs `worker(i)` for i in [0, n) with `concurrency` workers; resolves when all are done. */
export async function forEachConcurrent(n, concurrency, worker) {
  let next = 0;
  const run = async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      await worker(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, run));
}

/** Of items run back to back, the one whose `value(item)` is the median (the lower middle one of an even count). */
export function medianBy(items, value) {
  return [...items].sort((a, b) => value(a) - value(b))[(items.length - 1) >> 1];
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

#!/usr/bin/env node
/**
 * `npm run chaos -- --iterations N --seed S [--runs R] [--rows N] [--stop SIGKILL|SIGTERM]`
 *
 * The long chaos run: R seeded runs (seeds S, S+1, …) of test/chaos/runner.ts,
 * each stopping the daemon N times. The runner is TypeScript and needs the
 * sandbox and harness from the tests, so it runs through vitest
 * (test/chaos/long.test.ts, driven by CHAOS_* variables); this script only
 * turns options into those variables and prints one line per seed at the
 * end: "seed S: PASS …" or "seed S: FAIL …" with what broke. Exit code 1 if
 * any seed failed. `npm run chaos` builds first (the daemon runs from dist/).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFlags } from './lib/flags.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const values = parseFlags(
  {
    iterations: { type: 'string', default: '12' },
    seed: { type: 'string' },
    runs: { type: 'string', default: '1' },
    rows: { type: 'string', default: '300' },
    stop: { type: 'string', default: 'SIGKILL' },
  },
  'usage: npm run chaos -- [--iterations N] [--seed S] [--runs R] [--rows N] [--stop SIGKILL|SIGTERM]',
);
for (const name of ['iterations', 'runs', 'rows', ...(values.seed === undefined ? [] : ['seed'])]) {
  if (!/^\d+$/.test(values[name])) {
    console.error(`Expected \`--${name}\` to be a whole number, got ${JSON.stringify(values[name])}`);
    process.exit(2);
  }
}
if (values.stop !== 'SIGKILL' && values.stop !== 'SIGTERM') {
  console.error(`Expected \`--stop\` to be SIGKILL or SIGTERM, got ${JSON.stringify(values.stop)}`);
  process.exit(2);
}

const seed = values.seed ?? String(Math.floor(Math.random() * 1_000_000));
const dir = mkdtempSync(join(tmpdir(), 'payoutd-chaos-'));
const report = join(dir, 'report.txt');
console.log(
  `chaos: seeds ${seed}..${Number(seed) + Number(values.runs) - 1}, ${values.iterations} stops by ${values.stop}, ${values.rows} rows each`,
);
const run = spawnSync(process.execPath, [join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', 'test/chaos/long.test.ts'], {
  cwd: root,
  stdio: 'inherit',
  env: {
    ...process.env,
    CHAOS_SEED: seed,
    CHAOS_ITERATIONS: values.iterations,
    CHAOS_RUNS: values.runs,
    CHAOS_ROWS: values.rows,
    CHAOS_STOP: values.stop,
    CHAOS_REPORT: report,
  },
});
let lines = [];
try {
  lines = readFileSync(report, 'utf8').trim().split('\n').filter(Boolean);
} catch {
  // No report: vitest failed before any run finished; its own output says why.
}
rmSync(dir, { recursive: true, force: true });
console.log('\n---- chaos verdicts ----');
for (const line of lines) console.log(line);
if (lines.length === 0) console.log('no run finished (see the vitest output above)');
process.exit(run.status === 0 && lines.length > 0 ? 0 : 1);

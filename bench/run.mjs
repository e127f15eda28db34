#!/usr/bin/env node
// `npm run bench`: measures payoutd against the limits it must not be the
// bottleneck of — csv-parse alone, C/L, a minimal create loop, the fewest
// query calls, the poll interval, a few seconds to restart — each figure
// beside its limit taken in the same run. Every scenario runs in its own
// process tree on this machine (the sandbox and the daemon in processes of
// their own) against the compiled dist/ of --root (default this checkout;
// `npm run build` first). Prints a table and writes bench/out/results-<date>.json.
// With --profile, scenarios that miss their target run again under
// `node --cpu-prof` and their profiles are summarized (--profile-all: every
// scenario).
//
//   npm run bench -- --help   lists the options (USAGE below).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem, tmpdir, release } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BENCH_DIR, DEFAULT_ROOT, checkRoot, medianBy, now, round } from './lib/common.mjs';
import { runScenarioScript, cpuProfFlags } from './lib/proc.mjs';
import { formatSummary, summarizeFile } from './lib/profile.mjs';
import { evaluate, formatTable } from './lib/report.mjs';

const SCENARIOS = ['ingest', 'submit', 'follow', 'restart', 'status'];

const USAGE = `usage: npm run bench -- [--only ingest,submit,follow,restart,status] [--quick] [--profile | --profile-all]
                     [--root DIR] [--out DIR] [--keep] [--label TEXT]
                     [--ingest-rows N] [--submit-rows N] [--latency MS] [--concurrency C]
                     [--submit-max-seconds S] [--submit-warmup N] [--loop-rows N] [--zero-pairs N] [--ingest-pairs N]
                     [--follow-rows N] [--settle-after-ms MS]
                     [--follow-max-seconds S] [--restart-rows N] [--unfinished N]
(docs/performance.md, "How to run it")`;

const { values: flags } = parseOptions({
  options: {
    help: { type: 'boolean', default: false },
    only: { type: 'string' },
    root: { type: 'string' },
    out: { type: 'string' },
    label: { type: 'string' },
    quick: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    'profile-all': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    'ingest-rows': { type: 'string' },
    'submit-rows': { type: 'string' },
    latency: { type: 'string' },
    concurrency: { type: 'string' },
    'submit-max-seconds': { type: 'string' },
    'submit-warmup': { type: 'string' },
    'loop-rows': { type: 'string' },
    'zero-pairs': { type: 'string' },
    'ingest-pairs': { type: 'string' },
    'follow-rows': { type: 'string' },
    'settle-after-ms': { type: 'string' },
    'follow-max-seconds': { type: 'string' },
    'restart-rows': { type: 'string' },
    unfinished: { type: 'string' },
  },
  strict: true,
});
if (flags.help) {
  console.log(USAGE);
  process.exit(0);
}

/** parseArgs, with a usage line instead of a stack trace for an option it does not know. */
function parseOptions(config) {
  try {
    return parseArgs(config);
  } catch (err) {
    console.error(`${err.message}\n${USAGE}`);
    process.exit(2);
  }
}

function intFlag(name, full, quick) {
  const v = flags[name];
  if (v === undefined) return flags.quick ? quick : full;
  if (!/^\d+$/.test(v)) throw new Error(`--${name} must be a whole number, got ${JSON.stringify(v)}`);
  return Number.parseInt(v, 10);
}

const only = flags.only ? flags.only.split(',').map((s) => s.trim()) : SCENARIOS;
for (const s of only) if (!SCENARIOS.includes(s)) throw new Error(`--only: unknown scenario ${s} (one of ${SCENARIOS.join(', ')})`);
const root = checkRoot(resolve(flags.root ?? DEFAULT_ROOT));
const outDir = resolve(flags.out ?? join(BENCH_DIR, 'out'));
const params = {
  ingestRows: intFlag('ingest-rows', 1_000_000, 100_000),
  submitRows: intFlag('submit-rows', 20_000, 3_000),
  latencyMs: intFlag('latency', 50, 50),
  concurrency: intFlag('concurrency', 64, 64),
  submitMaxSeconds: intFlag('submit-max-seconds', 40, 20),
  // Creates made first and not measured, by the daemon and the loop alike (see bench/scenarios/submit.mjs).
  submitWarmup: intFlag('submit-warmup', 5_000, 1_000),
  // As many creates as the daemon's run (capped by it): a shorter loop moved more between runs.
  loopRows: intFlag('loop-rows', 20_000, 3_000),
  // Loop and daemon at L = 0, back to back, this many times (the median pair is reported). Five, not three:
  // single ratios of one build spread widely, and medians of three still moved.
  zeroPairs: Math.max(1, intFlag('zero-pairs', 5, 1)),
  ingestPairs: Math.max(1, intFlag('ingest-pairs', 3, 1)),
  followRows: intFlag('follow-rows', 100_000, 10_000),
  settleAfterMs: intFlag('settle-after-ms', 15_000, 8_000),
  followMaxSeconds: intFlag('follow-max-seconds', 150, 60),
  restartRows: intFlag('restart-rows', 1_000_000, 100_000),
  unfinished: intFlag('unfinished', 10_000, 10_000),
};
const stamp = new Date()
  .toISOString()
  .replace(/:/g, '-')
  .replace(/\.\d+Z$/, '');
const workDir = mkdtempSync(join(tmpdir(), 'payoutd-bench-'));
mkdirSync(outDir, { recursive: true });

function git(args) {
  try {
    return execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null; // not a git checkout (a snapshot): the label says what was measured
  }
}

const build = {
  root,
  commit: git(['rev-parse', '--short', 'HEAD']),
  uncommittedSrc: git(['status', '--porcelain', '--', 'src']) || null,
  label: flags.label ?? null,
};
const machine = {
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  memoryGb: round(totalmem() / 2 ** 30, 1),
  node: process.version,
  kernel: release(),
};

const log = (msg) => process.stdout.write(`${msg}\n`);
log(
  `payoutd bench: ${only.join(', ')} against ${root}${build.commit ? ` (${build.commit}${build.uncommittedSrc ? ', src has uncommitted changes' : ''})` : ''}`,
);
log(`work dir ${workDir}; ${machine.cores} x ${machine.cpu}, node ${machine.node}`);

/** Of pairs run back to back ({ ratio, … }), the one with the median ratio. */
function medianPair(pairs) {
  return medianBy(pairs, (p) => p.ratio);
}

/**
 * An L = 0 pair's ratio with the machine's speed taken out: each half's rate times the sandbox's CPU per
 * create in that half. The sandbox does the same work for every create in both halves, so its CPU per create
 * is how fast the machine ran then (the raw ratio followed it); the product is how busy each side kept the
 * payout service.
 * null when either half lacks the sandbox's CPU.
 */
function atOneSpeed(loop, daemon) {
  const l = loop.sandboxCpuMsPerCreate;
  const d = daemon.sandboxCpuMsPerCreate;
  return l && d ? (daemon.perSecond * d) / (loop.perSecond * l) : null;
}

/** Scenario runs; each returns its raw results (with cpuProfDir, the processes that matter write profiles). */
const runners = {
  async ingest(cpuProfDir) {
    const file = join(workDir, `batch-${params.ingestRows}.csv`);
    const genStarted = now();
    const gen = spawnSync(
      process.execPath,
      [join(root, 'samples', 'generate-batch.mjs'), '--rows', String(params.ingestRows), '--out', file],
      {
        stdio: 'inherit',
      },
    );
    if (gen.status !== 0) throw new Error('samples/generate-batch.mjs failed');
    const generateMs = now() - genStarted;
    const common = { root, workDir, file, rows: params.ingestRows };
    const timeoutMs = 20 * 60_000;
    // As at L = 0: csv-parse alone and the intake are both bound by CPU on a machine whose speed drifts
    // from minute to minute, so one of each is a coin toss near the target. They run in pairs, back to back,
    // and the pair with the median ratio is the one reported (every pair is kept in the JSON). The peak RSS
    // reported is the highest of all the intakes: the budget must hold in every run.
    const pairs = [];
    for (let i = 0; i < params.ingestPairs; i++) {
      const baseline = await runScenarioScript('ingest-baseline.mjs', common, { timeoutMs });
      const intake = await runScenarioScript('ingest-intake.mjs', common, {
        timeoutMs,
        nodeFlags: i === 0 ? cpuProfFlags(cpuProfDir, 'ingest-intake') : [],
      });
      pairs.push({ baseline, intake, ratio: intake.rowsPerSecond / baseline.rowsPerSecond });
      log(
        `  pair ${i + 1} of ${params.ingestPairs}: csv-parse alone ${Math.round(baseline.rowsPerSecond)} rows/s, ` +
          `intake ${Math.round(intake.rowsPerSecond)} rows/s, ack ${Math.round(intake.ackMs)} ms after the claim, peak RSS ${intake.peakRssMb} MB`,
      );
    }
    const { baseline, intake } = medianPair(pairs);
    const peakRssMb = Math.max(...pairs.map((p) => p.intake.peakRssMb));
    const ackMs = Math.max(...pairs.map((p) => p.intake.ackMs));
    rmSync(file, { force: true });
    return { generateMs, baseline, intake, pairs, peakRssMb, ackMs };
  },
  async submit(cpuProfDir, parts = ['latency', 'loop', 'zero']) {
    const common = {
      root,
      workDir,
      rows: params.submitRows,
      concurrency: params.concurrency,
      maxSeconds: params.submitMaxSeconds,
      warmupRows: params.submitWarmup,
      cpuProfDir,
    };
    const timeoutMs = 10 * 60_000;
    const r = {};
    if (parts.includes('latency')) {
      r.daemonLatency = await runScenarioScript('submit.mjs', { ...common, mode: 'daemon', latencyMs: params.latencyMs }, { timeoutMs });
      log(`  daemon, L=${params.latencyMs} ms: ${Math.round(r.daemonLatency.perSecond)} creates/s`);
    }
    const loop = { ...common, rows: Math.min(params.submitRows, params.loopRows), cpuProfDir: undefined, mode: 'loop' };
    if (parts.includes('loop')) {
      r.loopLatency = await runScenarioScript('submit.mjs', { ...loop, latencyMs: params.latencyMs }, { timeoutMs });
      log(`  minimal create loop, L=${params.latencyMs} ms: ${Math.round(r.loopLatency.perSecond)} creates/s`);
    }
    if (parts.includes('loop') && parts.includes('zero')) {
      // At L = 0 both the loop and the daemon are bound by CPU on a machine whose speed drifts within
      // minutes, so one of each is a coin toss near any target: they run in pairs, back to back, and the pair
      // with the median ratio is the one reported (every pair is kept in the JSON).
      r.zeroPairs = [];
      for (let i = 0; i < params.zeroPairs; i++) {
        const l = await runScenarioScript('submit.mjs', { ...loop, latencyMs: 0 }, { timeoutMs });
        const d = await runScenarioScript('submit.mjs', { ...common, mode: 'daemon', latencyMs: 0 }, { timeoutMs });
        const pair = { loop: l, daemon: d, ratio: d.perSecond / l.perSecond, atOneSpeed: atOneSpeed(l, d) };
        r.zeroPairs.push(pair);
        const speed = pair.atOneSpeed === null ? '' : `, at one machine speed ${round(pair.atOneSpeed, 3)}`;
        log(
          `  L=0, pair ${i + 1} of ${params.zeroPairs}: loop ${Math.round(l.perSecond)}, daemon ${Math.round(d.perSecond)} creates/s ` +
            `(ratio ${round(pair.ratio, 3)}${speed})`,
        );
      }
      const median = medianPair(r.zeroPairs);
      r.loop = median.loop;
      r.daemonZero = median.daemon;
    } else if (parts.includes('zero')) {
      r.daemonZero = await runScenarioScript('submit.mjs', { ...common, mode: 'daemon', latencyMs: 0 }, { timeoutMs });
      log(`  daemon, L=0: ${Math.round(r.daemonZero.perSecond)} creates/s`);
    }
    return r;
  },
  async follow(cpuProfDir) {
    const r = await runScenarioScript(
      'follow.mjs',
      { root, workDir, rows: params.followRows, settleAfterMs: params.settleAfterMs, maxSeconds: params.followMaxSeconds, cpuProfDir },
      { timeoutMs: 15 * 60_000 },
    );
    log(
      `  first cycle ${r.firstCycle.calls} calls (minimum ${r.firstCycle.minimumCalls}); result file ${r.resultFileMs ?? '-'} ms after the last settlement`,
    );
    return r;
  },
  async restart(cpuProfDir, what = { restart: true, status: only.includes('status') }) {
    const r = await runScenarioScript(
      'restart.mjs',
      { root, workDir, rows: params.restartRows, unfinished: params.unfinished, ...what, cpuProfDir },
      { timeoutMs: 15 * 60_000 },
    );
    if (r.restart) log(`  restart: first call ${Math.round(r.restart.firstCallMs)} ms after spawn`);
    if (r.status) log(`  status: ${Math.round(r.status.medianMs)} ms`);
    return r;
  },
};

const results = {};
const errors = {};
const started = now();
// Other work on the machine skews every figure: the highest 1-minute load average is kept per scenario.
const load = { current: null, max: {} };
const sampler = setInterval(() => {
  if (load.current) load.max[load.current] = Math.max(load.max[load.current] ?? 0, round(loadavg()[0], 2));
}, 2000);
sampler.unref();
const order = ['ingest', 'submit', 'follow', 'restart'];
for (const name of order) {
  const wanted = name === 'restart' ? only.includes('restart') || only.includes('status') : only.includes(name);
  if (!wanted) continue;
  log(`${name}…`);
  load.current = name;
  load.max[name] = round(loadavg()[0], 2);
  const t = now();
  try {
    results[name] =
      name === 'restart'
        ? await runners.restart(undefined, { restart: only.includes('restart'), status: only.includes('status') })
        : await runners[name](undefined);
  } catch (err) {
    errors[name] = String(err.message ?? err);
    log(`  FAILED: ${errors[name]}`);
  }
  log(`  (${Math.round((now() - t) / 1000)} s)`);
}

load.current = null;
const table = evaluate(results, params);
log('');
log(formatTable(table));
log(
  `\nhighest 1-min load average: ${Object.entries(load.max)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')} (${machine.cores} cores; the bench itself keeps about 2 busy: more means other processes competed)`,
);

// Profiles of the scenarios that missed a target.
const profiles = [];
if (flags.profile || flags['profile-all']) {
  const missed = new Map();
  for (const row of table)
    if (row.pass === false || (flags['profile-all'] && row.pass !== null))
      missed.set(row.scenario, [...(missed.get(row.scenario) ?? []), row.key]);
  for (const [scenario, keys] of missed) {
    const dir = join(outDir, `profiles-${stamp}`, scenario);
    const failed = table.filter((r) => r.scenario === scenario && r.pass === false).map((r) => r.key);
    log(`profiling ${scenario} (${failed.length > 0 ? `missed: ${failed.join(', ')}` : 'targets met'})…`);
    try {
      if (scenario === 'submit') {
        await runners.submit(
          dir,
          [keys.includes('submitLatency') ? 'latency' : null, keys.includes('submitZero') ? 'zero' : null].filter(Boolean),
        );
      } else if (scenario === 'restart' || scenario === 'status') {
        await runners.restart(dir, { restart: scenario === 'restart', status: scenario === 'status' });
      } else {
        await runners[scenario](dir);
      }
      for (const f of readdirSync(dir).filter((n) => n.endsWith('.cpuprofile'))) {
        const summary = summarizeFile(join(dir, f));
        profiles.push({
          scenario,
          file: join(dir, f),
          summary: { ...summary, self: summary.self.slice(0, 40), ownInclusive: summary.ownInclusive.slice(0, 40) },
        });
        log(formatSummary(f, summary, 12));
      }
    } catch (err) {
      log(`  profiling ${scenario} failed: ${err.message}`);
    }
  }
}

const report = {
  date: new Date().toISOString(),
  durationS: Math.round((now() - started) / 1000),
  machine,
  build,
  params,
  only,
  loadMax1m: load.max,
  results,
  errors,
  table,
  profiles,
};
const outFile = join(outDir, `results-${stamp}.json`);
writeFileSync(outFile, `${JSON.stringify(report, null, 2)}\n`);
if (profiles.length > 0) {
  writeFileSync(
    join(outDir, `profiles-${stamp}.md`),
    profiles.map((p) => formatSummary(`${p.scenario}: ${p.file}`, p.summary, 25)).join('\n\n'),
  );
}
log(`\nwrote ${outFile} (${report.durationS} s)`);
if (!flags.keep) rmSync(workDir, { recursive: true, force: true });
else log(`kept ${workDir}`);
process.exitCode = Object.keys(errors).length > 0 ? 1 : 0;

// Restart and status on a big state database: R payout rows in batches of
// 100,000 (all final but the last batch), U of them unfinished (READY,
// PENDING, UNKNOWN and CREATING, as a crash leaves them), built directly
// by raw SQL. Restart: time from spawning `payoutd run` to its first call
// to the service (resuming work), to "payoutd running", and to its first
// create. Status: wall time of `payoutd status` on the same database.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { childrenCpuMs, cpuMsOf, now, sleep } from '../lib/common.mjs';
import { createSchema, createdColumns, finishBulk, insertBatch, insertPaidRowsSql, insertPayouts, openBulk } from '../lib/dbbuild.mjs';
import {
  createdAnswer,
  daemonPaths,
  payoutRequest,
  storedRequestForm,
  writeDaemonConfig,
  writeLedgerFile,
  writeMerchantFiles,
} from '../lib/fixtures.mjs';
import { cpuProfFlags, PayoutdProcess, runPayoutd } from '../lib/proc.mjs';
import { CREATE_PATH, QUERY_PATH, SandboxProcess } from '../lib/sandbox.mjs';

const params = JSON.parse(process.argv[2]);
const { root, workDir, rows, unfinished, restart, status } = params;
const BATCH_ROWS = 100_000;
const dir = join(workDir, 'restart');
rmSync(dir, { recursive: true, force: true }); // a re-run (--profile) starts afresh
const merchant = await writeMerchantFiles(root, dir);
const requestForm = await storedRequestForm(root);

// Unfinished rows, as a crash leaves them (all in the last batch): mostly
// waiting to be created or settled, some with a create in flight or unknown.
const mix = [
  ['READY', 0.6],
  ['PENDING', 0.25],
  ['UNKNOWN', 0.1],
  ['CREATING', 0.05],
];
const unfinishedState = (j) => {
  let acc = 0;
  for (const [state, share] of mix) {
    acc += share * unfinished;
    if (j < acc) return state;
  }
  return 'READY';
};

const built = now();
const { databaseFile, stateDir } = daemonPaths(dir);
await createSchema(root, databaseFile);
const raw = openBulk(root, databaseFile);
const t0 = Date.now() - 3_600_000;
const batches = Math.max(1, Math.ceil(rows / BATCH_ROWS));
const pendingAtService = [];
let global = 0;
for (let b = 0; b < batches; b++) {
  const n = Math.min(BATCH_ROWS, rows - b * BATCH_ROWS);
  const last = b === batches - 1;
  const firstUnfinished = last ? n - Math.min(unfinished, n) : n;
  const at = t0 + b * 60_000;
  const id = `BRESTART-${String(b).padStart(4, '0')}`;
  insertBatch(
    raw,
    last && unfinished > 0
      ? { id, fileName: `batch-${b}.csv`, state: 'ACTIVE', rows: n, at }
      : { id, fileName: `batch-${b}.csv`, state: 'COMPLETE', rows: n, at, finalCounts: { PAID: n } },
    join(stateDir, 'claimed'),
  );
  const base = global;
  // Final rows in bulk inside SQLite; the unfinished ones one by one (their states differ).
  insertPaidRowsSql(raw, id, firstUnfinished, { base, at, prefix: 'RST' });
  insertPayouts(
    raw,
    id,
    n - firstUnfinished,
    (j) => {
      const i = firstUnfinished + j;
      const k = base + i;
      const request = payoutRequest('RST', k, { hold: true });
      const answer = createdAnswer(k);
      const common = {
        line: i + 2,
        merchant_reference_id: request.merchantReferenceId,
        request: requestForm.text(request),
        updated_at: at,
      };
      const state = unfinishedState(j);
      if (state === 'PENDING') {
        pendingAtService.push({ request, answer });
        return { ...common, ...createdColumns(answer, at), state, next_poll_at: at + 2000 };
      }
      if (state === 'READY') return { ...common, state, next_attempt_at: at };
      if (state === 'UNKNOWN') return { ...common, state, create_attempts: 1, unknown_since: at, next_attempt_at: at };
      return { ...common, state, create_attempts: 1 }; // CREATING: the create was on the wire when the process died
    },
    (_j, row) => (row.state === 'READY' ? [] : [{ at, event: 'intent', from_state: 'READY', to_state: 'CREATING' }]),
  );
  global += n;
}
finishBulk(raw);
const buildMs = now() - built;

// The service knows the PENDING payouts (held, so they stay PENDING); the unknown creates never reached it.
const sandbox = await SandboxProcess.start(root, dir, merchant, { stateFile: writeLedgerFile(dir, pendingAtService, t0) });
const config = writeDaemonConfig(dir, merchant, sandbox.url);
const result = { rows, unfinished, batches, buildMs, pendingAtService: pendingAtService.length };
try {
  if (restart) result.restart = await measureRestart();
  if (status) result.status = await measureStatus();
} finally {
  await sandbox.stop();
}
writeFileSync(params.resultFile, JSON.stringify(result));

async function measureRestart() {
  const before = await sandbox.stats();
  const calls = (s) => (s.requests[QUERY_PATH] ?? 0) + (s.requests[CREATE_PATH] ?? 0);
  const proc = new PayoutdProcess(root, ['run', '--config', config.file], {
    cwd: dir,
    logFile: join(dir, 'daemon.log'),
    nodeFlags: cpuProfFlags(params.cpuProfDir, 'restart-daemon'),
  });
  const spawned = proc.startedAt;
  let firstCallAt = null;
  let firstCallCpuMs = null;
  let firstCreateAt = null;
  let peakRssMb = null;
  let stopped = null;
  try {
    const deadline = now() + 60_000;
    while ((firstCallAt === null || firstCreateAt === null) && now() < deadline && !proc.exitInfo) {
      const s = await sandbox.stats();
      const t = now();
      if (firstCallAt === null && calls(s) > calls(before)) {
        firstCallAt = t;
        firstCallCpuMs = cpuMsOf(proc.pid);
      }
      if (firstCreateAt === null && (s.requests[CREATE_PATH] ?? 0) > (before.requests[CREATE_PATH] ?? 0)) firstCreateAt = t;
      await sleep(10);
    }
  } finally {
    peakRssMb = proc.peakRssMb();
    stopped = await proc.stop();
  }
  const running = proc.lines.find((l) => l.line.includes('"payoutd running"'));
  if (firstCallAt === null) throw new Error(`the daemon made no call within 60 s: ${proc.stderr.slice(-3).join(' | ')}`);
  return {
    firstCallMs: firstCallAt - spawned,
    cpuMsToFirstCall: firstCallCpuMs,
    runningMs: running ? running.at - spawned : null,
    firstCreateMs: firstCreateAt === null ? null : firstCreateAt - spawned,
    peakRssMb,
    stopMs: stopped.stopMs,
  };
}

async function measureStatus() {
  const runs = [];
  const cpu = [];
  let out = '';
  for (let i = 0; i < 3; i++) {
    const cpuBefore = childrenCpuMs();
    const r = await runPayoutd(root, ['status', '--config', config.file], {
      cwd: dir,
      nodeFlags: i === 0 ? cpuProfFlags(params.cpuProfDir, 'status') : [],
    });
    runs.push(r.wallMs);
    cpu.push(childrenCpuMs() - cpuBefore);
    out = r.stdout;
  }
  // Every row built is in the counts shown (the finished batches' from their records): none missed, none twice.
  const shown = [...out.matchAll(/\b[A-Z_]+=(\d+)\b/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  if (shown !== rows) throw new Error(`payoutd status showed ${shown} rows in its counts, the database holds ${rows}`);
  const median = (xs) => [...xs].sort((a, b) => a - b)[1];
  return { runsMs: runs, medianMs: median(runs), cpuMs: cpu, medianCpuMs: median(cpu), outputLines: out.trim().split('\n').length };
}

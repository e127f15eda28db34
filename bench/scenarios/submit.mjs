// Submit: creates against the sandbox (its own process) with added latency
// L per call. mode 'daemon': the real `payoutd run` process (concurrency C)
// on a state database holding one accepted batch of READY rows; the rate is
// taken from the daemon's own history (first intent to last recorded
// create). mode 'loop': the minimal signed-create loop — the build's
// PayoutApiClient.createPayout with C workers and no database.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMsOf, now, sleep } from '../lib/common.mjs';
import { createSchema, finishBulk, insertBatch, insertPayouts, openBulk, openRaw } from '../lib/dbbuild.mjs';
import { checkRequestJson, payoutRequest, requestJson, writeDaemonConfig, writeMerchantFiles } from '../lib/fixtures.mjs';
import { cpuProfFlags, PayoutdProcess } from '../lib/proc.mjs';
import { SandboxProcess, createLoop } from '../lib/sandbox.mjs';

const params = JSON.parse(process.argv[2]);
const { root, workDir, rows, latencyMs, concurrency, mode, maxSeconds } = params;
const dir = join(workDir, `submit-${mode}-L${latencyMs}`);
rmSync(dir, { recursive: true, force: true }); // a re-run (--profile) starts afresh
const merchant = await writeMerchantFiles(root, dir);
const sandbox = await SandboxProcess.start(root, dir, merchant, { latencyMs });
let result;
try {
  result = mode === 'loop' ? await loop() : await daemon();
} finally {
  await sandbox.stop();
}
writeFileSync(params.resultFile, JSON.stringify(result));

async function loop() {
  const { timing } = await createLoop(root, sandbox.url, merchant, {
    n: rows,
    concurrency,
    prefix: `LOOP${latencyMs}`,
    sandboxPid: sandbox.proc.pid,
  });
  return { mode, latencyMs, ...timing };
}

async function daemon() {
  await checkRequestJson(root);
  const config = writeDaemonConfig(dir, merchant, sandbox.url, { submit: { concurrency } });
  await createSchema(root, config.databaseFile);
  const raw = openBulk(root, config.databaseFile);
  const at = Date.now();
  const batchId = 'BSUBMIT-0001';
  insertBatch(raw, { id: batchId, state: 'ACTIVE', rows, at }, join(config.stateDir, 'claimed'));
  insertPayouts(raw, batchId, rows, (i) => {
    const request = payoutRequest(`SUB${latencyMs}`, i);
    return {
      merchant_reference_id: request.merchantReferenceId,
      state: 'READY',
      request_json: requestJson(request),
      payout_currency: request.payoutCurrency,
      payout_amount: request.payoutAmount,
      deduction_currency: request.deductionCurrency,
      next_attempt_at: at,
      updated_at: at,
    };
  });
  finishBulk(raw);

  const proc = new PayoutdProcess(root, ['run', '--config', config.file], {
    cwd: dir,
    logFile: join(dir, 'daemon.log'),
    nodeFlags: cpuProfFlags(params.cpuProfDir, `submit-daemon-L${latencyMs}`),
  });
  const started = now();
  let stats = null;
  let peakRssMb = null;
  let stopped = null;
  let cpu = null;
  try {
    await proc.waitForLine(/"payoutd running"/, 60_000, 'the daemon to start');
    const cpuAtStart = { daemon: cpuMsOf(proc.pid), sandbox: cpuMsOf(sandbox.proc.pid) };
    // Bounded: a slow build is measured on the first part of the batch instead of holding up the suite.
    const deadline = now() + maxSeconds * 1000;
    for (;;) {
      stats = await sandbox.stats();
      if (stats.creates >= rows || stats.internalErrors > 0 || now() > deadline || proc.exitInfo) break;
      await sleep(100);
    }
    cpu = {
      daemonMs: cpuMsOf(proc.pid) - cpuAtStart.daemon,
      sandboxMs: cpuMsOf(sandbox.proc.pid) - cpuAtStart.sandbox,
      creates: stats.creates,
    };
  } finally {
    peakRssMb = proc.peakRssMb();
    stopped = await proc.stop();
  }
  const wallMs = now() - started;

  const db = openRaw(root, config.databaseFile, { readonly: true });
  const first = db.prepare("SELECT min(at) AS t FROM payout_history WHERE event = 'intent'").get().t;
  const last = db.prepare("SELECT max(at) AS t, count(*) AS n FROM payout_history WHERE event = 'created'").get();
  const failures = db
    .prepare("SELECT event, count(*) AS n FROM payout_history WHERE event NOT IN ('intent', 'created', 'polled', 'settled') GROUP BY event")
    .all();
  db.close();
  const ms = last.t - first;
  return {
    mode,
    latencyMs,
    concurrency,
    n: rows,
    created: last.n,
    sandboxCreates: stats.creates,
    ms,
    perSecond: (last.n / ms) * 1000,
    otherEvents: failures,
    sandboxQueries: stats.requests['/apis/v1/fiat-payout/query'] ?? 0,
    daemonCpuMsPerCreate: cpu && cpu.creates > 0 ? cpu.daemonMs / cpu.creates : null,
    sandboxCpuMsPerCreate: cpu && cpu.creates > 0 ? cpu.sandboxMs / cpu.creates : null,
    complete: last.n >= rows,
    wallMs,
    stopMs: stopped.stopMs,
    peakRssMb,
  };
}

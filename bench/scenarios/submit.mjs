// Submit: creates against the sandbox (its own process) with added latency
// L per call. mode 'daemon': the real `payoutd run` process (concurrency C)
// on a state database holding one accepted batch of READY rows; the rate is
// taken from the daemon's own history (first intent to last recorded
// create). mode 'loop': the minimal signed-create loop — the build's
// PayoutApiClient.createPayout with C workers and no database.
// Both first make `warmupRows` creates that are not measured (the daemon: an
// earlier batch it sends first; the loop: creates before its clock starts):
// a fresh process runs its first few thousand creates in V8's unoptimized
// tiers, at half the rate it keeps for the months it runs, and the daemon has
// more code to warm than the loop. The warm-up batch's own rate is kept in
// the JSON (`warmup`) as the cold-start figure.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMsOf, now, sleep } from '../lib/common.mjs';
import { createSchema, finishBulk, insertBatch, insertPayouts, openBulk, openRaw } from '../lib/dbbuild.mjs';
import { payoutRequest, storedRequestForm, writeDaemonConfig, writeMerchantFiles } from '../lib/fixtures.mjs';
import { cpuProfFlags, PayoutdProcess } from '../lib/proc.mjs';
import { SandboxProcess, createLoop } from '../lib/sandbox.mjs';

const params = JSON.parse(process.argv[2]);
const { root, workDir, rows, latencyMs, concurrency, mode, maxSeconds, warmupRows = 0 } = params;
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
    warmup: warmupRows,
  });
  return { mode, latencyMs, warmupRows, ...timing };
}

async function daemon() {
  const requestForm = await storedRequestForm(root);
  const config = writeDaemonConfig(dir, merchant, sandbox.url, { submit: { concurrency } });
  await createSchema(root, config.databaseFile);
  const raw = openBulk(root, config.databaseFile);
  const at = Date.now();
  const batchId = 'BSUBMIT-0001';
  const warmupBatchId = 'BSUBMIT-0000';
  // Claims take the oldest batch first: the warm-up batch (received a second earlier) goes out first.
  const batches = [
    { id: warmupBatchId, rows: warmupRows, receivedAt: at - 1000, prefix: `SUBW${latencyMs}` },
    { id: batchId, rows, receivedAt: at, prefix: `SUB${latencyMs}` },
  ].filter((b) => b.rows > 0);
  for (const b of batches) {
    insertBatch(raw, { id: b.id, state: 'ACTIVE', rows: b.rows, at: b.receivedAt }, join(config.stateDir, 'claimed'));
    insertPayouts(raw, b.id, b.rows, (i) => {
      const request = payoutRequest(b.prefix, i);
      return {
        merchant_reference_id: request.merchantReferenceId,
        state: 'READY',
        request: requestForm.text(request),
        next_attempt_at: at,
        updated_at: at,
      };
    });
  }
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
    // CPU is counted from the end of the warm-up (the sandbox's count of creates, read every 100 ms).
    let cpuFrom = warmupRows > 0 ? null : { daemon: cpuMsOf(proc.pid), sandbox: cpuMsOf(sandbox.proc.pid), creates: 0 };
    // Bounded: a slow build is measured on the first part of the batch instead of holding up the suite.
    const deadline = now() + (maxSeconds + warmupRows / 500) * 1000;
    for (;;) {
      stats = await sandbox.stats();
      if (cpuFrom === null && stats.creates >= warmupRows)
        cpuFrom = { daemon: cpuMsOf(proc.pid), sandbox: cpuMsOf(sandbox.proc.pid), creates: stats.creates };
      if (stats.creates >= warmupRows + rows || stats.internalErrors > 0 || now() > deadline || proc.exitInfo) break;
      await sleep(100);
    }
    if (cpuFrom !== null)
      cpu = {
        daemonMs: cpuMsOf(proc.pid) - cpuFrom.daemon,
        sandboxMs: cpuMsOf(sandbox.proc.pid) - cpuFrom.sandbox,
        creates: stats.creates - cpuFrom.creates,
      };
  } finally {
    peakRssMb = proc.peakRssMb();
    stopped = await proc.stop();
  }
  const wallMs = now() - started;

  const db = openRaw(root, config.databaseFile, { readonly: true });
  // From the first intent to the last recorded create of one batch's rows.
  const span = (id) =>
    db
      .prepare(
        `SELECT min(CASE WHEN h.event = 'intent' THEN h.at END) AS first, max(CASE WHEN h.event = 'created' THEN h.at END) AS last,
                sum(h.event = 'created') AS n
           FROM payout_history h JOIN payouts p ON p.id = h.payout_row_id WHERE p.batch_id = ?`,
      )
      .get(id);
  const measured = span(batchId);
  const warm = warmupRows > 0 ? span(warmupBatchId) : null;
  const failures = db
    .prepare("SELECT event, count(*) AS n FROM payout_history WHERE event NOT IN ('intent', 'created', 'polled', 'settled') GROUP BY event")
    .all();
  db.close();
  const first = measured.first;
  const last = { t: measured.last, n: measured.n ?? 0 };
  const ms = last.t - first;
  return {
    mode,
    latencyMs,
    concurrency,
    n: rows,
    warmupRows,
    // The cold start: the warm-up batch, from the process's first intent to its last create.
    warmup:
      warm && warm.n > 0 ? { created: warm.n, ms: warm.last - warm.first, perSecond: (warm.n / (warm.last - warm.first)) * 1000 } : null,
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

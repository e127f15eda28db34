// Follow: N payouts PENDING at the service (the sandbox, its own process,
// started from a ledger file) and in the daemon's database (one accepted
// batch). The real `payoutd run` polls them; the sandbox settles all of them
// at one known time (settlement delay D after it loaded). Measured from the
// daemon's own history: query calls of the first poll cycle (until every
// payout was asked about once) against ceil(N / ids per call), and the time
// from the last settlement to the result file, against the poll interval
// the daemon had scheduled for those payouts when they settled.
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuMsOf, forEachConcurrent, now, sleep } from '../lib/common.mjs';
import { createSchema, createdColumns, finishBulk, insertBatch, insertPayouts, openBulk, openRaw } from '../lib/dbbuild.mjs';
import {
  createdAnswer,
  daemonPaths,
  payoutRequest,
  storedRequestForm,
  writeDaemonConfig,
  writeLedgerFile,
  writeMerchantFiles,
} from '../lib/fixtures.mjs';
import { cpuProfFlags, PayoutdProcess } from '../lib/proc.mjs';
import { QUERY_PATH, SandboxProcess, apiClient } from '../lib/sandbox.mjs';

const params = JSON.parse(process.argv[2]);
const { root, workDir, rows, settleAfterMs, maxSeconds } = params;
const QUERY_MAX_IDS = 100;
const POLL = { tickMs: 1000, firstPollDelayMs: 2000, minIntervalMs: 2000, maxIntervalMs: 300_000 };

const dir = join(workDir, 'follow');
rmSync(dir, { recursive: true, force: true }); // a re-run (--profile) starts afresh
const merchant = await writeMerchantFiles(root, dir);
const requestForm = await storedRequestForm(root);
const at = Date.now();
const items = Array.from({ length: rows }, (_, i) => ({ request: payoutRequest('FOL', i), answer: createdAnswer(i) }));
const ledgerFile = writeLedgerFile(dir, items, at);

// The daemon's side: the same payouts, created a moment ago, due for their first poll.
const { databaseFile, stateDir } = daemonPaths(dir);
await createSchema(root, databaseFile);
const raw = openBulk(root, databaseFile);
const batchId = 'BFOLLOW-0001';
insertBatch(raw, { id: batchId, fileName: 'follow.csv', state: 'ACTIVE', rows, at }, join(stateDir, 'claimed'));
insertPayouts(
  raw,
  batchId,
  rows,
  (i) => {
    const { request, answer } = items[i];
    return {
      merchant_reference_id: request.merchantReferenceId,
      state: 'PENDING',
      request: requestForm.text(request),
      ...createdColumns(answer, at),
      next_poll_at: at,
      updated_at: at,
    };
  },
  () => [
    { at, event: 'intent', from_state: 'READY', to_state: 'CREATING' },
    { at, event: 'created', from_state: 'CREATING', to_state: 'PENDING', outcome: 'PENDING' },
  ],
);
finishBulk(raw);
items.length = 0;

// Every payout settles D after the sandbox loaded its ledger: one known moment while the daemon polls.
const sandbox = await SandboxProcess.start(root, dir, merchant, {
  stateFile: ledgerFile,
  settlement: { minDelayMs: settleAfterMs, maxDelayMs: settleAfterMs },
});
const config = writeDaemonConfig(dir, merchant, sandbox.url, { poll: POLL, api: { queryMaxIds: QUERY_MAX_IDS } });
let resultLine = null;
const proc = new PayoutdProcess(root, ['run', '--config', config.file], {
  cwd: dir,
  logFile: join(dir, 'daemon.log'),
  nodeFlags: cpuProfFlags(params.cpuProfDir, 'follow-daemon'),
  onLine: (line) => {
    if (line.includes('"batch complete: result file written"')) resultLine = JSON.parse(line);
  },
});
const started = now();
let peakRssMb = null;
let stopped = null;
let daemonCpuMs = null;
try {
  await proc.waitForLine(/"payoutd running"/, 60_000, 'the daemon to start');
  const deadline = started + maxSeconds * 1000;
  while (!resultLine && now() < deadline && !proc.exitInfo) await sleep(100);
} finally {
  daemonCpuMs = cpuMsOf(proc.pid);
  peakRssMb = proc.peakRssMb();
  stopped = await proc.stop();
}
const timedOut = !resultLine;
const stats = await sandbox.stats();
// Reference: the same query calls with no database, one at a time (as the poller makes them) and 4 at a time.
const queryLoop = await measureQueryLoop();
const ledger = await sandbox.admin('GET', '/__sandbox/ledger');
await sandbox.stop();
const completeTimes = ledger.payouts.filter((p) => p.completeTime).map((p) => Date.parse(p.completeTime));
const lastSettledAt = completeTimes.length > 0 ? completeTimes.reduce((a, b) => Math.max(a, b)) : null;
const firstSettledAt = completeTimes.length > 0 ? completeTimes.reduce((a, b) => Math.min(a, b)) : null;

const db = openRaw(root, config.databaseFile, { readonly: true });
// First time each payout was asked about; the first cycle ends when the last of them was.
const POLL_EVENTS = "event IN ('polled', 'settled')";
const firsts = db
  .prepare(`SELECT count(*) AS n, max(t) AS t FROM (SELECT min(at) AS t FROM payout_history WHERE ${POLL_EVENTS} GROUP BY payout_row_id)`)
  .get();
// One query call records all its payouts with one timestamp (the time its answer came); two calls answered
// in the same millisecond share one, so a timestamp counts as ceil(payouts / ids per call) calls.
const cycleCalls = db
  .prepare(
    `SELECT coalesce(sum((n + ${QUERY_MAX_IDS} - 1) / ${QUERY_MAX_IDS}), 0) AS n
       FROM (SELECT count(*) AS n FROM payout_history WHERE ${POLL_EVENTS} AND at <= ? GROUP BY at)`,
  )
  .get(firsts.t ?? 0).n;
const firstPollAt = db.prepare(`SELECT min(at) AS t FROM payout_history WHERE ${POLL_EVENTS}`).get().t;
// Each payout's last poll answered PENDING before the settlement, and what the daemon wrote there:
// "next poll in D ms" (when it is due again) and, when a round at the rate it sustains takes longer,
// "at most B ms" (the interval it states it keeps). Builds that write neither keep the configured backoff.
const lastPolls = lastSettledAt
  ? db
      .prepare(
        `SELECT l.k AS k, h.at AS at, h.detail AS detail FROM (SELECT payout_row_id, max(id) AS id, count(*) AS k
           FROM payout_history WHERE event = 'polled' AND at <= ? GROUP BY payout_row_id) l JOIN payout_history h ON h.id = l.id`,
      )
      .all(lastSettledAt)
  : [];
const delayAfter = (k) => Math.min(POLL.maxIntervalMs, POLL.minIntervalMs * 2 ** (k - 1));
const recorded = (p) => /^next poll in (\d+) ms(?:, at most (\d+) ms)?$/.exec(p.detail ?? '');
const recordedDelay = (p) => recorded(p)?.[1];
/** When the payout was due again. */
const dueDelay = (p) => (recordedDelay(p) !== undefined ? Number(recordedDelay(p)) : delayAfter(p.k));
/** The interval the daemon stated for it: the bound when it wrote one, else when it was due. */
const scheduledDelay = (p) => (recorded(p)?.[2] !== undefined ? Number(recorded(p)[2]) : dueDelay(p));
const intervalSource =
  lastPolls.length === 0 ? 'tick' : lastPolls.every((p) => recordedDelay(p) !== undefined) ? 'history' : 'configured backoff';
const pollsBefore = lastPolls.reduce((m, p) => Math.max(m, p.k), 0);
// When the daemon's own schedule had it ask again about each payout after the settlement: the
// earliest it could know. The latest of these, against when it actually saw the last one.
const dueLast = lastPolls.reduce((m, p) => (m === null || p.at + dueDelay(p) > m.at + dueDelay(m) ? p : m), null);
const dueAfterSettlement = lastSettledAt ? Math.max(lastSettledAt, dueLast ? dueLast.at + dueDelay(dueLast) : 0) : null;
const lastSeenAt = db.prepare("SELECT max(at) AS t FROM payout_history WHERE event = 'settled'").get().t;
const states = db.prepare('SELECT state, count(*) AS n FROM payouts GROUP BY state').all();
db.close();

// The limit: the longest interval the daemon stated for any payout when they settled.
const interval = lastPolls.length > 0 ? lastPolls.reduce((m, p) => Math.max(m, scheduledDelay(p)), 0) : POLL.tickMs;
const resultAt = resultLine ? Date.parse(resultLine.time) : null;
const minimumCalls = Math.ceil(rows / QUERY_MAX_IDS);
writeFileSync(
  params.resultFile,
  JSON.stringify({
    rows,
    queryMaxIds: QUERY_MAX_IDS,
    poll: POLL,
    settleAfterMs,
    firstCycle: {
      payoutsPolled: firsts.n,
      calls: firsts.n === rows ? cycleCalls : null,
      minimumCalls,
      ms: firsts.t && firstPollAt ? firsts.t - firstPollAt : null,
    },
    settlement: {
      firstAt: firstSettledAt,
      lastAt: lastSettledAt,
      spreadMs: lastSettledAt && firstSettledAt ? lastSettledAt - firstSettledAt : null,
    },
    pollsBeforeSettlement: pollsBefore,
    intervalMs: interval,
    intervalSource,
    // For reading the ratio: the interval of the payout that was due last after the settlement, and the range.
    intervalOfDueLastMs: dueLast ? dueDelay(dueLast) : null,
    intervalMinMs: lastPolls.length > 0 ? lastPolls.reduce((m, p) => Math.min(m, scheduledDelay(p)), Infinity) : null,
    resultFileMs: resultAt && lastSettledAt ? resultAt - lastSettledAt : null,
    // Where that time went: waiting for the schedule, polling late, finishing the batch.
    breakdown:
      resultAt && lastSettledAt
        ? {
            scheduleMs: dueAfterSettlement - lastSettledAt,
            pollLagMs: lastSeenAt - dueAfterSettlement,
            finishMs: resultAt - lastSeenAt,
          }
        : null,
    timedOut,
    maxSeconds,
    totalQueryCalls: stats.requests[QUERY_PATH] ?? 0,
    queryLoop,
    states,
    daemonCpuMs,
    peakRssMb,
    stopMs: stopped.stopMs,
  }),
);

async function measureQueryLoop() {
  const calls = Math.min(200, Math.ceil(rows / QUERY_MAX_IDS));
  const client = await apiClient(root, sandbox.url, merchant);
  await client.balances();
  const idsOf = (c) => Array.from({ length: QUERY_MAX_IDS }, (_, j) => createdAnswer((c * QUERY_MAX_IDS + j) % rows).payoutId);
  const run = async (concurrency) => {
    const t = now();
    await forEachConcurrent(calls, concurrency, (c) => client.queryByPayoutIds(idsOf(c)));
    return (now() - t) / calls;
  };
  return { calls, idsPerCall: QUERY_MAX_IDS, sequentialMsPerCall: await run(1), fourInFlightMsPerCall: await run(4) };
}

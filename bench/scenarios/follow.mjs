// Follow: N payouts PENDING at the service (a sandbox started from a ledger
// file) and in the daemon's database (one accepted batch, built directly),
// due for their first poll. The sandbox settles all of them at one known
// moment, settleAfterMs after it started, while the real `payoutd run` polls.
// Measured: the query calls of the daemon's first poll cycle (until every
// payout was asked about once, from its history) against ceil(N / ids per
// call); and the time from the last settlement to the result file in the
// outbox against the poll interval the daemon stated for those payouts
// (each poll that answers PENDING writes "next poll in W ms[, at most B ms]").
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PayoutdProcess, now, sleep } from '../lib/processes.mjs';
import {
  Sandbox,
  createdAnswer,
  outboxFile,
  payoutRequest,
  writeDaemonConfig,
  writeLedgerFile,
  writeMerchantFiles,
} from '../lib/setup.mjs';
import { createdColumns, openForBulkLoad, openReadOnly } from '../lib/statedb.mjs';

const { workDir, rows, settleAfterMs, maxSeconds, resultFile } = JSON.parse(process.argv[2]);
const QUERY_MAX_IDS = 100;
const POLL = { tickMs: 1000, firstPollDelayMs: 2000, minIntervalMs: 2000, maxIntervalMs: 300_000 };
const dir = join(workDir, 'follow');
const merchant = await writeMerchantFiles(dir);
const at = Date.now();
const items = Array.from({ length: rows }, (_, i) => ({ request: payoutRequest('FOL', i), answer: createdAnswer(i) }));
const ledgerFile = writeLedgerFile(dir, items, at);

// The daemon's side: the same payouts, created a moment ago (the config's URL is set once the sandbox listens).
const daemonConfig = (url) => writeDaemonConfig(dir, merchant, url, { poll: POLL, api: { queryMaxIds: QUERY_MAX_IDS } });
let config = daemonConfig('http://127.0.0.1:9');
const db = await openForBulkLoad(config.file, config.databaseFile, dir);
db.insertBatch({ id: 'BFOLLOW-0001', fileName: 'follow.csv', state: 'ACTIVE', rows, at }, join(config.stateDir, 'claimed'));
db.insertPayouts(
  'BFOLLOW-0001',
  rows,
  (i) => ({ request: items[i].request, state: 'PENDING', ...createdColumns(items[i].answer, at), next_poll_at: at, updated_at: at }),
  () => [
    { at, event: 'intent', from_state: 'READY', to_state: 'CREATING' },
    { at, event: 'created', from_state: 'CREATING', to_state: 'PENDING', outcome: 'PENDING' },
  ],
);
db.finish();

const sandbox = await Sandbox.start(dir, merchant, {
  stateFile: ledgerFile,
  settlement: { minDelayMs: settleAfterMs, maxDelayMs: settleAfterMs },
});
config = daemonConfig(sandbox.url);
const daemon = new PayoutdProcess(['run', '--config', config.file], dir);
let resultAt = null;
let lastSettledAt = null;
try {
  await daemon.waitForLine(/"payoutd running"/, 60_000);
  const deadline = now() + maxSeconds * 1000;
  while (resultAt === null && now() < deadline && !daemon.exitInfo) {
    await sleep(20);
    if (outboxFile(config.outbox, '.result.csv')) resultAt = Date.now(); // wall clock, as the sandbox's completeTime
  }
  await daemon.stop();
  const { payouts } = await sandbox.admin('/__sandbox/ledger');
  lastSettledAt = payouts.reduce((last, p) => (p.completeTime ? Math.max(last, Date.parse(p.completeTime)) : last), 0);
} finally {
  await daemon.stop();
  await sandbox.stop();
}
if (resultAt === null) throw new Error(`no result file within ${maxSeconds} s`);

const history = await openReadOnly(config.databaseFile);
// The first cycle ends when the last payout was first asked about. One query call records all its payouts
// with one timestamp (when its answer came), so a timestamp counts as ceil(payouts / ids per call) calls.
const POLLS = "event IN ('polled', 'settled')";
const cycleEnd = history
  .prepare(`SELECT count(*) AS n, max(t) AS t FROM (SELECT min(at) AS t FROM payout_history WHERE ${POLLS} GROUP BY payout_row_id)`)
  .get();
const cycleCalls = history
  .prepare(
    `SELECT coalesce(sum((n + ${QUERY_MAX_IDS} - 1) / ${QUERY_MAX_IDS}), 0) AS calls
       FROM (SELECT count(*) AS n FROM payout_history WHERE ${POLLS} AND at <= ? GROUP BY at)`,
  )
  .get(cycleEnd.t).calls;
// Each payout's last recorded poll before the settlement states the interval in effect for it.
const stated = history
  .prepare(
    `SELECT h.detail FROM (SELECT max(id) AS id FROM payout_history WHERE event = 'polled' AND at <= ? GROUP BY payout_row_id) l
       JOIN payout_history h ON h.id = l.id`,
  )
  .all(lastSettledAt)
  .map(({ detail }) => {
    const m = /^next poll in (\d+) ms(?:, at most (\d+) ms)?$/.exec(detail ?? '');
    if (!m) throw new Error(`a poll's history entry no longer states the interval (src/poll): ${JSON.stringify(detail)}`);
    return Number(m[2] ?? m[1]);
  });
history.close();

writeFileSync(
  resultFile,
  JSON.stringify({
    rows,
    queryMaxIds: QUERY_MAX_IDS,
    firstCycleCalls: cycleEnd.n === rows ? cycleCalls : null,
    minimumCalls: Math.ceil(rows / QUERY_MAX_IDS),
    resultFileMs: resultAt - lastSettledAt,
    // Payouts not asked about before the settlement were due at their first poll: a tick at most.
    intervalMs: stated.length > 0 ? stated.reduce((a, b) => Math.max(a, b)) : POLL.tickMs,
    polledBeforeSettlement: stated.length,
  }),
);

// Restart and status on a big state database, built directly: `rows` payout
// rows in batches of 100,000, all PAID but `unfinished` rows of the last batch
// left as a crash leaves them (READY, PENDING at the service, UNKNOWN,
// CREATING). Restart: from spawning `payoutd run` to its first call to the
// payout service (work resumed). Status: wall time of `payoutd status` on the
// same database, median of three.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PayoutdProcess, now, runPayoutd, sleep } from '../lib/processes.mjs';
import {
  CREATE_PATH,
  QUERY_PATH,
  Sandbox,
  createdAnswer,
  payoutRequest,
  writeDaemonConfig,
  writeLedgerFile,
  writeMerchantFiles,
} from '../lib/setup.mjs';
import { createdColumns, openForBulkLoad } from '../lib/statedb.mjs';

const { workDir, rows, unfinished, restart, status, resultFile } = JSON.parse(process.argv[2]);
const BATCH_ROWS = 100_000;
const dir = join(workDir, 'restart');
const merchant = await writeMerchantFiles(dir);
let config = writeDaemonConfig(dir, merchant, 'http://127.0.0.1:9'); // the sandbox's URL once it listens

/** The state of the j-th unfinished row: 60 % READY, 25 % PENDING, 10 % UNKNOWN, 5 % CREATING. */
const unfinishedState = (j) =>
  j < 0.6 * unfinished ? 'READY' : j < 0.85 * unfinished ? 'PENDING' : j < 0.95 * unfinished ? 'UNKNOWN' : 'CREATING';

const db = await openForBulkLoad(config.file, config.databaseFile, dir);
const t0 = Date.now() - 3_600_000;
const pendingAtService = [];
for (let b = 0, base = 0; base < rows; b++, base += BATCH_ROWS) {
  const n = Math.min(BATCH_ROWS, rows - base);
  const last = base + n >= rows;
  const paid = last ? n - Math.min(unfinished, n) : n;
  const at = t0 + b * 60_000;
  const id = `BRESTART-${String(b).padStart(4, '0')}`;
  const state = last && paid < n ? 'ACTIVE' : 'COMPLETE';
  db.insertBatch({ id, fileName: `batch-${b}.csv`, state, rows: n, at }, join(config.stateDir, 'claimed'));
  db.insertPaidRows(id, paid, { base, at, prefix: 'RST' });
  db.insertPayouts(
    id,
    n - paid,
    (j) => {
      const i = paid + j;
      const request = payoutRequest('RST', base + i, { hold: true }); // held: PENDING at the service until the end
      const row = { line: i + 2, request, updated_at: at, state: unfinishedState(j) };
      if (row.state === 'READY') return { ...row, next_attempt_at: at };
      if (row.state === 'PENDING') {
        pendingAtService.push({ request, answer: createdAnswer(base + i) });
        return { ...row, ...createdColumns(createdAnswer(base + i), at), next_poll_at: at + 2000 };
      }
      if (row.state === 'UNKNOWN') return { ...row, create_attempts: 1, unknown_since: at, next_attempt_at: at };
      return { ...row, create_attempts: 1 }; // CREATING: the create was on the wire when the process died
    },
    (row) => (row.state === 'READY' ? [] : [{ at, event: 'intent', from_state: 'READY', to_state: 'CREATING' }]),
  );
}
db.finish();

// The service knows the PENDING payouts; the UNKNOWN and CREATING creates never reached it.
const sandbox = await Sandbox.start(dir, merchant, { stateFile: writeLedgerFile(dir, pendingAtService, t0) });
config = writeDaemonConfig(dir, merchant, sandbox.url);
const result = { rows, unfinished };
try {
  if (restart) result.firstCallMs = await timeToFirstCall();
  if (status) result.statusMs = await timeStatus();
} finally {
  await sandbox.stop();
}
writeFileSync(resultFile, JSON.stringify(result));

async function timeToFirstCall() {
  const calls = (s) => (s.requests[QUERY_PATH] ?? 0) + (s.requests[CREATE_PATH] ?? 0);
  const before = calls(await sandbox.stats());
  const daemon = new PayoutdProcess(['run', '--config', config.file], dir);
  try {
    const deadline = now() + 60_000;
    while (now() < deadline && !daemon.exitInfo) {
      if (calls(await sandbox.stats()) > before) return now() - daemon.startedAt;
      await sleep(10);
    }
    throw new Error(`the daemon made no call within 60 s: ${daemon.stderr.slice(-3).join(' | ')}`);
  } finally {
    await daemon.stop();
  }
}

async function timeStatus() {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const { wallMs, stdout } = await runPayoutd(['status', '--config', config.file], dir);
    // Every row is in the counts shown (a finished batch's from its record): none missed, none twice.
    const shown = [...stdout.matchAll(/\b[A-Z_]+=(\d+)\b/g)].reduce((sum, m) => sum + Number(m[1]), 0);
    if (shown !== rows) throw new Error(`payoutd status showed ${shown} rows in its counts, the database holds ${rows}`);
    runs.push(wallMs);
  }
  return runs.sort((a, b) => a - b)[1];
}

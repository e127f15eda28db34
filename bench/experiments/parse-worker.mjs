// Experiment behind item 27 of docs/performance.md ("What is left"): would a
// parse worker speed up the ingest? Reads a batch file and stores its rows in
// a fresh SQLite database with the build's own code, either all on one thread
// (`seq`, as the intake does) or with csv-parse, the validation and the
// canonical JSON on a worker thread while the main thread stores (`worker`).
// Rows cross as arrays of their column values, 1,000 at a time, at most 12
// chunks ahead of the inserts; the main thread stores 10,000 at a time with
// insertRowsWhileReading. The acceptance and the acknowledgement are left out
// (they are the same either way). Not part of the suite; not the daemon's code.
//
//   npm run build && node samples/generate-batch.mjs --rows 1000000 --out /tmp/b.csv
//   node bench/experiments/parse-worker.mjs seq /tmp/b.csv
//   node bench/experiments/parse-worker.mjs worker /tmp/b.csv
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { dist } from '../lib/common.mjs';

const root = join(import.meta.dirname, '..', '..');
const { loadConfig } = await dist(root, 'config/index.js');
const { parseBatchFile } = await dist(root, 'ingest/csv/index.js');

const CHUNK_ROWS = 1_000;
const CHUNKS_AHEAD = 12;
const ROWS_PER_TRANSACTION = 10_000;

/** A parsed row as the values the intake stores (the same fields as its storedForm). */
function columnValues(r) {
  const errors = r.errors;
  return [
    r.line,
    r.merchantReferenceId,
    r.request ? 'READY' : 'INVALID',
    r.requestValues ? JSON.stringify(r.requestValues) : null,
    r.written.payoutCurrency || null,
    r.written.payoutAmount || null,
    r.written.deductionCurrency || null,
    errors[0]?.code ?? null,
    errors.length > 0 ? errors.map((e) => `${e.code}${e.column ? ` [${e.column}]` : ''}: ${e.message}`).join('; ') : null,
  ];
}

function newPayoutRow(batchId, v) {
  return {
    batchId,
    line: v[0],
    merchantReferenceId: v[1],
    state: v[2],
    requestValues: v[3],
    payoutCurrency: v[4],
    payoutAmount: v[5],
    deductionCurrency: v[6],
    reasonCode: v[7],
    reason: v[8],
  };
}

function parse(file, config, onRows) {
  return parseBatchFile(file, basename(file), {
    format: config.batch.format,
    rules: config.batch.rules,
    chunkSize: CHUNK_ROWS,
    sidecarPath: null,
    onRows,
  });
}

if (!isMainThread) {
  // The worker: parse and validate, hand chunks over while the main thread has credit for them.
  const config = loadConfig({ env: {}, cwd: tmpdir() });
  let credit = CHUNKS_AHEAD;
  let wake = null;
  parentPort.on('message', (n) => {
    credit += n;
    wake?.();
    wake = null;
  });
  await parse(workerData.file, config, async (rows) => {
    while (credit <= 0) await new Promise((resolve) => (wake = resolve));
    credit--;
    parentPort.postMessage(rows.map(columnValues));
  });
  parentPort.postMessage('end');
} else {
  const [mode, file] = process.argv.slice(2);
  if (!['seq', 'worker'].includes(mode) || !file) throw new Error('usage: parse-worker.mjs seq|worker FILE');
  const { openStore, migrateToLatest, insertBatch, receivedBatch, insertRowsWhileReading } = await dist(root, 'store/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-parse-worker-'));
  const paths = { inbox: join(dir, 'inbox'), outbox: join(dir, 'outbox'), stateDir: join(dir, 'state') };
  const config = loadConfig({ env: {}, cwd: dir }, { paths });
  for (const p of Object.values(paths)) mkdirSync(p, { recursive: true });
  const db = openStore(config);
  await migrateToLatest(db);
  const batchId = 'B1';
  await insertBatch(
    db,
    receivedBatch(
      { id: batchId, fileName: basename(file), storedPath: file, sha256: '-', size: 0, mtimeMs: 0, controlPath: null },
      Date.now(),
    ),
  );
  const lease = { batchId, instanceId: 'experiment', leaseMs: 60_000 };
  let pending = [];
  let stored = 0;
  const store = async () => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    stored += rows.length;
    await insertRowsWhileReading(db, lease, rows, Date.now());
  };
  const take = async (values) => {
    for (const v of values) pending.push(newPayoutRow(batchId, v));
    if (pending.length >= ROWS_PER_TRANSACTION) await store();
  };

  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  if (mode === 'seq') {
    await parse(file, config, (rows) => take(rows.map(columnValues)));
    await store();
  } else {
    const worker = new Worker(new URL(import.meta.url), { workerData: { file } });
    await new Promise((resolve, reject) => {
      let chain = Promise.resolve();
      worker.on('error', reject);
      worker.on('message', (m) => {
        chain = chain
          .then(async () => {
            if (m === 'end') return store().then(resolve);
            worker.postMessage(1);
            await take(m);
          })
          .catch(reject);
      });
    });
    await worker.terminate();
  }
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const peakRssMb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) / 1024;
  console.log(
    JSON.stringify({
      mode,
      rows: stored,
      ms: Math.round(ms),
      rowsPerSecond: Math.round((stored / ms) * 1000),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      peakRssMb: Math.round(peakRssMb),
    }),
  );
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
}

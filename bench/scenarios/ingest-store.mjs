// Ingest reference: storing alone. The rows of the batch file in the form
// the intake stores them (read beforehand, untimed), then stored as the
// intake stores them while it reads (insertRowsWhileReading, 10,000 rows to
// a transaction, the daemon's default SQLite settings), on a fresh database,
// with no reading at the same time. SQLite has one writer, so the intake
// cannot store a file faster than this, whatever its readers do: the ceiling
// of the ingest on this machine and schema.
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dist, now } from '../lib/common.mjs';
import { openIngestStore } from '../lib/fixtures.mjs';

const params = JSON.parse(process.argv[2]);
const { root, file, workDir } = params;
const { insertBatch, receivedBatch, insertRowsWhileReading } = await dist(root, 'store/index.js');
const { parseBatchFile, newBatchId } = await dist(root, 'ingest/index.js');
const { storedForm, ROWS_PER_TRANSACTION } = await dist(root, 'ingest/intake.js');
const { readRowsOf } = await dist(root, 'ingest/read/rows.js');
if (typeof storedForm !== 'function' || typeof ROWS_PER_TRANSACTION !== 'number')
  throw new Error('this build does not export storedForm and ROWS_PER_TRANSACTION (it is older than this scenario)');

const { config, db } = await openIngestStore(root, join(workDir, 'ingest-store'));

const started = Date.now();
const batchId = newBatchId(started);
const lease = { batchId, instanceId: 'bench-store', leaseMs: 60 * 60_000 };
await insertBatch(db, {
  ...receivedBatch(
    { id: batchId, fileName: basename(file), storedPath: file, controlPath: null, sha256: '0'.repeat(64), size: 0, mtimeMs: 0 },
    started,
  ),
  leaseOwner: lease.instanceId,
  leaseExpiresAt: started + lease.leaseMs,
});

// Every row in its stored form, a transaction's worth to an array (in memory: this process is not the one whose RSS counts).
const chunks = [];
let pending = [];
await parseBatchFile(file, basename(file), {
  format: config.batch.format,
  rules: config.batch.rules,
  chunkSize: 1000,
  sidecarPath: null,
  onRows: async (rows) => {
    for (const r of storedForm(batchId, readRowsOf(rows))) pending.push(r);
    if (pending.length >= ROWS_PER_TRANSACTION) {
      chunks.push(pending);
      pending = [];
    }
  },
});
if (pending.length > 0) chunks.push(pending);
const rows = chunks.reduce((n, c) => n + c.length, 0);
if (rows !== params.rows) throw new Error(`read ${rows} rows, expected ${params.rows}`);
globalThis.gc?.();

const cpuBefore = process.cpuUsage();
const t0 = now();
for (const chunk of chunks) await insertRowsWhileReading(db, lease, chunk, started);
const ms = now() - t0;
const cpu = process.cpuUsage(cpuBefore);
await db.destroy();
writeFileSync(params.resultFile, JSON.stringify({ rows, ms, rowsPerSecond: (rows / ms) * 1000, cpuMs: (cpu.user + cpu.system) / 1000 }));

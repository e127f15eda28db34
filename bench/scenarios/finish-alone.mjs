// Finishing one large batch, alone: a SQLite state database holding one
// ACTIVE batch whose rows are all final (PAID, every tenth CANCELLED; some
// beneficiary names with quotes, commas, non-ASCII or a leading `=`), built
// by raw SQL (lib/dbbuild.mjs), then what the daemon's finish loop does for
// it — BatchOutbox.writeResult (rows read back, result + summary CSV
// written) and writeExtras (the retry file of the CANCELLED rows, on by
// default) — timed `--runs` times, each into a fresh outbox. No daemon, no
// sandbox: the cost of the finish path itself.
// Usage: node bench/scenarios/finish-alone.mjs [--root DIR] [--rows N] [--runs N] [--keep DIR]
//   --keep DIR  copies the last run's outbox files to DIR (to compare builds byte for byte).
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ROOT, checkRoot, dist, now, round } from '../lib/common.mjs';
import { createSchema, finishBulk, insertBatch, insertPaidRowsSql, openBulk, requestColumn } from '../lib/dbbuild.mjs';

const { values: args } = parseArgs({
  options: {
    root: { type: 'string', default: DEFAULT_ROOT },
    rows: { type: 'string', default: '100000' },
    runs: { type: 'string', default: '3' },
    keep: { type: 'string' },
  },
});
const root = checkRoot(resolve(args.root));
const rows = Number.parseInt(args.rows, 10);
const runs = Number.parseInt(args.runs, 10);
const BATCH_ID = 'bench-finish';
const AT = Date.parse('2024-05-01T00:00:00Z');

/** The database: one ACTIVE batch, `n` final rows, every tenth CANCELLED with the service's reason. */
async function buildDatabase(dir, n) {
  const file = join(dir, 'state.sqlite');
  await createSchema(root, file);
  const raw = openBulk(root, file);
  insertBatch(raw, { id: BATCH_ID, state: 'ACTIVE', rows: n, at: AT, fileName: 'payouts-100k.csv' }, join(dir, 'claimed'));
  insertPaidRowsSql(raw, BATCH_ID, n, { base: 0, at: AT, prefix: 'FIN' });
  // A cancelled payout: no debit, so no deduction or fee; the reason the service gave.
  raw
    .prepare(
      `UPDATE payouts SET state = 'CANCELLED', service_status = 'CANCELLED', deduction_amount = NULL, total_fee = NULL,
         fee_currency = NULL, reason_code = 'BENEFICIARY_ACCOUNT_INVALID', reason = 'account closed, "per bank"'
       WHERE batch_id = ? AND line % 10 = 0`,
    )
    .run(BATCH_ID);
  // Names that need CSV quoting, non-ASCII text and a formula trigger on some rows, so the files
  // compared across builds (--keep) cover more than plain cells.
  const column = requestColumn(raw);
  const accountName = column === 'request_values' ? '$[9]' : '$.beneficiary.accountName';
  raw
    .prepare(
      `UPDATE payouts SET ${column} = json_set(${column}, '${accountName}',
         CASE WHEN line % 7 = 0 THEN 'Cruz, "Ana" José 😀' ELSE '=Ana+Cruz' END)
       WHERE batch_id = ? AND (line % 7 = 0 OR line % 13 = 0)`,
    )
    .run(BATCH_ID);
  finishBulk(raw);
  return file;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const work = mkdtempSync(join(tmpdir(), 'payoutd-finish-'));
try {
  const file = await buildDatabase(work, rows);
  const { openDatabase } = await dist(root, 'store/db.js');
  const { getBatch } = await dist(root, 'store/batches.js');
  const { BatchOutbox } = await dist(root, 'daemon/outbox.js');
  const db = openDatabase({ client: 'sqlite', filename: file, poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
  const batch = await getBatch(db, BATCH_ID);
  const results = [];
  let outbox = '';
  for (let i = 0; i < runs; i++) {
    outbox = join(work, `outbox-${i}`);
    mkdirSync(outbox);
    // The daemon's defaults: BOM on, retry files on, no .xlsx.
    const writer = new BatchOutbox(db, outbox, true, undefined, { xlsx: false, retryFiles: true });
    const c0 = process.cpuUsage();
    const t0 = now();
    const files = await writer.writeResult(batch);
    const t1 = now();
    const c1 = process.cpuUsage(c0);
    const extra = await writer.writeExtras(batch);
    const t2 = now();
    if (files.summary.rowCount !== rows) throw new Error(`result file has ${files.summary.rowCount} rows, expected ${rows}`);
    if (!extra.retry) throw new Error('no retry file written');
    // CPU time too: on a shared machine it moves less than wall time with the other load.
    const resultCpuMs = (c1.user + c1.system) / 1000;
    results.push({ resultMs: t1 - t0, resultCpuMs, extrasMs: t2 - t1, totalMs: t2 - t0 });
    process.stderr.write(`run ${i + 1}: result ${round(t1 - t0)} ms (cpu ${round(resultCpuMs)} ms), extras ${round(t2 - t1)} ms\n`);
  }
  await db.destroy();
  if (args.keep) {
    mkdirSync(args.keep, { recursive: true });
    for (const name of readdirSync(outbox)) cpSync(join(outbox, name), join(args.keep, name));
  }
  const m = (k) => round(median(results.map((r) => r[k])));
  process.stdout.write(
    `${JSON.stringify({ rows, runs, medianResultMs: m('resultMs'), medianResultCpuMs: m('resultCpuMs'), medianExtrasMs: m('extrasMs'), medianTotalMs: m('totalMs'), results })}\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}

// Builds a state database directly: the schema by the build's own
// migrations, then batches, payout rows and their history by raw SQL
// (better-sqlite3 prepared statements in large transactions), so a
// million-row database takes seconds instead of a million-row payout run.
// Rows keep no money cells (payout_currency, payout_amount,
// deduction_currency NULL), as the intake stores a row whose cells are
// written as its request has them (src/store/request-fields.ts); every
// build's readers take the request's values then.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { dist } from './common.mjs';

export async function createSchema(root, file) {
  const { openDatabase, migrateToLatest } = await dist(root, 'store/db.js');
  const db = openDatabase({ client: 'sqlite', filename: file, poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
}

/** The build's own better-sqlite3 on `file` (WAL, as the daemon keeps it). */
export function openRaw(root, file, options = {}) {
  const Database = createRequire(join(root, 'package.json'))('better-sqlite3');
  const raw = new Database(file, options);
  if (!options.readonly) raw.pragma('journal_mode = WAL');
  return raw;
}

/**
 * For bulk loading only: no journal, no syncs, a large page cache. Call
 * `finishBulk` before any other process opens the file.
 */
export function openBulk(root, file) {
  const Database = createRequire(join(root, 'package.json'))('better-sqlite3');
  const raw = new Database(file);
  raw.pragma('journal_mode = OFF');
  raw.pragma('synchronous = OFF');
  raw.pragma('cache_size = -262144');
  return raw;
}

export function finishBulk(raw) {
  raw.pragma('journal_mode = WAL');
  raw.close();
}

/**
 * A batch record, with a stand-in for its claimed file under `claimedDir`
 * (the daemon holds a batch whose claimed file is gone or changed, so the
 * file must exist with the recorded size and mtime). `finalCounts`: the
 * row counts per state of a batch that ended, as its record keeps them.
 */
export function insertBatch(raw, b, claimedDir) {
  const fileName = b.fileName ?? `${b.id}.csv`;
  mkdirSync(claimedDir, { recursive: true });
  const storedPath = join(claimedDir, `${b.id}__${fileName}`);
  writeFileSync(storedPath, `bench stand-in for the claimed file of ${b.id}\n`);
  const st = statSync(storedPath);
  const row = {
    id: b.id,
    file_name: fileName,
    stored_path: storedPath,
    sha256: b.sha256 ?? b.id.padEnd(64, '0').slice(0, 64),
    size: st.size,
    mtime_ms: Math.trunc(st.mtimeMs),
    state: b.state,
    row_count: b.rows,
    valid_count: b.rows,
    invalid_count: 0,
    delimiter: ',',
    totals_json: null,
    received_at: b.at,
    accepted_at: b.at,
    // The ack exists already: a start must not write it again.
    ack_written_at: b.at,
    result_written_at: b.state === 'COMPLETE' ? b.at : null,
    completed_at: b.state === 'COMPLETE' ? b.at : null,
    updated_at: b.at,
  };
  // As the daemon keeps them when the batch ends with every row final (from migration 0009 on).
  if (b.finalCounts && raw.pragma('table_info(batches)').some((c) => c.name === 'final_counts_json')) {
    row.final_counts_json = JSON.stringify(b.finalCounts);
  }
  const cols = Object.keys(row);
  raw.prepare(`INSERT INTO batches (${cols.join(',')}) VALUES (${cols.map((c) => `@${c}`).join(',')})`).run(row);
}

/** The column a row keeps its request in: request_values from migration 0008, request_json before it. */
export function requestColumn(raw) {
  const names = raw
    .prepare('PRAGMA table_info(payouts)')
    .all()
    .map((c) => c.name);
  return names.includes('request_values') ? 'request_values' : 'request_json';
}

const PAYOUT_COLUMNS = [
  'batch_id',
  'line',
  'merchant_reference_id',
  'state',
  'request',
  'payout_currency',
  'payout_amount',
  'deduction_currency',
  'payout_id',
  'service_status',
  'rate',
  'deduction_amount',
  'total_fee',
  'fee_currency',
  'create_time',
  'complete_time',
  'reason_code',
  'reason',
  'create_attempts',
  'unknown_since',
  'next_attempt_at',
  'created_at_ms',
  'next_poll_at',
  'poll_count',
  'last_polled_at',
  'updated_at',
];

/**
 * Inserts `n` payout rows of one batch: `rowOf(i)` gives the columns that
 * differ from the defaults, `historyOf(i, row)` the history entries
 * ({at, event, from_state, to_state, outcome, detail}).
 */
export function insertPayouts(raw, batchId, n, rowOf, historyOf = () => []) {
  // `request` in rowOf's columns names the build's own request column (storedRequestForm gives its text).
  const request = requestColumn(raw);
  const insertRow = raw.prepare(
    `INSERT INTO payouts (${PAYOUT_COLUMNS.map((c) => (c === 'request' ? request : c)).join(',')}) VALUES (${PAYOUT_COLUMNS.map((c) => `@${c}`).join(',')})`,
  );
  const insertHistory = raw.prepare(
    'INSERT INTO payout_history (payout_row_id, at, event, from_state, to_state, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const base = Object.fromEntries(PAYOUT_COLUMNS.map((c) => [c, null]));
  const chunk = raw.transaction((from, to) => {
    for (let i = from; i < to; i++) {
      const row = { ...base, batch_id: batchId, line: i + 2, create_attempts: 0, poll_count: 0, ...rowOf(i) };
      const id = insertRow.run(row).lastInsertRowid;
      for (const h of historyOf(i, row)) {
        insertHistory.run(id, h.at, h.event, h.from_state ?? null, h.to_state ?? null, h.outcome ?? null, h.detail ?? null);
      }
    }
  });
  for (let i = 0; i < n; i += 20_000) chunk(i, Math.min(n, i + 20_000));
}

/** Columns of a row the service answered for (create response / query record). */
export function createdColumns(answer, at) {
  return {
    payout_id: answer.payoutId,
    service_status: 'PENDING',
    rate: answer.rate,
    deduction_amount: answer.deductionAmount,
    total_fee: answer.totalFee,
    fee_currency: answer.feeCurrency,
    create_time: new Date(at).toISOString(),
    create_attempts: 1,
    created_at_ms: at,
  };
}

/**
 * Inserts `n` PAID rows (lines 2..n+1 of the batch) entirely inside SQLite,
 * with their history (intent, created, settled): no per-row JavaScript, so
 * a million final rows cost seconds. References are `${prefix}-<9 digits>`
 * numbered from `base`; the request has the build's stored shape (see requestColumn).
 */
export function insertPaidRowsSql(raw, batchId, n, { base, at, prefix }) {
  if (n <= 0) return;
  const created = new Date(at).toISOString();
  const completed = new Date(at + 5000).toISOString();
  const column = requestColumn(raw);
  const request =
    column === 'request_values'
      ? `printf('["%s-%09d","USDT","PHP","%d.50","Maria","Santos","PH","PASSPORT","P%08d","Ana Cruz","%08d1234","BOPIPHMM"]',
             @prefix, @base + i, 100 + (@base + i) % 4900, 1000000 + (@base + i) % 8000000, 1000000 + (@base + i) % 8000000)`
      : `printf('{"beneficiary":{"accountName":"Ana Cruz","accountNumber":"%08d1234","bankCode":"BOPIPHMM"},"deductionCurrency":"USDT","merchantReferenceId":"%s-%09d","payoutAmount":"%d.50","payoutCurrency":"PHP","sender":{"country":"PH","firstName":"Maria","idType":"PASSPORT","idValue":"P%08d","lastName":"Santos"}}',
             1000000 + (@base + i) % 8000000, @prefix, @base + i, 100 + (@base + i) % 4900, 1000000 + (@base + i) % 8000000)`;
  const tx = raw.transaction(() => {
    const first = raw.prepare('SELECT coalesce(max(id), 0) AS id FROM payouts').get().id + 1;
    raw
      .prepare(
        `WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < @n - 1)
         INSERT INTO payouts (batch_id, line, merchant_reference_id, state, ${column}, payout_currency, payout_amount,
           deduction_currency, payout_id, service_status, rate, deduction_amount, total_fee, fee_currency, create_time,
           complete_time, create_attempts, created_at_ms, poll_count, last_polled_at, updated_at)
         SELECT @batchId, i + 2, printf('%s-%09d', @prefix, @base + i), 'PAID',
           ${request},
           NULL, NULL, NULL, printf('PBENCH%010d', @base + i), 'PAID', '56.25',
           printf('%d.5', 2 + (@base + i) % 80), '0.5', 'USDT', @created, @completed, 1, @at, 2, @at + 6000, @at
         FROM seq`,
      )
      .run({ n, batchId, prefix, base, at, created, completed });
    const history = raw.prepare(
      `INSERT INTO payout_history (payout_row_id, at, event, from_state, to_state, outcome, detail)
       SELECT id, @at, @event, @from, @to, @outcome, NULL FROM payouts WHERE id >= @first AND id < @first + @n`,
    );
    history.run({ at, event: 'intent', from: 'READY', to: 'CREATING', outcome: null, first, n });
    history.run({ at, event: 'created', from: 'CREATING', to: 'PENDING', outcome: 'PENDING', first, n });
    history.run({ at: at + 6000, event: 'settled', from: 'PENDING', to: 'PAID', outcome: 'PAID', first, n });
  });
  tx();
}

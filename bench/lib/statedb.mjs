// A state database reached without running the payouts that reach it: the
// schema by `payoutd migrate`, then batches, payout rows and their history
// inserted by raw SQL in large transactions, so a million rows take seconds.
// It writes the schema's tables as the migrations define them; a migration
// that changes them is the one reason to change this file.
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dist, runPayoutd } from './processes.mjs';

/**
 * Migrates the database of the config at `configFile` and opens it for bulk
 * loading (no journal, no syncs); `finish()` puts it back in WAL mode and
 * closes it, before the daemon opens it.
 */
export async function openForBulkLoad(configFile, databaseFile, cwd) {
  await runPayoutd(['migrate', '--config', configFile], cwd);
  const { encodeRequest } = await dist('domain');
  const { openSqlite } = await dist('store');
  const db = openSqlite(databaseFile);
  db.pragma('journal_mode = OFF');
  db.pragma('synchronous = OFF');
  return new BulkLoad(db, encodeRequest);
}

/** Opens a database read-only, to read what the daemon wrote (with the build's driver for this Node). */
export async function openReadOnly(databaseFile) {
  const { openSqlite } = await dist('store');
  return openSqlite(databaseFile, { readonly: true });
}

const PAYOUT_COLUMNS = [
  'batch_id',
  'line',
  'merchant_reference_id',
  'state',
  'request_values',
  'payout_id',
  'service_status',
  'rate',
  'deduction_amount',
  'total_fee',
  'fee_currency',
  'create_time',
  'create_attempts',
  'unknown_since',
  'next_attempt_at',
  'created_at_ms',
  'next_poll_at',
  'poll_count',
  'updated_at',
];

class BulkLoad {
  constructor(db, encodeRequest) {
    this.db = db;
    this.encodeRequest = encodeRequest;
  }

  finish() {
    this.db.pragma('journal_mode = WAL');
    this.db.close();
  }

  /**
   * A batch record, with a stand-in for its claimed file under `claimedDir`
   * (the daemon holds a batch whose claimed file is gone or changed, so the
   * file exists with the recorded size and mtime). A COMPLETE batch keeps
   * its row counts in its record, as the daemon leaves it.
   */
  insertBatch({ id, fileName, state, rows, at }, claimedDir) {
    mkdirSync(claimedDir, { recursive: true });
    const storedPath = join(claimedDir, `${id}__${fileName}`);
    writeFileSync(storedPath, `bench stand-in for the claimed file of ${id}\n`);
    const st = statSync(storedPath);
    const complete = state === 'COMPLETE';
    const row = {
      id,
      file_name: fileName,
      stored_path: storedPath,
      sha256: id.padEnd(64, '0').slice(0, 64),
      size: st.size,
      mtime_ms: Math.trunc(st.mtimeMs),
      state,
      row_count: rows,
      valid_count: rows,
      invalid_count: 0,
      delimiter: ',',
      received_at: at,
      accepted_at: at,
      ack_written_at: at, // the ack exists already: a start must not write it again
      result_written_at: complete ? at : null,
      completed_at: complete ? at : null,
      final_counts_json: complete ? JSON.stringify({ PAID: rows }) : null,
      updated_at: at,
    };
    const cols = Object.keys(row);
    this.db.prepare(`INSERT INTO batches (${cols.join(',')}) VALUES (${cols.map((c) => `@${c}`).join(',')})`).run(row);
  }

  /**
   * `n` payout rows of one batch: `rowOf(i)` gives `request` (a payout request)
   * and the columns that differ from their defaults, `historyOf(row)` its history
   * entries ({ at, event, from_state, to_state, outcome }).
   */
  insertPayouts(batchId, n, rowOf, historyOf = () => []) {
    const insertRow = this.db.prepare(
      `INSERT INTO payouts (${PAYOUT_COLUMNS.join(',')}) VALUES (${PAYOUT_COLUMNS.map((c) => `@${c}`).join(',')})`,
    );
    const insertHistory = this.db.prepare(
      'INSERT INTO payout_history (payout_row_id, at, event, from_state, to_state, outcome) VALUES (?, ?, ?, ?, ?, ?)',
    );
    const empty = Object.fromEntries(PAYOUT_COLUMNS.map((c) => [c, null]));
    const chunk = this.db.transaction((from, to) => {
      for (let i = from; i < to; i++) {
        const { request, ...columns } = rowOf(i);
        const row = { ...empty, batch_id: batchId, line: i + 2, create_attempts: 0, poll_count: 0, ...columns };
        row.merchant_reference_id = request.merchantReferenceId;
        row.request_values = this.encodeRequest(request);
        const id = insertRow.run(row).lastInsertRowid;
        for (const h of historyOf(row)) insertHistory.run(id, h.at, h.event, h.from_state, h.to_state, h.outcome ?? null);
      }
    });
    for (let i = 0; i < n; i += 20_000) chunk(i, Math.min(n, i + 20_000));
  }

  /**
   * `n` PAID rows with their history (intent, created, settled), made inside
   * SQLite with no per-row JavaScript: a million final rows in seconds.
   * References are `${prefix}-<9 digits>` from `base`; the request is stored
   * as encodeRequest writes it (a JSON array of its values).
   */
  insertPaidRows(batchId, n, { base, at, prefix }) {
    if (n <= 0) return;
    const db = this.db;
    db.transaction(() => {
      const first = db.prepare('SELECT coalesce(max(id), 0) AS id FROM payouts').get().id + 1;
      db.prepare(
        `WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < @n - 1)
         INSERT INTO payouts (batch_id, line, merchant_reference_id, state, request_values, payout_id, service_status, rate,
           deduction_amount, total_fee, fee_currency, create_time, complete_time, create_attempts, created_at_ms, poll_count,
           last_polled_at, updated_at)
         SELECT @batchId, i + 2, printf('%s-%09d', @prefix, @base + i), 'PAID',
           printf('["%s-%09d","USDT","PHP","%d.50","Maria","Santos","PH","PASSPORT","P%08d","Ana Cruz","%08d1234","BOPIPHMM"]',
             @prefix, @base + i, 100 + (@base + i) % 4900, 1000000 + (@base + i) % 8000000, 1000000 + (@base + i) % 8000000),
           printf('PBENCH%010d', @base + i), 'PAID', '56.25', printf('%d.5', 2 + (@base + i) % 80), '0.5', 'USDT',
           @created, @completed, 1, @at, 2, @at + 6000, @at
         FROM seq`,
      ).run({ n, batchId, prefix, base, at, created: new Date(at).toISOString(), completed: new Date(at + 5000).toISOString() });
      const history = db.prepare(
        `INSERT INTO payout_history (payout_row_id, at, event, from_state, to_state, outcome)
         SELECT id, @at, @event, @from, @to, @outcome FROM payouts WHERE id >= @first AND id < @first + @n`,
      );
      history.run({ at, event: 'intent', from: 'READY', to: 'CREATING', outcome: null, first, n });
      history.run({ at, event: 'created', from: 'CREATING', to: 'PENDING', outcome: 'PENDING', first, n });
      history.run({ at: at + 6000, event: 'settled', from: 'PENDING', to: 'PAID', outcome: 'PAID', first, n });
    })();
  }
}

/** The columns of a row the service answered for (its create response), created at `at`. */
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

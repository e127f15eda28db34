/**
 * The schema, as knex migrations kept in code (they ship inside dist/ and run the same on SQLite and
 * PostgreSQL). Never edit a released migration; add a new one. Times are integer ms since the epoch; money
 * is decimal text, exactly as on the wire.
 */
import type { Knex } from 'knex';
import { retryRound } from '../domain/retry-reference.js';

interface Migration {
  name: string;
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

const initial: Migration = {
  name: '0001_initial',
  async up(knex) {
    await knex.schema.createTable('batches', (t) => {
      t.string('id', 40).primary();
      t.string('file_name', 512).notNullable(); // as the sender named it
      t.string('stored_path', 1024).notNullable();
      t.string('control_path', 1024).nullable();
      t.string('sha256', 64).notNullable();
      t.bigInteger('size').notNullable();
      t.bigInteger('mtime_ms').notNullable();
      t.string('state', 16).notNullable();
      t.string('duplicate_of', 40).nullable();
      t.string('reject_code', 64).nullable();
      t.text('reject_reason').nullable();
      t.string('hold_code', 64).nullable();
      t.text('hold_reason').nullable();
      t.bigInteger('hold_until').nullable();
      t.integer('row_count').notNullable().defaultTo(0);
      t.integer('valid_count').notNullable().defaultTo(0);
      t.integer('invalid_count').notNullable().defaultTo(0);
      t.string('delimiter', 1).nullable();
      // JSON {currency: decimal text}: payout amounts of all data rows, summed exactly at read time.
      t.text('totals_json').nullable();
      t.bigInteger('received_at').notNullable();
      t.bigInteger('accepted_at').nullable();
      t.bigInteger('ack_written_at').nullable();
      t.bigInteger('result_written_at').nullable();
      t.bigInteger('completed_at').nullable();
      t.bigInteger('updated_at').notNullable();
      t.index(['sha256']);
      t.index(['state']);
      t.index(['received_at']);
    });

    // File-level and row-level validation errors, all of them (up to a cap).
    await knex.schema.createTable('batch_errors', (t) => {
      t.increments('id').primary();
      t.string('batch_id', 40).notNullable().references('batches.id').onDelete('CASCADE');
      t.integer('line').nullable();
      t.string('column_name', 256).nullable();
      t.string('field', 64).nullable();
      t.string('code', 64).notNullable();
      t.text('message').notNullable();
      t.index(['batch_id', 'line']);
    });

    // One row per CSV row: the PayoutIntent and what became of it.
    await knex.schema.createTable('payouts', (t) => {
      t.bigIncrements('id').primary();
      t.string('batch_id', 40).notNullable().references('batches.id').onDelete('CASCADE');
      t.integer('line').notNullable();
      t.string('merchant_reference_id', 128).notNullable();
      t.string('state', 16).notNullable();
      // Canonical JSON of the create request; null for rows that failed validation.
      t.text('request_json').nullable();
      t.string('payout_currency', 8).nullable();
      t.string('payout_amount', 64).nullable();
      t.string('deduction_currency', 8).nullable();
      t.string('payout_id', 128).nullable();
      t.string('service_status', 16).nullable();
      t.string('rate', 64).nullable();
      t.string('deduction_amount', 64).nullable();
      t.string('total_fee', 64).nullable();
      t.string('fee_currency', 8).nullable();
      t.string('create_time', 40).nullable();
      t.string('complete_time', 40).nullable();
      t.string('reason_code', 64).nullable();
      t.text('reason').nullable();
      t.integer('create_attempts').notNullable().defaultTo(0);
      // When the last create's outcome became unknown: absence is only believed notFoundGraceMs after it.
      t.bigInteger('unknown_since').nullable();
      t.bigInteger('next_attempt_at').nullable();
      t.bigInteger('created_at_ms').nullable();
      t.bigInteger('next_poll_at').nullable();
      t.integer('poll_count').notNullable().defaultTo(0);
      t.bigInteger('last_polled_at').nullable();
      t.bigInteger('stale_flagged_at').nullable();
      t.string('lease_owner', 64).nullable();
      t.bigInteger('lease_expires_at').nullable();
      t.bigInteger('updated_at').notNullable();
      t.unique(['batch_id', 'line']);
      t.index(['batch_id', 'state']);
      t.index(['state', 'next_attempt_at']);
      t.index(['state', 'next_poll_at']);
      t.index(['merchant_reference_id']);
      t.index(['payout_id']);
    });
    // The guarantee behind "paid at most once": a reference belongs to at most
    // one row that is, or will be, sent to the service.
    await knex.raw(
      `CREATE UNIQUE INDEX payouts_reference_holder ON payouts (merchant_reference_id)
       WHERE state IN ('READY','CREATING','UNKNOWN','PENDING','PAID','CANCELLED','REJECTED')`,
    );

    // Everything that happened to a row: intents, attempts and their outcomes, queries, state moves.
    await knex.schema.createTable('payout_history', (t) => {
      t.bigIncrements('id').primary();
      t.bigInteger('payout_row_id').notNullable().references('payouts.id').onDelete('CASCADE');
      t.bigInteger('at').notNullable();
      t.string('event', 32).notNullable();
      t.string('from_state', 16).nullable();
      t.string('to_state', 16).nullable();
      t.string('outcome', 64).nullable();
      t.text('detail').nullable();
      t.index(['payout_row_id', 'id']);
    });

    // Webhook deliveries already seen (deduplicated by eventId).
    await knex.schema.createTable('webhook_events', (t) => {
      t.string('event_id', 128).primary();
      t.bigInteger('received_at').notNullable();
      t.string('payout_id', 128).nullable();
      t.string('merchant_reference_id', 128).nullable();
      t.string('status', 16).nullable();
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('webhook_events');
    await knex.schema.dropTableIfExists('payout_history');
    await knex.schema.dropTableIfExists('payouts');
    await knex.schema.dropTableIfExists('batch_errors');
    await knex.schema.dropTableIfExists('batches');
  },
};

// Several instances on one PostgreSQL database: who works on a batch, who took a file from the shared inbox.
const instances: Migration = {
  name: '0002_instances',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.string('lease_owner', 128).nullable();
      t.bigInteger('lease_expires_at').nullable();
    });
    // The finance reconciliation pages through payouts by (created_at_ms, id).
    await knex.schema.alterTable('payouts', (t) => {
      t.index(['created_at_ms', 'id'], 'payouts_created_at');
    });
    await knex.schema.createTable('file_claims', (t) => {
      // name|size|mtime|inode of the file as judged stable in the inbox.
      t.string('file_key', 700).primary();
      t.string('instance_id', 128).notNullable();
      t.bigInteger('claimed_at').notNullable();
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('file_claims');
    await knex.schema.alterTable('payouts', (t) => {
      t.dropIndex(['created_at_ms', 'id'], 'payouts_created_at');
    });
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('lease_owner');
      t.dropColumn('lease_expires_at');
    });
  },
};

// Claims take READY rows of one batch in line order; replaces its prefix (batch_id, state).
const claimOrder: Migration = {
  name: '0003_claim_order',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.index(['batch_id', 'state', 'line'], 'payouts_batch_state_line');
    });
    await knex.schema.alterTable('payouts', (t) => {
      t.dropIndex(['batch_id', 'state']);
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.index(['batch_id', 'state']);
    });
    await knex.schema.alterTable('payouts', (t) => {
      t.dropIndex(['batch_id', 'state', 'line'], 'payouts_batch_state_line');
    });
  },
};

// payoutId and creation time are indexed only once set: no read looks for them being null, and intake writes
// two index entries less per row. (payout_id's index is dropped again by 0005.)
const PARTIAL_INDEXES = [
  { name: 'payouts_payout_id_index', columns: 'payout_id', set: 'payout_id' },
  { name: 'payouts_created_at', columns: 'created_at_ms, id', set: 'created_at_ms' },
] as const;

const setOnceIndexes: Migration = {
  name: '0004_set_once_indexes',
  async up(knex) {
    for (const i of PARTIAL_INDEXES) {
      await knex.raw(`DROP INDEX ${i.name}`);
      await knex.raw(`CREATE INDEX ${i.name} ON payouts (${i.columns}) WHERE ${i.set} IS NOT NULL`);
    }
  },
  async down(knex) {
    for (const i of PARTIAL_INDEXES) {
      await knex.raw(`DROP INDEX ${i.name}`);
      await knex.raw(`CREATE INDEX ${i.name} ON payouts (${i.columns})`);
    }
  },
};

// payout_id's only reader, a webhook's poll-soon, finds its row by the merchant reference.
const noPayoutIdIndex: Migration = {
  name: '0005_no_payout_id_index',
  async up(knex) {
    await knex.raw('DROP INDEX payouts_payout_id_index');
  },
  async down(knex) {
    await knex.raw('CREATE INDEX payouts_payout_id_index ON payouts (payout_id) WHERE payout_id IS NOT NULL');
  },
};

// The same rows hold a reference, stated without IN. The text must stay equal to REFERENCE_HOLDER_PREDICATE
// (insert-rows.ts), which the intake's INSERT names in its ON CONFLICT clause.
const HOLDER_PREDICATE_0006 = "state <> 'VALIDATED' AND state <> 'INVALID' AND state <> 'DUPLICATE' AND state <> 'NOT_SUBMITTED'";

const holderPredicateWithoutIn: Migration = {
  name: '0006_holder_predicate_without_in',
  async up(knex) {
    // In the migration's transaction: no moment without the guarantee, on either engine.
    await knex.raw('DROP INDEX payouts_reference_holder');
    await knex.raw(`CREATE UNIQUE INDEX payouts_reference_holder ON payouts (merchant_reference_id) WHERE ${HOLDER_PREDICATE_0006}`);
  },
  async down(knex) {
    await knex.raw('DROP INDEX payouts_reference_holder');
    await knex.raw(
      `CREATE UNIQUE INDEX payouts_reference_holder ON payouts (merchant_reference_id)
       WHERE state IN ('READY','CREATING','UNKNOWN','PENDING','PAID','CANCELLED','REJECTED')`,
    );
  },
};

// One partial index per state read by its own due column (PENDING, UNKNOWN, CREATING) instead of two over
// every row. Queries write the state into their text (rowsInState): a planner uses a partial index only
// when the query's text implies its predicate.
const PER_STATE_INDEXES = [
  { name: 'payouts_pending_due', state: 'PENDING', columns: 'next_poll_at, id' },
  { name: 'payouts_unknown_due', state: 'UNKNOWN', columns: 'next_attempt_at, id' },
  { name: 'payouts_creating_lease', state: 'CREATING', columns: 'lease_expires_at' },
] as const;

const perStateIndexes: Migration = {
  name: '0007_per_state_indexes',
  async up(knex) {
    for (const i of PER_STATE_INDEXES) await knex.raw(`CREATE INDEX ${i.name} ON payouts (${i.columns}) WHERE state = '${i.state}'`);
    await knex.raw('DROP INDEX payouts_state_next_attempt_at_index');
    await knex.raw('DROP INDEX payouts_state_next_poll_at_index');
  },
  async down(knex) {
    await knex.raw('CREATE INDEX payouts_state_next_attempt_at_index ON payouts (state, next_attempt_at)');
    await knex.raw('CREATE INDEX payouts_state_next_poll_at_index ON payouts (state, next_poll_at)');
    for (const i of PER_STATE_INDEXES) await knex.raw(`DROP INDEX ${i.name}`);
  },
};

// A row keeps its create request as a JSON array of its values (src/domain/request-values.ts) instead of the
// canonical JSON object. The list is written out here, not imported: this migration never changes.
const REQUEST_PATHS_0008 = [
  ['merchantReferenceId'],
  ['deductionCurrency'],
  ['payoutCurrency'],
  ['payoutAmount'],
  ['sender', 'firstName'],
  ['sender', 'lastName'],
  ['sender', 'country'],
  ['sender', 'idType'],
  ['sender', 'idValue'],
  ['beneficiary', 'accountName'],
  ['beneficiary', 'accountNumber'],
  ['beneficiary', 'bankCode'],
] as const;

/** The JSON value at `path` of `column` as SQL text (PostgreSQL), or as SQLite's json_extract gives it. */
function jsonAt0008(pg: boolean, column: string, path: readonly string[]): string {
  return pg ? `((${column})::json #>> '{${path.join(',')}}')` : `json_extract(${column}, '$.${path.join('.')}')`;
}

const requestValues: Migration = {
  name: '0008_request_values',
  async up(knex) {
    const pg = knex.client.config.client === 'pg';
    // Intake always stored every value as a JSON string (amounts too); anything else is refused, not turned into text.
    const notText = REQUEST_PATHS_0008.map((path) =>
      pg
        ? `json_typeof((request_json)::json #> '{${path.join(',')}}') IS DISTINCT FROM 'string'`
        : `json_type(request_json, '$.${path.join('.')}') IS NOT 'text'`,
    ).join(' OR ');
    const odd = (await knex('payouts').whereNotNull('request_json').andWhereRaw(`(${notText})`).first('id', 'line', 'batch_id')) as
      { id: number; line: number; batch_id: string } | undefined;
    if (odd) {
      throw new Error(
        `migration 0008: the stored request of batch ${odd.batch_id} line ${odd.line} (row ${odd.id}) does not hold every field as text; nothing was changed`,
      );
    }
    await knex.raw('ALTER TABLE payouts RENAME COLUMN request_json TO request_values');
    const values = REQUEST_PATHS_0008.map((path) => jsonAt0008(pg, 'request_values', path)).join(', ');
    await knex.raw(
      pg
        ? `UPDATE payouts SET request_values = json_build_array(${values})::text WHERE request_values IS NOT NULL`
        : `UPDATE payouts SET request_values = json_array(${values}) WHERE request_values IS NOT NULL`,
    );
  },
  async down(knex) {
    const pg = knex.client.config.client === 'pg';
    const at = (i: number): string => (pg ? `((request_values)::json ->> ${i})` : `json_extract(request_values, '$[${i}]')`);
    const object = pg ? 'json_build_object' : 'json_object';
    // The canonical object: keys sorted at every level.
    const request =
      `${object}('beneficiary', ${object}('accountName', ${at(9)}, 'accountNumber', ${at(10)}, 'bankCode', ${at(11)}), ` +
      `'deductionCurrency', ${at(1)}, 'merchantReferenceId', ${at(0)}, 'payoutAmount', ${at(3)}, 'payoutCurrency', ${at(2)}, ` +
      `'sender', ${object}('country', ${at(6)}, 'firstName', ${at(4)}, 'idType', ${at(7)}, 'idValue', ${at(8)}, 'lastName', ${at(5)}))`;
    await knex.raw(`UPDATE payouts SET request_values = ${request}${pg ? '::text' : ''} WHERE request_values IS NOT NULL`);
    await knex.raw('ALTER TABLE payouts RENAME COLUMN request_values TO request_json');
  },
};

// The row states that never move again, in lifecycle order, as they were when 0009 was written.
const FINAL_ROW_STATES_0009 = ['INVALID', 'DUPLICATE', 'NOT_SUBMITTED', 'PAID', 'CANCELLED', 'REJECTED'];

// A batch that ended with every row final keeps its rows' counts (counts.ts); batches that ended before are counted here.
const finalCounts: Migration = {
  name: '0009_final_counts',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.text('final_counts_json').nullable();
    });
    const ended = (await knex('batches').whereIn('state', ['REJECTED', 'DUPLICATE', 'COMPLETE']).pluck('id')) as string[];
    for (const id of ended) {
      const rows = (await knex('payouts').where({ batch_id: id }).select('state').count({ n: '*' }).groupBy('batch_id', 'state')) as {
        state: string;
        n: number | string;
      }[];
      if (rows.some((r) => !FINAL_ROW_STATES_0009.includes(r.state))) continue;
      const counts: Record<string, number> = {};
      for (const state of FINAL_ROW_STATES_0009) {
        const r = rows.find((x) => x.state === state);
        if (r) counts[state] = Number(r.n);
      }
      await knex('batches')
        .where({ id })
        .update({ final_counts_json: JSON.stringify(counts) });
    }
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('final_counts_json');
    });
  },
};

// What each instance last knew of the payout service's reachability, for `payoutd status` (src/store/service-health.ts).
const serviceHealth: Migration = {
  name: '0010_service_health',
  async up(knex) {
    await knex.schema.createTable('service_health', (t) => {
      t.string('instance_id', 128).notNullable();
      t.string('service', 64).notNullable();
      // closed, open or half-open (src/domain/service-health.ts).
      t.string('state', 16).notNullable();
      t.bigInteger('since').notNullable();
      t.string('last_error_code', 64).nullable();
      t.bigInteger('updated_at').notNullable();
      t.primary(['instance_id', 'service']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('service_health');
  },
};

// Whether a `.done` marker came with the file, so a batch read again after a restart judges its end the same way.
const doneMarker: Migration = {
  name: '0011_done_marker',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.boolean('done_marker').notNullable().defaultTo(false);
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('done_marker');
    });
  },
};

// A taken file watched after its claim (src/holds): when its upload was first seen going on, and its notice.
const uploadContinued: Migration = {
  name: '0012_upload_continued',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.bigInteger('file_changed_at').nullable();
      t.bigInteger('upload_continued_at').nullable();
      t.bigInteger('upload_continued_size').nullable();
      t.bigInteger('upload_continued_mtime_ms').nullable();
      t.text('upload_continued_note').nullable();
    });
    // A batch held for its file before this migration was held for it once already.
    await knex('batches')
      .where({ hold_code: 'FILE_CHANGED' })
      .update({ file_changed_at: knex.ref('updated_at') });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      for (const c of [
        'file_changed_at',
        'upload_continued_at',
        'upload_continued_size',
        'upload_continued_mtime_ms',
        'upload_continued_note',
      ])
        t.dropColumn(c);
    });
  },
};

// The text encoding a batch was read in when `batch.format.encoding: auto` decided it, for its ack to say.
const batchEncoding: Migration = {
  name: '0013_batch_encoding',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.string('encoding', 32).nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('encoding');
    });
  },
};

// Archive and retention (src/store/retention.ts): when a finished batch's taken file moved to the archive,
// and when retention removed its files and row details (its references and payout ids stay).
const archiveRetention: Migration = {
  name: '0014_archive_retention',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.bigInteger('archived_at').nullable();
      t.bigInteger('pruned_at').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('archived_at');
      t.dropColumn('pruned_at');
    });
  },
};

// Approval before money moves (src/approval): who uploaded each batch (the claimed file's owner), what an
// approval must cover, and every decision on it, kept for the audit. A decision is unique per approver and
// round, so one given twice (two instances reading one approval file) counts once.
const approvals: Migration = {
  name: '0015_approvals',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.string('uploaded_by', 128).nullable();
      t.integer('uploaded_by_uid').nullable();
      // null: approval not in use for the batch; NONE, REQUIRED, APPROVED, REJECTED, EXPIRED, REFUSED.
      t.string('approval_state', 16).nullable();
      t.integer('approval_round').notNullable().defaultTo(0);
      t.integer('approvals_needed').notNullable().defaultTo(0);
      // JSON [{code, text}]: why the batch waits (thresholds, limits).
      t.text('approval_reasons_json').nullable();
      // JSON {totals: {currency: decimal text}, rows, largest: {currency: decimal text}} of the rows to pay.
      t.text('approval_figures_json').nullable();
      t.bigInteger('approval_expires_at').nullable();
      // When the batch was let go to be paid (counts towards the rolling 24-hour limits from then).
      t.bigInteger('released_at').nullable();
      t.index(['approval_state']);
    });
    await knex.schema.createTable('batch_approvals', (t) => {
      t.bigIncrements('id').primary();
      t.string('batch_id', 40).notNullable().references('batches.id').onDelete('CASCADE');
      t.integer('round').notNullable();
      // approve, reject, expire, void, reopen, refuse-limit
      t.string('decision', 16).notNullable();
      t.string('approver', 128).nullable();
      t.integer('approver_uid').nullable();
      // A service account that named the approver (payoutd approve --as).
      t.string('agent', 128).nullable();
      // cli, sftp, console, daemon
      t.string('via', 16).notNullable();
      t.text('comment').nullable();
      t.string('sha256', 64).notNullable();
      t.text('figures_json').notNullable();
      t.bigInteger('decided_at').notNullable();
      t.string('instance_id', 128).nullable();
      t.unique(['batch_id', 'round', 'approver']);
      t.index(['batch_id', 'id']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('batch_approvals');
    await knex.schema.alterTable('batches', (t) => {
      t.dropIndex(['approval_state']);
    });
    await knex.schema.alterTable('batches', (t) => {
      for (const c of [
        'uploaded_by',
        'uploaded_by_uid',
        'approval_state',
        'approval_round',
        'approvals_needed',
        'approval_reasons_json',
        'approval_figures_json',
        'approval_expires_at',
        'released_at',
      ])
        t.dropColumn(c);
    });
  },
};

// Batch events and their delivery to notification channels (src/notify): one row per event, written in the
// transaction of the change it reports; the row is also the delivery's claim (one instance delivers it at a time).
const batchEvents: Migration = {
  name: '0016_batch_events',
  async up(knex) {
    await knex.schema.createTable('batch_events', (t) => {
      t.bigIncrements('seq').primary();
      t.string('id', 40).notNullable().unique();
      t.string('batch_id', 40).notNullable().references('batches.id').onDelete('CASCADE');
      t.string('type', 32).notNullable();
      t.text('data_json').notNullable();
      t.bigInteger('created_at').notNullable();
      // PENDING until every channel took it, then DELIVERED; GAVE_UP after notify.retryFor.
      t.string('delivery_state', 16).notNullable().defaultTo('PENDING');
      // JSON list of the channels that took it (each is delivered to at most once more after a crash).
      t.text('delivered_to').notNullable().defaultTo('[]');
      t.integer('attempts').notNullable().defaultTo(0);
      t.bigInteger('next_attempt_at').notNullable();
      t.text('last_error').nullable();
      t.string('lease_owner', 128).nullable();
      t.bigInteger('lease_expires_at').nullable();
      t.index(['batch_id', 'seq']);
      t.index(['delivery_state', 'next_attempt_at']);
    });
  },
  async down(knex) {
    await knex.schema.dropTable('batch_events');
  },
};

// The finance console (src/console): its users (a role, a scrypt hash or none for users the reverse proxy names,
// failed sign-ins for the lock-out), its sessions (kept as a hash of the cookie, with the CSRF token), and who
// uploaded a file through it (keyed by the name it was renamed to in the inbox and its bytes' hash, read when a
// batch of that file is shown or claimed: no trust in the file's owner).
const consoleTables: Migration = {
  name: '0017_console',
  async up(knex) {
    await knex.schema.createTable('console_users', (t) => {
      t.string('name', 128).primary();
      t.string('role', 16).notNullable();
      t.text('password_hash').nullable();
      t.integer('failed_attempts').notNullable().defaultTo(0);
      t.bigInteger('locked_until').nullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('updated_at').notNullable();
    });
    await knex.schema.createTable('console_sessions', (t) => {
      t.string('id_hash', 64).primary();
      t.string('user_name', 128).notNullable().references('console_users.name').onDelete('CASCADE');
      t.string('csrf_token', 64).notNullable();
      t.bigInteger('created_at').notNullable();
      t.bigInteger('expires_at').notNullable();
      t.index(['user_name']);
      t.index(['expires_at']);
    });
    await knex.schema.createTable('console_uploads', (t) => {
      t.increments('id').primary();
      t.string('file_name', 512).notNullable();
      t.string('sha256', 64).notNullable();
      t.bigInteger('size').notNullable();
      t.string('uploader', 128).notNullable();
      t.bigInteger('uploaded_at').notNullable();
      t.index(['file_name', 'sha256']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('console_uploads');
    await knex.schema.dropTableIfExists('console_sessions');
    await knex.schema.dropTableIfExists('console_users');
  },
};

// An operator's cancel (src/store/holds.ts: cancelReadyRows) stays on the batch: a row that comes back to READY
// later (its create never reached the service) is never sent, but made NOT_SUBMITTED for the same reason.
const batchCancel: Migration = {
  name: '0018_batch_cancel',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.bigInteger('cancelled_at').nullable();
      t.text('cancel_reason').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('cancelled_at');
      t.dropColumn('cancel_reason');
    });
  },
};

// A cancel ends a batch's wait for approval (src/store/cancels.ts); a batch cancelled while it waited, before
// that, still showed REQUIRED and could be approved after its cancel.
const cancelEndsApproval: Migration = {
  name: '0019_cancel_ends_approval',
  async up(knex) {
    await knex('batches').where({ approval_state: 'REQUIRED' }).whereNotNull('cancelled_at').update({ approval_state: 'CANCELLED' });
  },
  async down(knex) {
    await knex('batches').where({ approval_state: 'CANCELLED' }).update({ approval_state: 'REQUIRED' });
  },
};

// A payout answered for a row may be another's (a reference the service already held): the poller compares a
// readable record of it with the row until one was found to be the row's own (src/poll/poller.ts).
const payoutChecked: Migration = {
  name: '0020_payout_checked',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.bigInteger('payout_checked_at').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('payout_checked_at');
    });
  },
};

// A stored error names where finance finds it: its column's letter (from its position), and its file when that is
// not the batch's own (a sidecar `<name>.ctl`); before, `payoutd status` showed a sidecar's line as the batch's.
const errorPlace: Migration = {
  name: '0021_error_place',
  async up(knex) {
    await knex.schema.alterTable('batch_errors', (t) => {
      t.text('file').nullable();
      t.integer('column_index').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batch_errors', (t) => {
      t.dropColumn('file');
      t.dropColumn('column_index');
    });
  },
};

// A console upload records its file's inode (src/console/upload.ts), which link and the claim's rename keep: the daemon
// credits the taken file to the upload of that very file, not to a later upload of the same name and bytes.
const consoleUploadInode: Migration = {
  name: '0022_console_upload_inode',
  async up(knex) {
    await knex.schema.alterTable('console_uploads', (t) => {
      // Decimal text: an inode number may exceed a JS number's exact range.
      t.string('file_ino', 20).nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('console_uploads', (t) => {
      t.dropColumn('file_ino');
    });
  },
};

// The columns that hold what a file, the payout service or the configuration gives, with the length 0001-0022
// declared for each. Nothing bounds those values before they are stored: a file's cells, an unknown header, a
// service's answer, an instance id made from a host name. SQLite never enforces a declared length; PostgreSQL
// refuses a longer value (22001), and with it the whole transaction (a file's rows, a group of create answers).
const UNBOUNDED_0023: Readonly<Record<string, Readonly<Record<string, number>>>> = {
  batches: { file_name: 512, stored_path: 1024, control_path: 1024, lease_owner: 128, uploaded_by: 128 },
  batch_errors: { column_name: 256 },
  payouts: {
    merchant_reference_id: 128,
    payout_currency: 8,
    payout_amount: 64,
    deduction_currency: 8,
    payout_id: 128,
    service_status: 16,
    rate: 64,
    deduction_amount: 64,
    total_fee: 64,
    fee_currency: 8,
    create_time: 40,
    complete_time: 40,
    reason_code: 64,
    lease_owner: 64,
  },
  payout_history: { outcome: 64 },
  webhook_events: { event_id: 128, payout_id: 128, merchant_reference_id: 128, status: 16 },
  file_claims: { file_key: 700, instance_id: 128 },
  service_health: { instance_id: 128, last_error_code: 64 },
  batch_approvals: { approver: 128, agent: 128, instance_id: 128 },
  batch_events: { lease_owner: 128 },
  console_users: { name: 128 },
  console_sessions: { user_name: 128 },
  console_uploads: { file_name: 512, uploader: 128 },
};

/** One ALTER TABLE per table giving each of its columns in UNBOUNDED_0023 the type `typeOf(length)`. */
async function retype0023(knex: Knex, typeOf: (length: number) => string): Promise<void> {
  for (const [table, columns] of Object.entries(UNBOUNDED_0023)) {
    const changes = Object.entries(columns).map(([column, length]) => `ALTER COLUMN ${column} TYPE ${typeOf(length)}`);
    await knex.raw(`ALTER TABLE ${table} ${changes.join(', ')}`);
  }
}

// Those columns become text on PostgreSQL, as unbounded as SQLite keeps them (nothing to do there). varchar to
// text needs no rewrite of the table nor of its indexes.
const unboundedText: Migration = {
  name: '0023_unbounded_text',
  async up(knex) {
    if (knex.client.config.client === 'pg') await retype0023(knex, () => 'text');
  },
  async down(knex) {
    // A value stored longer since cannot go back: PostgreSQL refuses it, and nothing is changed.
    if (knex.client.config.client === 'pg') await retype0023(knex, (length) => `varchar(${length})`);
  },
};

// The search for orphan claims (src/ingest/orphans.ts) asks, once per rescan interval, which files in claimed/ a
// batch records; without an index each ask reads every batch ever taken. PostgreSQL gets a hash index: a btree
// entry is limited to about 2.7 KB, and a stored path has no such bound; only equality is ever asked.
const storedPathIndex: Migration = {
  name: '0024_stored_path_index',
  async up(knex) {
    if (knex.client.config.client === 'pg') await knex.raw('CREATE INDEX batches_stored_path ON batches USING hash (stored_path)');
    else await knex.raw('CREATE INDEX batches_stored_path ON batches (stored_path)');
  },
  async down(knex) {
    await knex.raw('DROP INDEX batches_stored_path');
  },
};

// A batch whose reading fails the same unexpected way again and again is refused after batch.readRetry.maxAttempts
// readings (src/daemon/file-reception.ts): the count is kept with the batch, so a restart does not start it over.
const readFailures: Migration = {
  name: '0025_read_failures',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.integer('read_failures').notNullable().defaultTo(0);
      t.text('read_failure_kind').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('read_failures');
      t.dropColumn('read_failure_kind');
    });
  },
};

// What a batch's accepted rows pay, per payout currency, beside totals_json (every data row of the file):
// status and the batch.accepted event state the former. Batches accepted before it get what is known for sure.
const acceptedTotals: Migration = {
  name: '0026_accepted_totals',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.text('accepted_totals_json').nullable();
    });
    const accepted = (await knex('batches')
      .whereNotNull('accepted_at')
      .select('id', 'invalid_count', 'totals_json', 'approval_figures_json')) as {
      id: string;
      invalid_count: number;
      totals_json: string | null;
      approval_figures_json: string | null;
    }[];
    for (const b of accepted) {
      // The approval gate's figures are the accepted rows' totals; with no row refused, so are the file's.
      const totals = b.approval_figures_json
        ? (JSON.parse(b.approval_figures_json) as { totals: Record<string, string> }).totals
        : Number(b.invalid_count) === 0 && b.totals_json
          ? (JSON.parse(b.totals_json) as Record<string, string>)
          : null;
      if (totals)
        await knex('batches')
          .where({ id: b.id })
          .update({ accepted_totals_json: JSON.stringify(totals) });
    }
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('accepted_totals_json');
    });
  },
};

// A row whose reference is a retry round keeps the base it retries, as spelled and as the key all its spellings
// share (src/domain/retry-reference.ts), so the acceptance finds every other round of that base through an index
// without parsing the references of a whole file. Both indexes hold only round rows: a file without any writes
// no entry in them. The rows stored before are filled in here with the intake's own parser, so a round stored
// before is found as one stored after.
const RETRY_ROUND_INDEXES = [
  { name: 'payouts_retry_key', columns: 'retry_key' },
  // With the state: a planner then prefers it to the index of (batch_id, state, line) over every row.
  { name: 'payouts_batch_retry_rounds', columns: 'batch_id, state' },
] as const;
const RETRY_ROUNDS_PAGE = 5_000;

const retryRounds: Migration = {
  name: '0027_retry_rounds',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.text('retry_base').nullable();
      t.text('retry_key').nullable();
    });
    for (const i of RETRY_ROUND_INDEXES) await knex.raw(`CREATE INDEX ${i.name} ON payouts (${i.columns}) WHERE retry_key IS NOT NULL`);
    for (let after = 0; ;) {
      const page = (await knex('payouts')
        .where('id', '>', after)
        .andWhere('merchant_reference_id', 'like', '%-R%')
        .orderBy('id')
        .limit(RETRY_ROUNDS_PAGE)
        .select('id', 'merchant_reference_id')) as { id: number | string; merchant_reference_id: string }[];
      for (const r of page) {
        const round = retryRound(r.merchant_reference_id);
        if (round) await knex('payouts').where({ id: r.id }).update({ retry_base: round.base, retry_key: round.key });
      }
      const last = page.at(-1);
      if (page.length < RETRY_ROUNDS_PAGE || last === undefined) break;
      after = Number(last.id);
    }
  },
  async down(knex) {
    for (const i of RETRY_ROUND_INDEXES) await knex.raw(`DROP INDEX ${i.name}`);
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('retry_base');
      t.dropColumn('retry_key');
    });
  },
};

// A row recorded final that the payout service's query contradicts (a webhook said otherwise and the query
// confirmed it), or whose check is still owed: kept out of retry files and told to finance (src/poll/checks.ts).
const serviceChecks: Migration = {
  name: '0028_service_checks',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.string('service_check', 16).nullable();
      t.bigInteger('service_check_at').nullable();
      t.text('service_note').nullable();
      t.bigInteger('service_noted_at').nullable();
    });
    // Both are NULL on all but a few rows: the poller and the finisher look them up on every pass.
    await knex.raw('CREATE INDEX payouts_service_check_due ON payouts (service_check_at) WHERE service_check IS NOT NULL');
    await knex.raw('CREATE INDEX payouts_service_noted ON payouts (service_noted_at) WHERE service_noted_at IS NOT NULL');
  },
  async down(knex) {
    await knex.raw('DROP INDEX payouts_service_check_due');
    await knex.raw('DROP INDEX payouts_service_noted');
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('service_check');
      t.dropColumn('service_check_at');
      t.dropColumn('service_note');
      t.dropColumn('service_noted_at');
    });
  },
};

// When retention began to remove a finished batch's files and row details (src/daemon/retention.ts), set before
// the first goes: a prune cut short leaves pruned_at unset with some of them gone, and every report must still
// say so rather than list its rows as whole.
const pruneStarted: Migration = {
  name: '0029_prune_started',
  async up(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.bigInteger('prune_started_at').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('prune_started_at');
    });
  },
};

// The acceptance's guard on retry rounds stops at the first row of a base in a given state, not after every
// round of that base. It holds only round rows, as 0027's indexes, and replaces 0027's index of retry_key alone.
const retryKeyState: Migration = {
  name: '0030_retry_key_state',
  async up(knex) {
    await knex.raw('CREATE INDEX payouts_retry_key_state ON payouts (retry_key, state) WHERE retry_key IS NOT NULL');
    await knex.raw('DROP INDEX payouts_retry_key');
  },
  async down(knex) {
    await knex.raw('CREATE INDEX payouts_retry_key ON payouts (retry_key) WHERE retry_key IS NOT NULL');
    await knex.raw('DROP INDEX payouts_retry_key_state');
  },
};

// A check made owed again while an answer to the earlier one was on its way must not be closed by that answer
// (service_check_round, raised by each); and a finished batch's result file is corrected only when a note differs
// from what its files last showed (service_note_shown), each correction under a name of its own
// (`<name>.result.corrected-<n>.csv`, n = result_corrections).
const serviceNoteShown: Migration = {
  name: '0031_service_note_shown',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.integer('service_check_round').notNullable().defaultTo(0);
      t.text('service_note_shown').nullable();
    });
    await knex.schema.alterTable('batches', (t) => {
      t.integer('result_corrections').notNullable().defaultTo(0);
    });
    // A note older than its batch's last result file is in that file.
    await knex.raw(
      `UPDATE payouts SET service_note_shown = service_note
       WHERE service_noted_at IS NOT NULL AND service_note IS NOT NULL
         AND service_noted_at <= (SELECT b.result_written_at FROM batches b WHERE b.id = payouts.batch_id)`,
    );
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('service_check_round');
      t.dropColumn('service_note_shown');
    });
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('result_corrections');
    });
  },
};

// A correction is written down before its file goes into the outbox: its number (result_corrections), and for each
// row it changes the note it shows and the note it supersedes; result_corrections_written says whose files are in.
// A stop in between writes the same file again from what was recorded, never other content under the same name.
const correctionIntent: Migration = {
  name: '0032_correction_intent',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.text('service_note_superseded').nullable();
      t.integer('service_note_corrected').nullable();
    });
    await knex.schema.alterTable('batches', (t) => {
      t.integer('result_corrections_written').notNullable().defaultTo(0);
    });
    // Corrections counted before were counted after their files were written.
    await knex.raw('UPDATE batches SET result_corrections_written = result_corrections');
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('service_note_superseded');
      t.dropColumn('service_note_corrected');
    });
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('result_corrections_written');
    });
  },
};

// The payout service this database's payouts are made with, recorded at the first start (src/store/service-identity.ts):
// a start configured for another one is refused, so payouts made on one service are never followed on another.
const serviceIdentity: Migration = {
  name: '0033_service_identity',
  async up(knex) {
    await knex.schema.createTable('service_identity', (t) => {
      // One row, id 1: a database has one payout service at a time.
      t.integer('id').primary();
      // "embedded", or the base URL without credentials or query (shownUrl).
      t.text('service').notNullable();
      t.text('merchant_code').nullable();
      t.bigInteger('recorded_at').notNullable();
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('service_identity');
  },
};

// The finish loop's reads of batches at every pass, each through an index of the few batches it can find, not a
// walk of every batch ever taken: the watch of taken files (a state, received since), the outbox repair (an ack or
// a refused batch's result file owed), the corrections owed, the archive and retention's choice of what is left to
// do. (state, received_at) replaces 0001's index of the state alone, its prefix. The partial indexes lead with the
// state too: SQLite plans without statistics, and an index constraining as many columns as another but smaller
// is the one it takes. The old webhook event ids are forgotten by their time received.
const BATCH_WORK_INDEXES_0034 = [
  { name: 'batches_unarchived', columns: 'state, received_at', where: 'archived_at IS NULL' },
  { name: 'batches_unpruned', columns: 'state, received_at', where: 'pruned_at IS NULL' },
  { name: 'batches_ack_owed', columns: 'state', where: 'ack_written_at IS NULL' },
  { name: 'batches_result_owed', columns: 'state', where: 'result_written_at IS NULL AND row_count > 0' },
  { name: 'batches_correction_owed', columns: 'id', where: 'result_corrections > result_corrections_written' },
] as const;

const batchWorkIndexes: Migration = {
  name: '0034_batch_work_indexes',
  async up(knex) {
    await knex.raw('CREATE INDEX batches_state_received ON batches (state, received_at)');
    await knex.raw('DROP INDEX batches_state_index');
    for (const i of BATCH_WORK_INDEXES_0034) await knex.raw(`CREATE INDEX ${i.name} ON batches (${i.columns}) WHERE ${i.where}`);
    await knex.raw('CREATE INDEX webhook_events_received_at ON webhook_events (received_at)');
  },
  async down(knex) {
    await knex.raw('DROP INDEX webhook_events_received_at');
    for (const i of BATCH_WORK_INDEXES_0034) await knex.raw(`DROP INDEX ${i.name}`);
    await knex.raw('CREATE INDEX batches_state_index ON batches (state)');
    await knex.raw('DROP INDEX batches_state_received');
  },
};

// Retention keeps, of a CANCELLED row's request, the leading zeros of its identifiers (zero_padding: counts and a short
// hash, no account number), so a retry row that lost them is still refused once its original's request is gone.
// prune_keeps_zeros tells a batch whose pruning began so (its rows without zero_padding had none) from one pruned
// before (nothing is known of its rows).
const zeroPadding: Migration = {
  name: '0035_zero_padding',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.text('zero_padding').nullable();
    });
    await knex.schema.alterTable('batches', (t) => {
      t.boolean('prune_keeps_zeros').notNullable().defaultTo(false);
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('zero_padding');
    });
    await knex.schema.alterTable('batches', (t) => {
      t.dropColumn('prune_keeps_zeros');
    });
  },
};

// The currency the service's record names for a payout's deduction amount: a file pairs that amount with it, never
// with the request's currency when the service debited another.
const serviceDeductionCurrency: Migration = {
  name: '0036_service_deduction_currency',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      // Text: the service's answer bounds it nowhere (see 0023).
      t.text('service_deduction_currency').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('service_deduction_currency');
    });
  },
};

// The latest end a reconciliation report fixed for its period (src/store/created-at.ts): a payout creation recorded
// after it is stamped no earlier, whatever the clock of the instance recording it says.
const reportEnds: Migration = {
  name: '0037_report_ends',
  async up(knex) {
    await knex.schema.createTable('report_ends', (t) => {
      // One row, id 1: only the latest end matters.
      t.integer('id').primary();
      t.bigInteger('latest_end_ms').notNullable();
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('report_ends');
  },
};

// A poll's answer read before a payout.updated event made its row due must not settle the row over what the event
// says: poll_round, raised by each such event, is read with the row when its query is claimed, and each move the
// answer makes needs the row still in that round (src/poll/poller.ts).
const pollRound: Migration = {
  name: '0038_poll_round',
  async up(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.integer('poll_round').notNullable().defaultTo(0);
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('poll_round');
    });
  },
};

// Each channel's delivery of a batch event (src/notify), with its own attempts, backoff and claim: a channel that is
// slow or down holds back no other. A channel's row is made when it first claims the event; until then the event's
// own delivery columns (0016's record, kept for all channels together) are where it starts. The channels 0016
// recorded as having taken an event still owed to another are copied here, so none of them gets it again.
const eventDeliveries: Migration = {
  name: '0039_event_deliveries',
  async up(knex) {
    await knex.schema.createTable('batch_event_deliveries', (t) => {
      t.bigInteger('event_seq').notNullable().references('batch_events.seq').onDelete('CASCADE');
      // The channel as logs and metrics name it: `webhook:<name>`, `email`, `status-file`.
      t.text('channel').notNullable();
      // PENDING until the channel took it (DELIVERED) or notify.retryFor ran out (GAVE_UP).
      t.string('state', 16).notNullable();
      t.integer('attempts').notNullable();
      t.bigInteger('next_attempt_at').notNullable();
      t.text('last_error').nullable();
      t.text('lease_owner').nullable();
      t.bigInteger('lease_expires_at').nullable();
      t.primary(['event_seq', 'channel']);
    });
    const owed = (await knex('batch_events')
      .where({ delivery_state: 'PENDING' })
      .whereNot({ delivered_to: '[]' })
      .select('seq', 'delivered_to', 'attempts', 'next_attempt_at')) as Record<string, unknown>[];
    for (const r of owed) {
      const channels = JSON.parse(String(r['delivered_to'])) as string[];
      if (channels.length === 0) continue;
      await knex('batch_event_deliveries').insert(
        channels.map((channel) => ({
          event_seq: r['seq'],
          channel,
          state: 'DELIVERED',
          attempts: r['attempts'],
          next_attempt_at: r['next_attempt_at'],
        })),
      );
    }
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('batch_event_deliveries');
  },
};

// Each row of an all-digit reference keeps its digits without the leading zeros (src/domain/leading-zeros.ts,
// referenceDigits), so the acceptance finds `123` where `000123` is held (a file opened and saved by a spreadsheet)
// through an index, without reading the references of a whole file. Both indexes hold only such rows: a file of other
// references writes no entry in them. The rows stored before are filled in here, the rule written out in SQL.
const REFERENCE_DIGITS_INDEXES = [
  { name: 'payouts_reference_digits', columns: 'reference_digits' },
  // Whether a batch has any: a file of other references is not read again.
  { name: 'payouts_batch_reference_digits', columns: 'batch_id' },
] as const;

const referenceDigitsColumn: Migration = {
  name: '0040_reference_digits',
  async up(knex) {
    const pg = knex.client.config.client === 'pg';
    await knex.schema.alterTable('payouts', (t) => {
      t.text('reference_digits').nullable();
    });
    const allDigits = pg
      ? "merchant_reference_id ~ '^[0-9]+$'"
      : "merchant_reference_id <> '' AND merchant_reference_id NOT GLOB '*[^0-9]*'";
    await knex.raw(
      `UPDATE payouts SET reference_digits = CASE WHEN ltrim(merchant_reference_id, '0') = '' THEN '0' ELSE ltrim(merchant_reference_id, '0') END
       WHERE ${allDigits}`,
    );
    for (const i of REFERENCE_DIGITS_INDEXES)
      await knex.raw(`CREATE INDEX ${i.name} ON payouts (${i.columns}) WHERE reference_digits IS NOT NULL`);
  },
  async down(knex) {
    for (const i of REFERENCE_DIGITS_INDEXES) await knex.raw(`DROP INDEX ${i.name}`);
    await knex.schema.alterTable('payouts', (t) => {
      t.dropColumn('reference_digits');
    });
  },
};

// What a history entry records beyond its words, as JSON text: a check's report of the row's own payout and the
// other payouts under its reference (src/domain/service-check.ts), so a notice tells them apart without reading
// them back from the note. Entries written before have none.
const historyData: Migration = {
  name: '0041_history_data',
  async up(knex) {
    await knex.schema.alterTable('payout_history', (t) => {
      t.text('data').nullable();
    });
  },
  async down(knex) {
    await knex.schema.alterTable('payout_history', (t) => {
      t.dropColumn('data');
    });
  },
};

// Each channel's delivery record of an event is made once, just after the event is stored (src/notify), and a channel
// finds its work in its own records: due ones by (channel, state, next_attempt_at), and an event is done when its
// last record ends, not by a look over every pending event. deliveries_made_at says the records of an event are made;
// those of an event still pending when this runs are made at the next start, from 0016's attempts and next attempt,
// which only start a channel's record now. 0016's delivered_to, last_error and lease columns are no longer written.
const eventDeliveryRecords: Migration = {
  name: '0042_event_delivery_records',
  async up(knex) {
    await knex.schema.alterTable('batch_events', (t) => {
      t.bigInteger('deliveries_made_at').nullable();
      t.index(['deliveries_made_at', 'seq']);
    });
    await knex('batch_events')
      .whereNot({ delivery_state: 'PENDING' })
      .update({ deliveries_made_at: knex.ref('created_at') });
    await knex.schema.alterTable('batch_event_deliveries', (t) => {
      // Named: knex's own name is longer than PostgreSQL keeps.
      t.index(['channel', 'state', 'next_attempt_at', 'event_seq'], 'batch_event_deliveries_due');
    });
  },
  async down(knex) {
    await knex.schema.alterTable('batch_event_deliveries', (t) => {
      t.dropIndex(['channel', 'state', 'next_attempt_at', 'event_seq'], 'batch_event_deliveries_due');
    });
    await knex.schema.alterTable('batch_events', (t) => {
      t.dropIndex(['deliveries_made_at', 'seq']);
      t.dropColumn('deliveries_made_at');
    });
  },
};

// Sign-in failures are counted per (name, client address), so a guesser locks a name out only from their own
// address; per 3 hex digits of the name's SHA-256, so a password typed into the name box cannot be told from
// it. console_users' failed_attempts and locked_until are no longer read: lock-outs in force are not carried over.
const signInFailures: Migration = {
  name: '0043_sign_in_failures',
  async up(knex) {
    await knex.schema.createTable('console_sign_in_failures', (t) => {
      t.string('name_hash', 64).notNullable();
      t.string('address', 64).notNullable();
      t.integer('failed_attempts').notNullable();
      t.bigInteger('locked_until').nullable();
      t.bigInteger('updated_at').notNullable();
      t.primary(['name_hash', 'address']);
      // Quiet pairs are forgotten by their updated_at on each counted sign-in.
      t.index(['updated_at']);
    });
  },
  async down(knex) {
    await knex.schema.dropTableIfExists('console_sign_in_failures');
  },
};

// Builds before this one left a row READY or CREATING without a payout, with a query of its reference owed, once a
// create of it answered with a payout after its claim ended: it was sent again before being asked, and may be paid
// already. Such a row is made UNKNOWN, as this build makes it (src/store/unfollowed-payouts.ts): its reference is
// asked before anything is sent for it. Every instance is stopped while migrations run, so no create of it is out.
const askBeforeSendingAgain: Migration = {
  name: '0044_ask_before_sending_again',
  async up(knex) {
    const now = Date.now();
    const rows = (await knex('payouts')
      .whereIn('state', ['READY', 'CREATING'])
      .whereNull('payout_id')
      .whereNotNull('service_check')
      .andWhere('create_attempts', '>', 0)
      .select('id', 'state')) as { id: number; state: string }[];
    for (const r of rows) {
      await knex('payouts')
        .where({ id: r.id, state: r.state })
        .update({ state: 'UNKNOWN', next_attempt_at: now, unknown_since: now, lease_owner: null, lease_expires_at: null, updated_at: now });
      await knex('payout_history').insert({
        payout_row_id: r.id,
        at: now,
        event: 'asked-before-sending',
        from_state: r.state,
        to_state: 'UNKNOWN',
        detail: 'a payout made by a late create of this row may exist: its reference is asked before anything is sent for it',
      });
    }
  },
  async down() {
    // The rows stay UNKNOWN: their query decides them, as it would have before.
  },
};

export const MIGRATIONS: readonly Migration[] = [
  initial,
  instances,
  claimOrder,
  setOnceIndexes,
  noPayoutIdIndex,
  holderPredicateWithoutIn,
  perStateIndexes,
  requestValues,
  finalCounts,
  serviceHealth,
  doneMarker,
  uploadContinued,
  batchEncoding,
  archiveRetention,
  approvals,
  batchEvents,
  consoleTables,
  batchCancel,
  cancelEndsApproval,
  payoutChecked,
  errorPlace,
  consoleUploadInode,
  unboundedText,
  storedPathIndex,
  readFailures,
  acceptedTotals,
  retryRounds,
  serviceChecks,
  pruneStarted,
  retryKeyState,
  serviceNoteShown,
  correctionIntent,
  serviceIdentity,
  batchWorkIndexes,
  zeroPadding,
  serviceDeductionCurrency,
  reportEnds,
  pollRound,
  eventDeliveries,
  referenceDigitsColumn,
  historyData,
  eventDeliveryRecords,
  signInFailures,
  askBeforeSendingAgain,
];

export const migrationSource: Knex.MigrationSource<Migration> = {
  getMigrations: () => Promise.resolve([...MIGRATIONS]),
  getMigrationName: (m) => m.name,
  getMigration: (m) => Promise.resolve({ up: m.up, down: m.down }),
};

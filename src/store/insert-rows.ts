/**
 * The intake's inserts: the rows of a batch as its reader hands them over,
 * in multi-row statements, each chunk in one transaction with the renewal
 * of the reader's lease.
 */
import type { Knex } from 'knex';
import { REFERENCE_FREE_STATES } from '../domain/lifecycle.js';
import { isPostgres, type Database } from './db.js';
import { claimBatchLease } from './batches.js';
import { insertValueRows } from './multi-row-insert.js';
import { RowStateError } from './payouts.js';

/**
 * A new row as the reader produced it. A valid row goes in READY: it holds
 * its reference from its insert, and the unique index on held references
 * finds a reference used twice as the row goes in, instead of a second pass
 * over every row. READY rows of a batch still being read are not sent:
 * creates are only claimed from ACTIVE batches. VALIDATED is a valid row
 * waiting for the acceptance to decide (see insertRows).
 */
export interface NewPayoutRow {
  batchId: string;
  line: number;
  merchantReferenceId: string;
  state: 'READY' | 'VALIDATED' | 'INVALID';
  requestValues: string | null;
  payoutCurrency: string | null;
  payoutAmount: string | null;
  deductionCurrency: string | null;
  reasonCode: string | null;
  reason: string | null;
}

const INSERT_COLUMNS = [
  'batch_id',
  'line',
  'merchant_reference_id',
  'state',
  'request_values',
  'payout_currency',
  'payout_amount',
  'deduction_currency',
  'reason_code',
  'reason',
  'next_attempt_at',
  'updated_at',
] as const;

/**
 * The predicate of the partial unique index `payouts_reference_holder` (migration 0006), which ON CONFLICT
 * must name word for word: not one of the states that leave a reference free.
 */
const REFERENCE_HOLDER_PREDICATE = REFERENCE_FREE_STATES.map((s) => `state <> '${s}'`).join(' AND ');

/** A READY row whose reference another row holds is not inserted by the statement; insertRows stores it VALIDATED. */
const SKIP_HELD_REFERENCES = `ON CONFLICT (merchant_reference_id) WHERE ${REFERENCE_HOLDER_PREDICATE} DO NOTHING`;

/** The rows' values in INSERT_COLUMNS order, row after row; a READY row is due from its insert (its batch's acceptance lets it be claimed). */
function insertValues(rows: readonly NewPayoutRow[], now: number): Knex.Value[] {
  const values: Knex.Value[] = [];
  for (const r of rows) {
    const due = r.state === 'READY' ? now : null;
    values.push(r.batchId, r.line, r.merchantReferenceId, r.state, r.requestValues, r.payoutCurrency, r.payoutAmount);
    values.push(r.deductionCurrency, r.reasonCode, r.reason, due, now);
  }
  return values;
}

/**
 * Stores every row given, in multi-row INSERTs (knex's per-row query building would dominate a million-row
 * ingest). A READY row whose reference is already held (by an earlier row of the same file, or by a row of
 * another batch) is skipped by its statement and then stored VALIDATED, for the acceptance to name the clash;
 * any other constraint (a line stored twice) fails the call.
 */
export async function insertRows(db: Database | Knex.Transaction, given: NewPayoutRow[], now: number): Promise<void> {
  // PostgreSQL: an insert meeting a reference another open transaction just stored waits for that transaction.
  // Two instances storing files that share references in different orders would wait for each other (a deadlock
  // aborts one); in one order of references, the later one only waits. (SQLite has one writer at a time.)
  const rows = isPostgres(db) ? [...given].sort(byReference) : given;
  const inserted = await insertValueRows(db, 'payouts', INSERT_COLUMNS, insertValues(rows, now), SKIP_HELD_REFERENCES);
  if (inserted < rows.length) await insertSetAside(db, rows, now);
}

/** The reader of a batch: the lease it renews with each chunk it stores. */
export interface ReaderLease {
  batchId: string;
  instanceId: string;
  leaseMs: number;
}

/**
 * A chunk of a batch still being read, stored in one transaction with the renewal of the reader's lease
 * (another instance takes over a batch whose reader died): one commit per chunk instead of two.
 */
export async function insertRowsWhileReading(db: Database, lease: ReaderLease, rows: NewPayoutRow[], now: number): Promise<void> {
  await db.transaction(async (trx) => {
    await claimBatchLease(trx, lease.batchId, lease.instanceId, lease.leaseMs, now);
    await insertRows(trx, rows, now);
  });
}

function byReference(a: NewPayoutRow, b: NewPayoutRow): number {
  return a.merchantReferenceId < b.merchantReferenceId ? -1 : a.merchantReferenceId > b.merchantReferenceId ? 1 : a.line - b.line;
}

/** The rows the statements skipped (their reference is held), stored VALIDATED. */
async function insertSetAside(db: Database | Knex.Transaction, rows: NewPayoutRow[], now: number): Promise<void> {
  const skipped: NewPayoutRow[] = [];
  for (const batchId of new Set(rows.map((r) => r.batchId))) {
    const ofBatch = rows.filter((r) => r.batchId === batchId);
    const lines = ofBatch.map((r) => r.line);
    const stored = new Set(
      (await db('payouts')
        .where('batch_id', batchId)
        .whereBetween('line', [lines.reduce((a, b) => Math.min(a, b)), lines.reduce((a, b) => Math.max(a, b))])
        .pluck('line')) as number[],
    );
    for (const r of ofBatch) if (!stored.has(r.line)) skipped.push(r);
  }
  const unexpected = skipped.find((r) => r.state !== 'READY');
  if (unexpected)
    throw new RowStateError('INSERT_INCOMPLETE', `row at line ${unexpected.line} of batch ${unexpected.batchId} was not stored`);
  const waiting = skipped.map((r): NewPayoutRow => ({ ...r, state: 'VALIDATED' }));
  await insertValueRows(db, 'payouts', INSERT_COLUMNS, insertValues(waiting, now));
}

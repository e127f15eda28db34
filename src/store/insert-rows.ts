/** The intake's inserts: a batch's rows in multi-row statements, each chunk in one transaction with the reader's lease. */
import type { Knex } from 'knex';
import { referenceDigits } from '../domain/leading-zeros.js';
import { REFERENCE_FREE_STATES } from '../domain/lifecycle.js';
import { retryRound } from '../domain/retry-reference.js';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { holdReaderLease, type ReaderLease } from './batches.js';
import { insertValueRows, type InsertedValue } from './multi-row-insert.js';
import { RowStateError } from './payouts.js';

/**
 * A new row as the reader produced it. A valid row goes in READY, holding its reference from its insert (the
 * unique index finds a reference used twice as the row goes in); it is sent only once its batch is ACTIVE.
 * VALIDATED: a valid row waiting for the acceptance (see insertRows).
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

/** Set only on a retry round's row (migration 0027): a chunk without any leaves them out, NULL by default. */
const ROUND_COLUMNS = ['retry_base', 'retry_key'] as const;
/** Set only on a row of an all-digit reference (migration 0040): likewise left out of a chunk without any. */
const DIGITS_COLUMNS = ['reference_digits'] as const;

/** The predicate of the partial unique index `payouts_reference_holder`, which ON CONFLICT must name word for word. */
const REFERENCE_HOLDER_PREDICATE = REFERENCE_FREE_STATES.map((s) => `state <> '${s}'`).join(' AND ');

/** A READY row whose reference another row holds is not inserted by the statement; insertRows stores it VALIDATED. */
const SKIP_HELD_REFERENCES = `ON CONFLICT (merchant_reference_id) WHERE ${REFERENCE_HOLDER_PREDICATE} DO NOTHING`;

/**
 * The columns and each row's values in their order; a READY row is due from its insert (its batch's acceptance
 * lets it be claimed). A retry round keeps the base it retries, and an all-digit reference its digits without
 * leading zeros, which the acceptance checks (./acceptance.ts).
 */
function insertValues(rows: readonly NewPayoutRow[], now: number): { columns: readonly string[]; values: InsertedValue[][] } {
  const rounds = rows.map((r) => retryRound(r.merchantReferenceId));
  const withRounds = rounds.some((r) => r !== null);
  const digits = rows.map((r) => referenceDigits(r.merchantReferenceId));
  const withDigits = digits.some((d) => d !== null);
  const values = rows.map((r, i): InsertedValue[] => {
    const row: InsertedValue[] = [
      r.batchId,
      r.line,
      r.merchantReferenceId,
      r.state,
      r.requestValues,
      r.payoutCurrency,
      r.payoutAmount,
      r.deductionCurrency,
      r.reasonCode,
      r.reason,
      r.state === 'READY' ? now : null,
      now,
    ];
    if (withRounds) row.push(rounds[i]?.base ?? null, rounds[i]?.key ?? null);
    if (withDigits) row.push(digits[i] ?? null);
    return row;
  });
  const columns = [...INSERT_COLUMNS, ...(withRounds ? ROUND_COLUMNS : []), ...(withDigits ? DIGITS_COLUMNS : [])];
  return { columns, values };
}

/**
 * Stores every row given, in multi-row INSERTs. A READY row whose reference is already held is skipped by its
 * statement and then stored VALIDATED, for the acceptance to name the clash; any other constraint fails.
 */
export async function insertRows(db: Database | Knex.Transaction, given: NewPayoutRow[], now: number): Promise<void> {
  // PostgreSQL: inserts of shared references in different orders by two instances could deadlock; one order only waits.
  const rows = isPostgres(db) ? [...given].sort(byReference) : given;
  const { columns, values } = insertValues(rows, now);
  const inserted = await insertValueRows(db, 'payouts', columns, values, SKIP_HELD_REFERENCES);
  if (inserted < rows.length) await insertSetAside(db, rows, now);
}

/**
 * A chunk of a batch still being read, stored in one transaction with the renewal of the reader's lease. A
 * reader whose batch another instance took over (its lease ran out) gets BATCH_LEASE_LOST and stores nothing:
 * the rows it stored before were cleared by the new reading, so these would leave the batch with rows missing.
 */
export async function insertRowsWhileReading(db: Database, lease: ReaderLease, rows: NewPayoutRow[], now: number): Promise<void> {
  await writeTransaction(db, async (trx) => {
    await holdReaderLease(trx, lease, now);
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
  const { columns, values } = insertValues(waiting, now);
  await insertValueRows(db, 'payouts', columns, values);
}

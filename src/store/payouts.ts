/** Payout rows: the PayoutIntent of every CSV row, its state and what the service said of it; the record and single-row reads. */
import { setImmediate } from 'node:timers/promises';
import type { Knex } from 'knex';
import type { RowState } from '../domain/lifecycle.js';
import type { ServiceCheckKind } from '../domain/service-check.js';
import { PayoutdError } from '../domain/errors.js';
import type { CreatedWhenWritten } from './created-at.js';
import { writeTransaction, type Database } from './db.js';
import { fromColumnValues, toColumnValues } from './columns.js';

export interface PayoutRow {
  id: number;
  batchId: string;
  line: number;
  merchantReferenceId: string;
  state: RowState;
  /** The create request's values as a JSON array (src/domain/request-values.ts); null for a row that failed validation. */
  requestValues: string | null;
  /**
   * The money cells as the sender wrote them where that is not the request's value; null when empty or equal
   * to the request's value (src/store/request-fields.ts).
   */
  payoutCurrency: string | null;
  payoutAmount: string | null;
  deductionCurrency: string | null;
  payoutId: string | null;
  serviceStatus: string | null;
  rate: string | null;
  deductionAmount: string | null;
  /**
   * The currency the service's record of the payout names for deductionAmount (null: no record read yet, the
   * create's answer names none and is in the request's). Files show it where it is not the request's.
   */
  serviceDeductionCurrency: string | null;
  totalFee: string | null;
  feeCurrency: string | null;
  createTime: string | null;
  completeTime: string | null;
  reasonCode: string | null;
  reason: string | null;
  createAttempts: number;
  unknownSince: number | null;
  nextAttemptAt: number | null;
  createdAtMs: number | null;
  /** When a readable record of its payout was found to be the row's own (currency and amount); null until then. */
  payoutCheckedAt: number | null;
  /**
   * A query owed to check this row against the service (a webhook contradicted it): of its payout (`PAYOUT`) or of
   * its reference (`REFERENCE`, another payout was named under it), due at serviceCheckAt; null when none is owed.
   */
  serviceCheck: ServiceCheckKind | null;
  serviceCheckAt: number | null;
  /** Raised each time a check is made owed: an answer to an earlier round does not close a later one. */
  serviceCheckRound: number;
  /** What finance is told of the row while the service is being asked, or since it contradicted the row; null: nothing. */
  serviceNote: string | null;
  /** When serviceNote last changed; null: the row never had one. */
  serviceNotedAt: number | null;
  /** The note as the batch's last result file showed it (null: none); a finished batch whose note differs gets a corrected one. */
  serviceNoteShown: string | null;
  /** The note the file before correction serviceNoteCorrected showed (what that correction supersedes). */
  serviceNoteSuperseded: string | null;
  /** The latest corrected result file that changed this row's note (its n); null: none. */
  serviceNoteCorrected: number | null;
  nextPollAt: number | null;
  /** Raised each time a webhook makes the row due: an answer to a query sent before does not apply. */
  pollRound: number;
  pollCount: number;
  lastPolledAt: number | null;
  staleFlaggedAt: number | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  updatedAt: number;
}

/** Each field of a PayoutRow and its column. */
export const COLUMNS: Record<keyof PayoutRow, string> = {
  id: 'id',
  batchId: 'batch_id',
  line: 'line',
  merchantReferenceId: 'merchant_reference_id',
  state: 'state',
  requestValues: 'request_values',
  payoutCurrency: 'payout_currency',
  payoutAmount: 'payout_amount',
  deductionCurrency: 'deduction_currency',
  payoutId: 'payout_id',
  serviceStatus: 'service_status',
  rate: 'rate',
  deductionAmount: 'deduction_amount',
  serviceDeductionCurrency: 'service_deduction_currency',
  totalFee: 'total_fee',
  feeCurrency: 'fee_currency',
  createTime: 'create_time',
  completeTime: 'complete_time',
  reasonCode: 'reason_code',
  reason: 'reason',
  createAttempts: 'create_attempts',
  unknownSince: 'unknown_since',
  nextAttemptAt: 'next_attempt_at',
  createdAtMs: 'created_at_ms',
  payoutCheckedAt: 'payout_checked_at',
  serviceCheck: 'service_check',
  serviceCheckAt: 'service_check_at',
  serviceCheckRound: 'service_check_round',
  serviceNote: 'service_note',
  serviceNotedAt: 'service_noted_at',
  serviceNoteShown: 'service_note_shown',
  serviceNoteSuperseded: 'service_note_superseded',
  serviceNoteCorrected: 'service_note_corrected',
  nextPollAt: 'next_poll_at',
  pollRound: 'poll_round',
  pollCount: 'poll_count',
  lastPolledAt: 'last_polled_at',
  staleFlaggedAt: 'stale_flagged_at',
  leaseOwner: 'lease_owner',
  leaseExpiresAt: 'lease_expires_at',
  updatedAt: 'updated_at',
};

/**
 * What a move writes of a row. A creation's time is never a number decided beforehand: it is read when written
 * (./created-at.ts), or cleared (null) with the payout.
 */
export type PayoutRowPatch = Partial<Omit<PayoutRow, 'id' | 'batchId' | 'line' | 'merchantReferenceId' | 'createdAtMs'>> & {
  createdAtMs?: CreatedWhenWritten | null;
};

export function toColumns(patch: Partial<PayoutRow>): Record<string, unknown> {
  return toColumnValues(COLUMNS, patch);
}

export function fromColumns(r: Record<string, unknown>): PayoutRow {
  return fromColumnValues<PayoutRow>(COLUMNS, r);
}

export class RowStateError extends PayoutdError {
  override readonly name = 'RowStateError';
}

export async function getRow(db: Database | Knex.Transaction, id: number): Promise<PayoutRow | undefined> {
  const r = (await db('payouts').where({ id }).first()) as Record<string, unknown> | undefined;
  return r ? fromColumns(r) : undefined;
}

export async function rowsByReference(db: Database, merchantReferenceId: string): Promise<PayoutRow[]> {
  const rows = (await db('payouts').where({ merchant_reference_id: merchantReferenceId }).orderBy('id')) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

/** The states read by their state alone, each through a partial index of its own (migration 0007). */
export type IndexedState = 'CREATING' | 'UNKNOWN' | 'PENDING';
const INDEXED_STATES: readonly string[] = ['CREATING', 'UNKNOWN', 'PENDING'] satisfies IndexedState[];

/**
 * The rows of one of those states. The state is written into the SQL text, not bound: a planner uses a
 * partial index only when the query's own text implies its predicate. It comes from a closed list, checked
 * here, so nothing else ever reaches the text.
 */
export function rowsInState(db: Database | Knex.Transaction, state: IndexedState): Knex.QueryBuilder {
  if (!INDEXED_STATES.includes(state)) throw new RowStateError('ROW_STATE', `no partial index covers state ${JSON.stringify(state)}`);
  return db('payouts').where(db.raw(`state = '${state}'`));
}

/** The rows `rows()` selects, in line order, a page at a time by keyset on line (a large batch never sits in memory). */
export async function* pagesByLine<T extends { line: number }>(rows: () => Knex.QueryBuilder, pageSize: number): AsyncGenerator<T[]> {
  for (let afterLine = -1; ;) {
    const page = (await rows().andWhere('line', '>', afterLine).orderBy('line').limit(pageSize)) as T[];
    const last = page[page.length - 1];
    if (last === undefined) return;
    yield page;
    if (page.length < pageSize) return;
    afterLine = last.line;
  }
}

/** Rows of a batch changed per transaction by inLineRanges. */
const ROWS_PER_RANGE = 20_000;

/** The lines of one range of inLineRanges: those after `after`, up to `upTo` (null: to the batch's last line). */
export interface LineRange {
  after: number;
  upTo: number | null;
}

/**
 * Runs `work` on a batch's rows a range of lines at a time, each range in a write transaction of its own: one
 * statement over every row of a large batch would hold the write lock, and on SQLite the thread, for seconds.
 * `rows()` is the range's rows, for `work` to delete or update; `range` its lines, for a query of its own.
 * `committed` is told of each range once its transaction committed: what a caller cut short did is what it was told.
 */
export async function inLineRanges(
  db: Database,
  batchId: string,
  work: (trx: Knex.Transaction, rows: () => Knex.QueryBuilder, range: LineRange) => Promise<void>,
  rowsPerRange = ROWS_PER_RANGE,
  committed?: (range: LineRange) => void,
): Promise<void> {
  for (let afterLine = -1, more = true; more;) {
    const range = await writeTransaction(db, async (trx) => {
      const after = afterLine;
      const last = (await trx('payouts')
        .where({ batch_id: batchId })
        .andWhere('line', '>', after)
        .orderBy('line')
        .offset(rowsPerRange - 1)
        .first('line')) as { line: number } | undefined;
      const range = { after, upTo: last?.line ?? null };
      await work(
        trx,
        () => {
          const q = trx('payouts').where({ batch_id: batchId }).andWhere('line', '>', after);
          return last ? q.andWhere('line', '<=', last.line) : q;
        },
        range,
      );
      return range;
    });
    committed?.(range);
    more = range.upTo !== null;
    if (range.upTo !== null) afterLine = range.upTo;
    // SQLite's statements run on this thread and resolve at once: without a turn here no timer or socket is served.
    if (more) await setImmediate();
  }
}

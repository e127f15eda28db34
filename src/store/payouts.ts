/**
 * Payout rows in the database: the PayoutIntent of every CSV row, its state
 * and every attempt made for it. Each state move is guarded by the state it
 * moves from (UPDATE … WHERE state = from), checked against the domain's
 * lifecycle, and written with a history record in the same transaction.
 */
import type { Knex } from 'knex';
import { canMoveRow, REFERENCE_FREE_STATES, type RowState } from '../domain/lifecycle.js';
import { PayoutdError } from '../domain/errors.js';
import { isPostgres, type Database } from './db.js';
import { multiRowInsertSql, singleRowUpdateSql, sqliteWriter, type PreparedWrite } from './prepared.js';
import { fromColumnValues, toColumnValues } from './columns.js';
import { claimBatchLease } from './batches.js';

export interface PayoutRow {
  id: number;
  batchId: string;
  line: number;
  merchantReferenceId: string;
  state: RowState;
  /** The create request's values as a JSON array (src/domain/request-values.ts); null for a row that failed validation. */
  requestValues: string | null;
  /**
   * The money cells as the sender wrote them where that is not the request's value; null when the cell
   * was empty or is the request's value (nearly always), so a reader that shows them takes the request's
   * value then (src/store/request-fields.ts). Rows stored by earlier builds keep every cell written.
   */
  payoutCurrency: string | null;
  payoutAmount: string | null;
  deductionCurrency: string | null;
  payoutId: string | null;
  serviceStatus: string | null;
  rate: string | null;
  deductionAmount: string | null;
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
  nextPollAt: number | null;
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
  nextPollAt: 'next_poll_at',
  pollCount: 'poll_count',
  lastPolledAt: 'last_polled_at',
  staleFlaggedAt: 'stale_flagged_at',
  leaseOwner: 'lease_owner',
  leaseExpiresAt: 'lease_expires_at',
  updatedAt: 'updated_at',
};

export type PayoutRowPatch = Partial<Omit<PayoutRow, 'id' | 'batchId' | 'line' | 'merchantReferenceId'>>;

export function toColumns(patch: Partial<PayoutRow>): Record<string, unknown> {
  return toColumnValues(COLUMNS, patch);
}

export function fromColumns(r: Record<string, unknown>): PayoutRow {
  return fromColumnValues<PayoutRow>(COLUMNS, r);
}

export class RowStateError extends PayoutdError {
  override readonly name = 'RowStateError';
}

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
 * The predicate of the partial unique index `payouts_reference_holder` (migration 0006): not one of the
 * states that leave a reference free, so a state added later holds its reference until said otherwise.
 * A chain of `<>`, not `IN (…)`: SQLite builds a small table for an IN list each time a statement runs,
 * and every claim and answer UPDATE evaluates this predicate for its row.
 */
const REFERENCE_HOLDER_PREDICATE = REFERENCE_FREE_STATES.map((s) => `state <> '${s}'`).join(' AND ');

/** A READY row whose reference another row holds is not inserted by the statement; insertRows stores it VALIDATED. */
const SKIP_HELD_REFERENCES = `ON CONFLICT (merchant_reference_id) WHERE ${REFERENCE_HOLDER_PREDICATE} DO NOTHING`;

/**
 * What every row of a statement shares, bound once for the statement instead of once a row (SQLite):
 * nothing; its batch; or its batch, and every row READY with no reason (a chunk of valid rows, what an
 * intake stores nearly always). Binding a value costs better-sqlite3 a property read and a type check, and
 * a text also a UTF-8 conversion, two mallocs, two copies and two frees: with all the batch id, the state,
 * the reasons and the times bound once, 6 values a row are bound instead of 12, and storing 100,000 rows
 * without indexes took 30% less CPU.
 */
type SharedValues = 'none' | 'batch' | 'readyOfBatch';

/** The SQL each shared column takes in every row (see SharedValues). */
const SAME_IN_EVERY_ROW: Record<SharedValues, Readonly<Record<string, string>>> = {
  none: {},
  batch: { batch_id: '@batch' },
  readyOfBatch: {
    batch_id: '@batch',
    state: '@state',
    reason_code: 'NULL',
    reason: 'NULL',
    // A READY row is due from its insert; its batch's acceptance is what lets it be claimed.
    next_attempt_at: '@now',
    updated_at: '@now',
  },
};

/** The values of the named parameters SAME_IN_EVERY_ROW[shared] takes; undefined when it takes none. */
function sharedParameters(shared: SharedValues, batchId: string, now: number): Record<string, unknown> | undefined {
  if (shared === 'none') return undefined;
  return shared === 'batch' ? { batch: batchId } : { batch: batchId, state: 'READY', now };
}

/** What the rows of [from, to) share (see SharedValues). */
function sharedValues(rows: readonly NewPayoutRow[], from: number, to: number): SharedValues {
  const batchId = (rows[from] as NewPayoutRow).batchId;
  let ready = true;
  for (let j = from; j < to; j++) {
    const r = rows[j] as NewPayoutRow;
    if (r.batchId !== batchId) return 'none';
    if (r.state !== 'READY' || r.reasonCode !== null || r.reason !== null) ready = false;
  }
  return ready ? 'readyOfBatch' : 'batch';
}

/**
 * The values of rows [from, to) for an INSERT of INSERT_COLUMNS, row after row, less those `shared` binds
 * once. Pushed, not set into an array made at its length: such an array has holes as far as V8 knows,
 * and better-sqlite3 reads each value through the slow path then.
 */
function insertValues(rows: readonly NewPayoutRow[], from: number, to: number, now: number, shared: SharedValues = 'none'): Knex.Value[] {
  const values: Knex.Value[] = [];
  for (let j = from; j < to; j++) {
    const r = rows[j] as NewPayoutRow;
    if (shared === 'none') values.push(r.batchId);
    values.push(r.line, r.merchantReferenceId);
    if (shared !== 'readyOfBatch') values.push(r.state);
    values.push(r.requestValues, r.payoutCurrency, r.payoutAmount, r.deductionCurrency);
    if (shared !== 'readyOfBatch') values.push(r.reasonCode, r.reason, r.state === 'READY' ? now : null, now);
  }
  return values;
}

/**
 * Inserts rows with multi-row INSERT statements built once per chunk (knex's
 * per-row query building dominates a million-row ingest otherwise); inside a
 * transaction on SQLite as prepared statements reused across chunks.
 *
 * A READY row whose reference is already held (by an earlier row of the same
 * file, or by a row of another batch) is skipped by its statement and then
 * stored VALIDATED, for the acceptance to name the clash: every row given is
 * stored, and only a clash on the held reference is set aside (any other
 * constraint, such as a line stored twice, fails the call).
 */
export async function insertRows(db: Database | Knex.Transaction, given: NewPayoutRow[], now: number): Promise<void> {
  // PostgreSQL: an insert meeting a reference another open transaction just stored waits for that transaction.
  // Two instances storing files that share references in different orders would wait for each other (a deadlock
  // aborts one); in one order of references, the later one only waits. (SQLite has one writer at a time.)
  const rows = isPostgres(db) ? [...given].sort(byReference) : given;
  const perStatement = Math.floor(30_000 / INSERT_COLUMNS.length);
  const prepared = await sqliteWriter(db);
  for (let i = 0; i < rows.length; i += perStatement) {
    const end = Math.min(rows.length, i + perStatement);
    let count: number;
    if (prepared) {
      const shared = sharedValues(rows, i, end);
      const sql = multiRowInsertSql('payouts', INSERT_COLUMNS, end - i, SKIP_HELD_REFERENCES, SAME_IN_EVERY_ROW[shared]);
      count = prepared(sql, insertValues(rows, i, end, now, shared), sharedParameters(shared, (rows[i] as NewPayoutRow).batchId, now));
    } else {
      const sql = multiRowInsertSql('payouts', INSERT_COLUMNS, end - i, SKIP_HELD_REFERENCES);
      const inserted = (await db.raw(sql, insertValues(rows, i, end, now))) as { rowCount?: number; changes?: number };
      count = Number(inserted.rowCount ?? inserted.changes);
    }
    if (count < end - i) await insertSetAside(db, rows.slice(i, end), now);
  }
}

/** The reader of a batch: the lease it renews with each chunk it stores. */
export interface ReaderLease {
  batchId: string;
  instanceId: string;
  leaseMs: number;
}

/**
 * A chunk of a batch still being read, stored in one transaction with the
 * renewal of the reader's lease (another instance takes over a batch whose
 * reader died): one commit, and one disk sync, per chunk instead of two.
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

/** The rows of one statement it skipped (their reference is held), stored VALIDATED. */
async function insertSetAside(db: Database | Knex.Transaction, rows: NewPayoutRow[], now: number): Promise<void> {
  const skipped: NewPayoutRow[] = [];
  for (const batchId of new Set(rows.map((r) => r.batchId))) {
    const ofBatch = rows.filter((r) => r.batchId === batchId);
    const lines = ofBatch.map((r) => r.line);
    const stored = new Set(
      (await db('payouts')
        .where('batch_id', batchId)
        .whereBetween('line', [Math.min(...lines), Math.max(...lines)])
        .pluck('line')) as number[],
    );
    for (const r of ofBatch) if (!stored.has(r.line)) skipped.push(r);
  }
  const unexpected = skipped.find((r) => r.state !== 'READY');
  if (unexpected)
    throw new RowStateError('INSERT_INCOMPLETE', `row at line ${unexpected.line} of batch ${unexpected.batchId} was not stored`);
  const waiting = skipped.map((r): NewPayoutRow => ({ ...r, state: 'VALIDATED' }));
  for (let i = 0; i < waiting.length; i += 1000) {
    const part = waiting.slice(i, i + 1000);
    await db.raw(multiRowInsertSql('payouts', INSERT_COLUMNS, part.length), insertValues(part, 0, part.length, now));
  }
}

export interface HistoryEntry {
  event: string;
  outcome?: string | null;
  detail?: string | null;
}

const HISTORY_COLUMNS = ['payout_row_id', 'at', 'event', 'from_state', 'to_state', 'outcome', 'detail'] as const;

/** A history row's values in HISTORY_COLUMNS order, added to the end of `into`. */
function pushHistoryValues(
  into: Knex.Value[],
  id: number,
  entry: HistoryEntry,
  now: number,
  from: RowState | null,
  to: RowState | null,
): void {
  into.push(id, now, entry.event, from, to, entry.outcome ?? null, entry.detail ?? null);
}

/**
 * The history rows of moves that happened, given as their values in HISTORY_COLUMNS order (one flat list, not
 * an object a row: a create's answer and a settlement each write one), as multi-row INSERTs (one statement per
 * 500 rows). On SQLite the statements are prepared once per connection, in sizes that are powers of two (a list
 * of 37 is 32 + 4 + 1): an answer records any number of rows, and a text per count would have the statement
 * cache prepare anew.
 */
async function insertHistory(trx: Database | Knex.Transaction, values: readonly Knex.Value[]): Promise<void> {
  const write = await sqliteWriter(trx);
  const width = HISTORY_COLUMNS.length;
  const rows = values.length / width;
  for (let i = 0; i < rows;) {
    const left = Math.min(500, rows - i);
    const size = write ? 2 ** Math.floor(Math.log2(left)) : left;
    const part = i === 0 && size === rows ? values : values.slice(i * width, (i + size) * width);
    const sql = multiRowInsertSql('payout_history', HISTORY_COLUMNS, size);
    if (write) write(sql, part);
    else await trx.raw(sql, part);
    i += size;
  }
}

/**
 * The columns a move writes. The state is written only when it changes: SQLite rewrites every index on a
 * column the UPDATE sets, even to the value it had, and four indexes lead with or filter on the state (a poll
 * answer that leaves 100 payouts PENDING cost twice as much with it).
 */
function rowColumns(patch: PayoutRowPatch, from: RowState, to: RowState, now: number): Record<string, unknown> {
  // Set on the columns rather than spread into a copy of the patch first (one object per move, not two).
  const columns = toColumns(patch);
  if (from !== to) columns[COLUMNS.state] = to;
  columns[COLUMNS.updatedAt] = now;
  return columns;
}

function assertMove(from: RowState, to: RowState): void {
  if (!canMoveRow(from, to)) throw new RowStateError('ROW_STATE', `a row cannot move from ${from} to ${to}`);
}

/**
 * Moves rows from one state to another, with the same patch and history
 * entry for each. Rows no longer in `from` are skipped (another actor moved
 * them); returns the ids actually moved.
 */
export async function moveRows(
  trx: Knex.Transaction,
  ids: number[],
  from: RowState,
  to: RowState,
  patch: PayoutRowPatch,
  history: HistoryEntry,
  now: number,
): Promise<number[]> {
  assertMove(from, to);
  const moved = await updateGuarded(trx, ids, from, rowColumns(patch, from, to, now));
  await recordMoved(trx, moved, from, to, history, now);
  return moved;
}

/**
 * The history rows of rows a statement of the caller's own has just moved (the claim of a create moves its
 * rows and reads them back in one statement): the move is checked against the lifecycle here.
 */
export async function recordMoved(
  trx: Knex.Transaction,
  ids: readonly number[],
  from: RowState,
  to: RowState,
  history: HistoryEntry,
  now: number,
): Promise<void> {
  assertMove(from, to);
  const values: Knex.Value[] = [];
  for (const id of ids) pushHistoryValues(values, id, history, now, from, to);
  await insertHistory(trx, values);
}

/**
 * `state = ?` for rows picked by id (or payout id). SQLite answered
 * `id IN (…) AND state = ?` by walking an index led by the state when there
 * was one (every PENDING row: 5 ms per 100-row poll answer at 100,000
 * pending, instead of 0.3 ms); the unary + (a no-op on any value) leaves it
 * the primary key, whatever indexes come.
 */
export function stateGuard(db: Database | Knex.Transaction, state: RowState): Knex.Raw {
  return db.raw(isPostgres(db) ? 'state = ?' : '+state = ?', [state]);
}

/** The states read by their state alone, each through a partial index of its own (migration 0007). */
export type IndexedState = 'CREATING' | 'UNKNOWN' | 'PENDING';
export const STATE_INDEXES: Readonly<Record<IndexedState, string>> = {
  PENDING: 'payouts_pending_due',
  UNKNOWN: 'payouts_unknown_due',
  CREATING: 'payouts_creating_lease',
};

/**
 * The rows of one of those states, read through that state's partial index. The state is written into
 * the SQL text, not bound: a planner uses a partial index only when the query's own text implies its
 * predicate (SQLite plans a statement before any value is bound). On SQLite the index is also named
 * (INDEXED BY): without statistics SQLite costs a scan of a partial index as a scan of the whole table,
 * and took a range of the creation-time index (every payout ever created before a time) or a scan of
 * (batch_id, state, line) instead, measured on a million rows. PostgreSQL plans from its own statistics.
 * The state comes from a closed list, checked here, so nothing else ever reaches the text.
 */
export function rowsInState(db: Database | Knex.Transaction, state: IndexedState): Knex.QueryBuilder {
  const index = Object.hasOwn(STATE_INDEXES, state) ? STATE_INDEXES[state] : undefined;
  if (index === undefined) throw new RowStateError('ROW_STATE', `no partial index covers state ${JSON.stringify(state)}`);
  const rows = isPostgres(db) ? db('payouts') : db.from(db.raw(`payouts INDEXED BY ${index}`));
  return rows.where(db.raw(`state = '${state}'`));
}

/**
 * UPDATE … WHERE id IN (…) AND state = from RETURNING id, in chunks: the
 * rows this transaction really moved, even when another instance races for
 * them.
 */
async function updateGuarded(trx: Knex.Transaction, ids: number[], from: RowState, columns: Record<string, unknown>): Promise<number[]> {
  const moved: number[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const still = (await trx('payouts')
      .whereIn('id', ids.slice(i, i + 500))
      .andWhere(stateGuard(trx, from))
      .update(columns)
      .returning('id')) as { id: number }[];
    for (const r of still) moved.push(Number(r.id));
  }
  return moved;
}

/** A guarded UPDATE of one row through knex (PostgreSQL). */
async function updateOne(trx: Knex.Transaction, id: number, from: RowState, columns: Record<string, unknown>): Promise<boolean> {
  return (await trx('payouts').where({ id, state: from }).update(columns)) > 0;
}

/**
 * A guarded UPDATE of one row on SQLite, synchronously: a create's answer and a settlement are one row each,
 * and per row an awaited call, a SQL text built anew and then hashed to find its prepared statement cost more
 * of the daemon's CPU than SQLite's own work (the submit bench at L = 0, item 56).
 */
function updateOneNow(write: PreparedWrite, id: number, from: RowState, columns: Record<string, unknown>): boolean {
  const names = Object.keys(columns);
  const sql = singleRowUpdateSql('payouts', names);
  const values: unknown[] = [];
  for (const c of names) values.push(columns[c]);
  values.push(id, from);
  return write(sql, values) > 0;
}

/**
 * On SQLite, fewer moves sharing a patch than this are cheaper one by one: the single-row UPDATE is prepared once per
 * connection, a grouped one is built and prepared by knex each time (settlements of one time slice share
 * their patch in twos and threes: 78 us a row grouped against 18 us alone).
 */
const GROUPED_UPDATE_MIN = 16;

/** One row's move with its own patch and history entry. */
export interface RowMoveSpec {
  id: number;
  from: RowState;
  to: RowState;
  patch: PayoutRowPatch;
  /** null: no history row, allowed only where the state stays (a poll the row's own columns record). */
  history: HistoryEntry | null;
}

/**
 * Applies many row moves with few statements: moves sharing from, to and
 * patch (a poll answer's PENDING rows) are one guarded UPDATE, moves whose
 * patches differ (create answers, settlements) one UPDATE each, and the
 * history rows of all moves that happened one multi-row INSERT. A row no
 * longer in `from` is skipped without a history row, exactly as `moveRow`
 * does. Returns whether each move happened, in the order given.
 */
export async function moveEach(trx: Knex.Transaction, moves: readonly RowMoveSpec[], now: number): Promise<boolean[]> {
  for (const m of moves) {
    assertMove(m.from, m.to);
    // Every change of state is in the history; only a move that keeps the state may go without a row.
    if (m.history === null && m.from !== m.to)
      throw new RowStateError('ROW_HISTORY', `a move from ${m.from} to ${m.to} needs a history entry`);
  }
  if (new Set(moves.map((m) => m.id)).size !== moves.length) {
    // A row moved twice: each move must see the one before it, so one at a time, in order.
    const done: boolean[] = [];
    for (const m of moves) done.push(...(await moveEach(trx, [m], now)));
    return done;
  }
  const groups = new Map<string, { from: RowState; columns: Record<string, unknown>; ids: number[] }>();
  // Moves handed the same patch object (a poll answer's PENDING payouts) are grouped without looking into it.
  const byPatch = new Map<PayoutRowPatch, { from: RowState; to: RowState; group: { ids: number[] } }>();
  for (const m of moves) {
    const seen = byPatch.get(m.patch);
    if (seen && seen.from === m.from && seen.to === m.to) {
      seen.group.ids.push(m.id);
      continue;
    }
    const columns = rowColumns(m.patch, m.from, m.to, now);
    if (m.patch.payoutId !== undefined || (m.patch.completeTime ?? null) !== null) {
      // A create's answer or a settlement: a payout id, or the moment the service completed a payout, is one row's,
      // so these columns are not shared (and a group needs GROUPED_UPDATE_MIN moves alike). A key of '#' cannot
      // be a state's. Not comparing them saves a JSON text per create and per settlement.
      groups.set(`#${m.id}`, { from: m.from, columns, ids: [m.id] });
      continue;
    }
    // Patches built by the same code list their fields in the same order (one built otherwise only forms its own
    // group); JSON keeps null apart from the text "null" and a number from its digits as text. One native call:
    // a key built field by field was the largest allocation of recording a create's answer.
    const key = m.from + JSON.stringify(columns);
    let g = groups.get(key);
    if (g) g.ids.push(m.id);
    else groups.set(key, (g = { from: m.from, columns, ids: [m.id] }));
    byPatch.set(m.patch, { from: m.from, to: m.to, group: g });
  }
  const moved = new Set<number>();
  // The transaction's SQLite connection, looked up once for all the single-row UPDATEs (null on PostgreSQL).
  const write = await sqliteWriter(trx);
  for (const g of groups.values()) {
    if (g.ids.length >= (write === null ? 2 : GROUPED_UPDATE_MIN)) {
      for (const id of await updateGuarded(trx, g.ids, g.from, g.columns)) moved.add(id);
    } else if (write !== null) {
      for (const id of g.ids) if (updateOneNow(write, id, g.from, g.columns)) moved.add(id);
    } else {
      for (const id of g.ids) if (await updateOne(trx, id, g.from, g.columns)) moved.add(id);
    }
  }
  const done = moves.map((m) => moved.has(m.id));
  const recorded: Knex.Value[] = [];
  for (const [i, m] of moves.entries()) if (done[i] && m.history !== null) pushHistoryValues(recorded, m.id, m.history, now, m.from, m.to);
  await insertHistory(trx, recorded);
  return done;
}

/** One row's move with its own patch (results differ per row). */
export async function moveRow(
  trx: Knex.Transaction,
  id: number,
  from: RowState,
  to: RowState,
  patch: PayoutRowPatch,
  history: HistoryEntry,
  now: number,
): Promise<boolean> {
  const [done] = await moveEach(trx, [{ id, from, to, patch, history }], now);
  return done === true;
}

export async function addHistory(trx: Database | Knex.Transaction, id: number, entry: HistoryEntry, now: number): Promise<void> {
  const values: Knex.Value[] = [];
  pushHistoryValues(values, id, entry, now, null, null);
  await insertHistory(trx, values);
}

export async function getRow(db: Database | Knex.Transaction, id: number): Promise<PayoutRow | undefined> {
  const r = (await db('payouts').where({ id }).first()) as Record<string, unknown> | undefined;
  return r ? fromColumns(r) : undefined;
}

export async function rowsByReference(db: Database, merchantReferenceId: string): Promise<PayoutRow[]> {
  const rows = (await db('payouts').where({ merchant_reference_id: merchantReferenceId }).orderBy('id')) as Record<string, unknown>[];
  return rows.map(fromColumns);
}

export interface HistoryRecord {
  at: number;
  event: string;
  fromState: string | null;
  toState: string | null;
  outcome: string | null;
  detail: string | null;
}

export async function historyOf(db: Database, rowId: number): Promise<HistoryRecord[]> {
  const rows = (await db('payout_history').where({ payout_row_id: rowId }).orderBy('id')) as Record<string, unknown>[];
  return rows.map((r) => ({
    at: r.at as number,
    event: r.event as string,
    fromState: (r.from_state as string | null) ?? null,
    toState: (r.to_state as string | null) ?? null,
    outcome: (r.outcome as string | null) ?? null,
    detail: (r.detail as string | null) ?? null,
  }));
}

/** The stored requests of a batch's READY rows, a page at a time (a million-row batch never sits in memory). */
export async function* readyRequestPages(db: Database, batchId: string, pageSize = 10_000): AsyncGenerator<string[]> {
  for (let afterId = 0; ;) {
    const rows = (await db('payouts')
      .where({ batch_id: batchId, state: 'READY' })
      .andWhere('id', '>', afterId)
      .orderBy('id')
      .limit(pageSize)
      .select('id', 'request_values')) as { id: number; request_values: string }[];
    if (rows.length > 0) yield rows.map((r) => r.request_values);
    if (rows.length < pageSize) return;
    afterId = Number(rows[rows.length - 1]?.id);
  }
}

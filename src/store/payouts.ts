/**
 * Payout rows in the database: the PayoutIntent of every CSV row, its state
 * and every attempt made for it. Each state move is guarded by the state it
 * moves from (UPDATE … WHERE state = from), checked against the domain's
 * lifecycle, and written with a history record in the same transaction.
 */
import type { Knex } from 'knex';
import { canMoveRow, type RowState } from '../domain/lifecycle.js';
import { PayoutdError } from '../domain/errors.js';
import { isPostgres, type Database } from './db.js';
import { multiRowInsertSql, runPrepared, sqliteWriter } from './prepared.js';
import { fromColumnValues, toColumnValues } from './columns.js';

export interface PayoutRow {
  id: number;
  batchId: string;
  line: number;
  merchantReferenceId: string;
  state: RowState;
  requestJson: string | null;
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

const COLUMNS: Record<keyof PayoutRow, string> = {
  id: 'id',
  batchId: 'batch_id',
  line: 'line',
  merchantReferenceId: 'merchant_reference_id',
  state: 'state',
  requestJson: 'request_json',
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

/** A new row as the reader produced it. */
export interface NewPayoutRow {
  batchId: string;
  line: number;
  merchantReferenceId: string;
  state: 'VALIDATED' | 'INVALID';
  requestJson: string | null;
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
  'request_json',
  'payout_currency',
  'payout_amount',
  'deduction_currency',
  'reason_code',
  'reason',
  'updated_at',
] as const;

/**
 * Inserts rows with multi-row INSERT statements built once per chunk (knex's
 * per-row query building dominates a million-row ingest otherwise); inside a
 * transaction on SQLite as prepared statements reused across chunks.
 */
export async function insertRows(db: Database | Knex.Transaction, rows: NewPayoutRow[], now: number): Promise<void> {
  const perStatement = Math.floor(30_000 / INSERT_COLUMNS.length);
  const prepared = await sqliteWriter(db);
  for (let i = 0; i < rows.length; i += perStatement) {
    const end = Math.min(rows.length, i + perStatement);
    const values: Knex.Value[] = new Array<Knex.Value>((end - i) * INSERT_COLUMNS.length);
    let k = 0;
    for (let j = i; j < end; j++) {
      const r = rows[j] as NewPayoutRow;
      values[k++] = r.batchId;
      values[k++] = r.line;
      values[k++] = r.merchantReferenceId;
      values[k++] = r.state;
      values[k++] = r.requestJson;
      values[k++] = r.payoutCurrency;
      values[k++] = r.payoutAmount;
      values[k++] = r.deductionCurrency;
      values[k++] = r.reasonCode;
      values[k++] = r.reason;
      values[k++] = now;
    }
    const sql = multiRowInsertSql('payouts', INSERT_COLUMNS, end - i);
    if (prepared) prepared(sql, values);
    else await db.raw(sql, values);
  }
}

export interface HistoryEntry {
  event: string;
  outcome?: string | null;
  detail?: string | null;
}

function historyRecord(id: number, entry: HistoryEntry, now: number, from: RowState | null, to: RowState | null): Record<string, unknown> {
  return {
    payout_row_id: id,
    at: now,
    event: entry.event,
    from_state: from,
    to_state: to,
    outcome: entry.outcome ?? null,
    detail: entry.detail ?? null,
  };
}

const HISTORY_COLUMNS = ['payout_row_id', 'at', 'event', 'from_state', 'to_state', 'outcome', 'detail'] as const;

/** The history rows of moves that happened, as multi-row INSERTs (one statement per 500 rows). */
async function insertHistory(trx: Knex.Transaction, records: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < records.length; i += 500) {
    const chunk = records.slice(i, i + 500);
    const values: Knex.Value[] = [];
    for (const r of chunk) for (const c of HISTORY_COLUMNS) values.push(r[c] as Knex.Value);
    await trx.raw(multiRowInsertSql('payout_history', HISTORY_COLUMNS, chunk.length), values);
  }
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
  const moved = await updateGuarded(trx, ids, from, toColumns({ ...patch, state: to, updatedAt: now }));
  await insertHistory(
    trx,
    moved.map((id) => historyRecord(id, history, now, from, to)),
  );
  return moved;
}

/**
 * `state = ?` for rows picked by id (or payout id). SQLite otherwise answers
 * `id IN (…) AND state = ?` by walking the state index (every PENDING row:
 * 5 ms per 100-row poll answer at 100,000 pending, instead of 0.3 ms); the
 * unary + (a no-op on any value) leaves it the primary key (or the key's index).
 */
export function stateGuard(db: Database | Knex.Transaction, state: RowState): Knex.Raw {
  return db.raw(isPostgres(db) ? 'state = ?' : '+state = ?', [state]);
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

/** A guarded UPDATE of one row; on SQLite a statement prepared once per patch shape. */
async function updateOne(trx: Knex.Transaction, id: number, from: RowState, columns: Record<string, unknown>): Promise<boolean> {
  if (isPostgres(trx)) return (await trx('payouts').where({ id, state: from }).update(columns)) > 0;
  const names = Object.keys(columns);
  const sql = `UPDATE payouts SET ${names.map((c) => `"${c}" = ?`).join(', ')} WHERE id = ? AND state = ?`;
  return (await runPrepared(trx, sql, [...names.map((c) => columns[c] as string | number | null), id, from])) > 0;
}

/** One row's move with its own patch and history entry. */
export interface RowMoveSpec {
  id: number;
  from: RowState;
  to: RowState;
  patch: PayoutRowPatch;
  history: HistoryEntry;
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
  for (const m of moves) assertMove(m.from, m.to);
  if (new Set(moves.map((m) => m.id)).size !== moves.length) {
    // A row moved twice: each move must see the one before it, so one at a time, in order.
    const done: boolean[] = [];
    for (const m of moves) done.push(...(await moveEach(trx, [m], now)));
    return done;
  }
  const groups = new Map<string, { from: RowState; columns: Record<string, unknown>; ids: number[] }>();
  for (const m of moves) {
    const columns = toColumns({ ...m.patch, state: m.to, updatedAt: now });
    const key = `${m.from}\u0000${JSON.stringify(
      Object.keys(columns)
        .sort()
        .map((c) => [c, columns[c]]),
    )}`;
    const g = groups.get(key);
    if (g) g.ids.push(m.id);
    else groups.set(key, { from: m.from, columns, ids: [m.id] });
  }
  const moved = new Set<number>();
  for (const g of groups.values()) {
    if (g.ids.length > 1) {
      for (const id of await updateGuarded(trx, g.ids, g.from, g.columns)) moved.add(id);
    } else if (await updateOne(trx, g.ids[0] as number, g.from, g.columns)) {
      moved.add(g.ids[0] as number);
    }
  }
  const done = moves.map((m) => moved.has(m.id));
  await insertHistory(
    trx,
    moves.filter((_, i) => done[i]).map((m) => historyRecord(m.id, m.history, now, m.from, m.to)),
  );
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
  await trx('payout_history').insert(historyRecord(id, entry, now, null, null));
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

/** The fields result, interim and acknowledgement files show of a row (src/daemon/outbox.ts). */
const RESULT_FIELDS = [
  'id',
  'batchId',
  'line',
  'merchantReferenceId',
  'state',
  'requestJson',
  'payoutCurrency',
  'payoutAmount',
  'deductionCurrency',
  'payoutId',
  'rate',
  'deductionAmount',
  'totalFee',
  'feeCurrency',
  'completeTime',
  'reasonCode',
  'reason',
] as const satisfies readonly (keyof PayoutRow)[];

/** A row as `rowsOfBatch` reads it: only what the files show. */
export type BatchResultRow = Pick<PayoutRow, (typeof RESULT_FIELDS)[number]>;

const RESULT_COLUMNS = Object.fromEntries(RESULT_FIELDS.map((f) => [f, COLUMNS[f]])) as Record<keyof BatchResultRow, string>;

/**
 * All rows of a batch in line order, read in pages (result files of any
 * size). Only the columns the files show: building 30-property objects for
 * every row cost four times as much as reading them.
 */
export async function* rowsOfBatch(db: Database, batchId: string, pageSize = 5000): AsyncGenerator<BatchResultRow> {
  // Aliased in SQL (column as field), so the driver's row objects are the records: no second object per row.
  const columns = Object.entries(RESULT_COLUMNS).map(([field, column]) => `${column} as ${field}`);
  let afterLine = -1;
  for (;;) {
    const page = (await db('payouts')
      .where({ batch_id: batchId })
      .andWhere('line', '>', afterLine)
      .orderBy('line')
      .limit(pageSize)
      .select(columns)) as BatchResultRow[];
    yield* page;
    if (page.length < pageSize) return;
    afterLine = page[page.length - 1]?.line as number;
  }
}

/** Row counts per state of a batch. */
export async function stateCounts(db: Database, batchId: string): Promise<Partial<Record<RowState, number>>> {
  const rows = (await db('payouts').where({ batch_id: batchId }).select('state').count({ n: '*' }).groupBy('state')) as {
    state: RowState;
    n: number | string;
  }[];
  const out: Partial<Record<RowState, number>> = {};
  for (const r of rows) out[r.state] = Number(r.n);
  return out;
}

/**
 * State moves of payout rows and their history. Each move is guarded by the state it leaves (UPDATE … WHERE
 * state = from), checked against the domain's lifecycle, and written with its history row in the caller's
 * transaction; a row another actor moved meanwhile is skipped.
 */
import type { Knex } from 'knex';
import { canMoveRow, type RowState } from '../domain/lifecycle.js';
import type { Database } from './db.js';
import { insertValueRows, type InsertedValue } from './multi-row-insert.js';
import { updateValueRows } from './multi-row-update.js';
import { COLUMNS, RowStateError, toColumns, type PayoutRow, type PayoutRowPatch } from './payouts.js';

export interface HistoryEntry {
  event: string;
  outcome?: string | null;
  detail?: string | null;
}

/** One row's move with its own patch and history entry. */
export interface RowMove {
  /** The row moved (its id; its batch, for whoever acts on the batches moved). */
  row: Pick<PayoutRow, 'id' | 'batchId'>;
  from: RowState;
  to: RowState;
  patch: PayoutRowPatch;
  /** null: no history row, allowed only where the state stays (a poll the row's own columns record). */
  history: HistoryEntry | null;
}

const HISTORY_COLUMNS = ['payout_row_id', 'at', 'event', 'from_state', 'to_state', 'outcome', 'detail'] as const;

/** A history row's values in HISTORY_COLUMNS order. */
function historyRow(id: number, entry: HistoryEntry, now: number, from: RowState, to: RowState): InsertedValue[] {
  return [id, now, entry.event, from, to, entry.outcome ?? null, entry.detail ?? null];
}

function assertMove(from: RowState, to: RowState): void {
  if (!canMoveRow(from, to)) throw new RowStateError('ROW_STATE', `a row cannot move from ${from} to ${to}`);
}

/**
 * The columns a move writes. The state is written only when it changes: SQLite rewrites every index on a
 * column the UPDATE sets, even to the value it had.
 */
function rowColumns(patch: PayoutRowPatch, from: RowState, to: RowState, now: number): Record<string, unknown> {
  const columns = toColumns(patch);
  if (from !== to) columns[COLUMNS.state] = to;
  columns[COLUMNS.updatedAt] = now;
  return columns;
}

/** UPDATE … WHERE id IN (…) AND state = from RETURNING id, in chunks: the rows really moved, even when another instance races for them. */
async function updateGuarded(
  trx: Knex.Transaction,
  ids: readonly number[],
  from: RowState,
  columns: Record<string, unknown>,
): Promise<number[]> {
  if (ids.length === 1) {
    const [id] = ids as [number];
    return (await trx('payouts').where({ id, state: from }).update(columns)) > 0 ? [id] : [];
  }
  const moved: number[] = [];
  for (let i = 0; i < ids.length; i += 500) {
    const still = (await trx('payouts')
      .whereIn('id', ids.slice(i, i + 500))
      .andWhere('state', from)
      .update(columns)
      .returning('id')) as { id: number }[];
    for (const r of still) moved.push(Number(r.id));
  }
  return moved;
}

/** Moves rows from one state to another with the same patch and history entry; returns the ids actually moved. */
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

/** The history rows of rows a statement of the caller's own has just moved (a claim moves and reads its rows in one). */
export async function recordMoved(
  trx: Knex.Transaction,
  ids: readonly number[],
  from: RowState,
  to: RowState,
  history: HistoryEntry,
  now: number,
): Promise<void> {
  assertMove(from, to);
  await insertValueRows(
    trx,
    'payout_history',
    HISTORY_COLUMNS,
    ids.map((id) => historyRow(id, history, now, from, to)),
  );
}

/**
 * Applies many row moves, each with its own patch: moves with the same `from` and the same columns share one
 * guarded multi-row UPDATE a chunk (./multi-row-update.ts), and all history rows are one INSERT. Returns how
 * many moves happened.
 */
export async function applyMoves(trx: Knex.Transaction, moves: readonly RowMove[], now: number): Promise<number> {
  for (const m of moves) {
    assertMove(m.from, m.to);
    // Every change of state is in the history; only a move that keeps the state may go without a row.
    if (m.history === null && m.from !== m.to)
      throw new RowStateError('ROW_HISTORY', `a move from ${m.from} to ${m.to} needs a history entry`);
  }
  if (new Set(moves.map((m) => m.row.id)).size !== moves.length) {
    // A row moved twice: each move must see the one before it, so one at a time, in order.
    let done = 0;
    for (const m of moves) done += await applyMoves(trx, [m], now);
    return done;
  }
  const groups = new Map<string, { from: RowState; names: string[]; rows: { id: number; columns: Record<string, unknown> }[] }>();
  for (const m of moves) {
    const columns = rowColumns(m.patch, m.from, m.to, now);
    const names = Object.keys(columns).sort();
    const key = `${m.from} ${names.join(' ')}`;
    const group = groups.get(key);
    if (group) group.rows.push({ id: m.row.id, columns });
    else groups.set(key, { from: m.from, names, rows: [{ id: m.row.id, columns }] });
  }
  const moved = new Set<number>();
  for (const { from, names, rows } of groups.values()) {
    if (rows.length === 1) {
      const [only] = rows as [(typeof rows)[number]];
      for (const done of await updateGuarded(trx, [only.id], from, only.columns)) moved.add(done);
      continue;
    }
    const values = rows.map((r) => [r.id, ...names.map((name) => r.columns[name] as InsertedValue)]);
    for (const done of await updateValueRows(trx, 'payouts', names, values, { column: COLUMNS.state, value: from })) moved.add(done);
  }
  const history: InsertedValue[][] = [];
  for (const m of moves) if (m.history !== null && moved.has(m.row.id)) history.push(historyRow(m.row.id, m.history, now, m.from, m.to));
  await insertValueRows(trx, 'payout_history', HISTORY_COLUMNS, history);
  return moves.filter((m) => moved.has(m.row.id)).length;
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
  return (await db('payout_history')
    .where({ payout_row_id: rowId })
    .orderBy('id')
    .select('at', 'event', 'from_state as fromState', 'to_state as toState', 'outcome', 'detail')) as HistoryRecord[];
}

export async function lastIntentAt(db: Database, rowId: number): Promise<number | null> {
  const r = (await db('payout_history').where({ payout_row_id: rowId, event: 'intent' }).max({ at: 'at' }).first()) as
    { at: number | null } | undefined;
  return r?.at ?? null;
}

/**
 * State moves of payout rows and their history. Each move is guarded by the state it leaves (UPDATE … WHERE
 * state = from) and by what else it was decided from (`still`), checked against the domain's lifecycle, and
 * written with its history row in the caller's transaction; a row another actor moved meanwhile is skipped.
 * A payout creation a move records is stamped in that transaction (./created-at.ts).
 */
import type { Knex } from 'knex';
import type { Clock } from '../domain/clock.js';
import { canMoveRow, type RowState } from '../domain/lifecycle.js';
import { creationTimes, type CreatedWhenWritten } from './created-at.js';
import type { Database } from './db.js';
import { insertValueRows, type InsertedValue } from './multi-row-insert.js';
import { updateValueRows, type RowGuard } from './multi-row-update.js';
import { COLUMNS, RowStateError, toColumns, type PayoutRow, type PayoutRowPatch } from './payouts.js';

export interface HistoryEntry {
  event: string;
  outcome?: string | null;
  detail?: string | null;
  /** What the entry records beyond its words, as JSON text (a check's report: src/domain/service-check.ts). */
  data?: string | null;
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
  /**
   * Values the move was decided from that the row must still hold, besides its state (null: still NULL); a row
   * changed meanwhile by another actor is skipped, as one moved is.
   */
  still?: RowCondition;
}

/**
 * Columns a row must still hold for a move to apply: the payout it was decided for, whether that was proven the row's
 * own, the check of it against the service that was asked (and its round), the claim of a create it answers (its
 * instance and attempt: claimOf), the next poll its query was claimed at and the poll round it was claimed in (a
 * webhook may have made it due since).
 */
export type RowCondition = Partial<
  Pick<
    PayoutRow,
    'payoutId' | 'payoutCheckedAt' | 'serviceCheck' | 'serviceCheckRound' | 'leaseOwner' | 'createAttempts' | 'nextPollAt' | 'pollRound'
  >
>;

const HISTORY_COLUMNS = ['payout_row_id', 'at', 'event', 'from_state', 'to_state', 'outcome', 'detail', 'data'] as const;

/** A history row's values in HISTORY_COLUMNS order. */
function historyRow(id: number, entry: HistoryEntry, now: number, from: RowState, to: RowState): InsertedValue[] {
  return [id, now, entry.event, from, to, entry.outcome ?? null, entry.detail ?? null, entry.data ?? null];
}

function assertMove(from: RowState, to: RowState): void {
  if (!canMoveRow(from, to)) throw new RowStateError('ROW_STATE', `a row cannot move from ${from} to ${to}`);
}

/**
 * The columns a move writes, a creation's time as `created` read it (creationTimes). The state is written only
 * when it changes: SQLite rewrites every index on a column the UPDATE sets, even to the value it had.
 */
function rowColumns(
  patch: PayoutRowPatch,
  from: RowState,
  to: RowState,
  now: number,
  created: ReadonlyMap<Clock, number>,
): Record<string, unknown> {
  const { createdAtMs, ...values } = patch;
  const columns = toColumns(values);
  if (createdAtMs !== undefined) columns[COLUMNS.createdAtMs] = createdAtMs === null ? null : created.get(createdAtMs.createdWhenWritten);
  if (from !== to) columns[COLUMNS.state] = to;
  columns[COLUMNS.updatedAt] = now;
  return columns;
}

/** The times of the creations `patches` record, read now that the caller's transaction holds the lock for them. */
function creationsOf(trx: Knex.Transaction, patches: readonly PayoutRowPatch[]): Promise<Map<Clock, number>> {
  const stamps: CreatedWhenWritten[] = [];
  for (const { createdAtMs } of patches) if (createdAtMs) stamps.push(createdAtMs);
  return creationTimes(trx, stamps);
}

/** A move's guard: its `from` state and the columns of `still`, those still NULL apart from those holding a value (`held`). */
interface MoveGuard {
  guard: RowGuard;
  held: Record<string, InsertedValue>;
}

function guardOf(from: RowState, still: RowCondition | undefined): MoveGuard {
  const held: Record<string, InsertedValue> = {};
  const nulls: string[] = [];
  for (const [column, value] of Object.entries(toColumns(still ?? {}))) {
    if (value === null) nulls.push(column);
    else held[column] = value as InsertedValue;
  }
  return { guard: { column: COLUMNS.state, value: from, nulls, matched: Object.keys(held) }, held };
}

/** UPDATE … WHERE id = … AND the guard of one row: whether it was set. */
async function updateOne(
  trx: Knex.Transaction,
  id: number,
  { guard, held }: MoveGuard,
  columns: Record<string, unknown>,
): Promise<boolean> {
  const q = trx('payouts').where({ id, [guard.column]: guard.value, ...held });
  for (const column of guard.nulls ?? []) void q.whereNull(column);
  return (await q.update(columns)) > 0;
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
    return (await updateOne(trx, id, guardOf(from, undefined), columns)) ? [id] : [];
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
  const moved = await updateGuarded(trx, ids, from, rowColumns(patch, from, to, now, await creationsOf(trx, [patch])));
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
 * guarded multi-row UPDATE a chunk (./multi-row-update.ts), and all history rows are one INSERT. Returns the
 * moves that happened; one whose guard no longer held is left out.
 */
export async function applyMoves(trx: Knex.Transaction, moves: readonly RowMove[], now: number): Promise<RowMove[]> {
  for (const m of moves) {
    assertMove(m.from, m.to);
    // Every change of state is in the history; only a move that keeps the state may go without a row.
    if (m.history === null && m.from !== m.to)
      throw new RowStateError('ROW_HISTORY', `a move from ${m.from} to ${m.to} needs a history entry`);
  }
  if (new Set(moves.map((m) => m.row.id)).size !== moves.length) {
    // A row moved twice: each move must see the one before it, so one at a time, in order.
    const done: RowMove[] = [];
    for (const m of moves) done.push(...(await applyMoves(trx, [m], now)));
    return done;
  }
  const created = await creationsOf(
    trx,
    moves.map((m) => m.patch),
  );
  const groups = new Map<
    string,
    { guard: RowGuard; names: string[]; rows: { id: number; columns: Record<string, unknown>; g: MoveGuard }[] }
  >();
  for (const m of moves) {
    const columns = rowColumns(m.patch, m.from, m.to, now, created);
    const names = Object.keys(columns).sort();
    const g = guardOf(m.from, m.still);
    // One statement sets only moves guarded alike: the same state left, the same columns held and still NULL.
    const key = [m.from, names.join(' '), (g.guard.matched ?? []).join(' '), (g.guard.nulls ?? []).join(' ')].join(' | ');
    const group = groups.get(key);
    if (group) group.rows.push({ id: m.row.id, columns, g });
    else groups.set(key, { guard: g.guard, names, rows: [{ id: m.row.id, columns, g }] });
  }
  const moved = new Set<number>();
  for (const { guard, names, rows } of groups.values()) {
    if (rows.length === 1) {
      const [only] = rows as [(typeof rows)[number]];
      if (await updateOne(trx, only.id, only.g, only.columns)) moved.add(only.id);
      continue;
    }
    const values = rows.map((r) => [
      r.id,
      ...names.map((name) => r.columns[name] as InsertedValue),
      ...(guard.matched ?? []).map((name) => r.g.held[name] as InsertedValue),
    ]);
    for (const done of await updateValueRows(trx, 'payouts', names, values, guard)) moved.add(done);
  }
  const history: InsertedValue[][] = [];
  for (const m of moves) if (m.history !== null && moved.has(m.row.id)) history.push(historyRow(m.row.id, m.history, now, m.from, m.to));
  await insertValueRows(trx, 'payout_history', HISTORY_COLUMNS, history);
  return moves.filter((m) => moved.has(m.row.id));
}

/** Writes a history entry of a row that moves nothing (no states): something the row does not follow, named. */
export async function recordNote(trx: Knex.Transaction, rowId: number, entry: HistoryEntry, now: number): Promise<void> {
  await insertValueRows(trx, 'payout_history', HISTORY_COLUMNS, [
    [rowId, now, entry.event, null, null, entry.outcome ?? null, entry.detail ?? null, entry.data ?? null],
  ]);
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

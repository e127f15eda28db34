/**
 * Accepting a batch once all its rows are read: the checks that need every row (a reference twice in the
 * file, a reference another batch holds, a retry of a payout another row pays or may pay) and the file
 * policy, in one transaction. Valid rows went in READY holding their reference; those whose reference was
 * already held went in VALIDATED, so the clashes are among the few VALIDATED rows and an accepted batch's
 * READY rows need no second pass (retry rows are found through an index of their own). The work that grows
 * with a large file (a file sent again has every row marked; a file refused lets every row go) is done a
 * range of lines per transaction around that one.
 */
import type { Knex } from 'knex';
import { REFERENCE_HOLDING_STATES, isBeingRead } from '../domain/lifecycle.js';
import { decodeRequestValues } from '../domain/request-values.js';
import { RETRY_BLOCKING_STATES, sameRetryBase } from '../domain/retry-reference.js';
import { writeTransaction, type Database } from './db.js';
import { insertBatchErrors, type BatchErrorRecord } from './batch-errors.js';
import { updateValueRows } from './multi-row-update.js';
import { inLineRanges, type LineRange } from './payouts.js';
import type { ReaderFence } from './batches.js';

export type InvalidRowsPolicy = 'reject-file' | 'skip-rows';

export interface AcceptanceResult {
  accepted: boolean;
  rowsChanged: number;
  readyCount: number;
  invalidCount: number;
  duplicateCount: number;
  rejectReason: string | null;
}

const HOLDING = REFERENCE_HOLDING_STATES as string[];
/** Valid rows of a batch being accepted: holding their reference (READY) or waiting for the decision (VALIDATED). */
const VALID = ['READY', 'VALIDATED'];

/** Rows marked per transaction before the acceptance's own: each takes a reason and an error row. */
const MARKS_PER_RANGE = 5_000;
/** References one lookup names (SQLite binds at most 32,766 values a statement). */
const REFERENCES_PER_LOOKUP = 5_000;

/** The columns a check sets on a row it moves (src/store/multi-row-update.ts), after its id. */
const MARKED_COLUMNS = ['state', 'reason_code', 'reason', 'updated_at'];

/**
 * The reference's column as the file has it: its header as written, its position (null: not known), and how a
 * message names it (`column A "Reference"`), for the errors and reasons of the rows a check marks.
 */
export interface ReferenceColumn {
  column: string;
  columnIndex: number | null;
  place: string;
}

/** The column named by its field alone, when the caller does not say how the file has it. */
const REFERENCE_FIELD: ReferenceColumn = { column: 'merchantReferenceId', columnIndex: null, place: '"merchantReferenceId"' };

/** What a check found: an error per row concerned, and how many rows it moved. */
interface Marked {
  errors: BatchErrorRecord[];
  moved: number;
}

interface RowOfReference {
  id: number;
  batch_id: string;
  line: number;
  state: string;
  merchant_reference_id: string;
}

/**
 * The rows of the batch whose reference is on another row of the batch too, by reference, in line order.
 * Such a reference is on a VALIDATED or INVALID row, so only those are looked up; rows are read by reference
 * alone (with the batch in the query too, a planner may walk every row of the batch).
 */
async function rowsSharingReference(trx: Database, batchId: string): Promise<Map<string, RowOfReference[]>> {
  const candidates = trx('payouts')
    .where({ batch_id: batchId })
    .whereIn('state', ['VALIDATED', 'INVALID'])
    .whereNot({ merchant_reference_id: '' })
    .select('merchant_reference_id');
  const rows = (await trx('payouts')
    .whereIn('merchant_reference_id', candidates)
    .select('id', 'batch_id', 'line', 'state', 'merchant_reference_id')) as RowOfReference[];
  const byReference = new Map<string, RowOfReference[]>();
  for (const r of rows.filter((x) => x.batch_id === batchId).sort((a, b) => a.line - b.line)) {
    const group = byReference.get(r.merchant_reference_id);
    if (group) group.push(r);
    else byReference.set(r.merchant_reference_id, [r]);
  }
  for (const [reference, ofReference] of byReference) if (ofReference.length < 2) byReference.delete(reference);
  return byReference;
}

/** Of `references`, those on two rows or more of the batch (looked up by reference alone, as above). */
async function referencesOnTwoRows(trx: Database, batchId: string, references: string[]): Promise<Set<string>> {
  const rowsOf = new Map<string, number>();
  for (let i = 0; i < references.length; i += REFERENCES_PER_LOOKUP) {
    const rows = (await trx('payouts')
      .whereIn('merchant_reference_id', references.slice(i, i + REFERENCES_PER_LOOKUP))
      .select('batch_id', 'merchant_reference_id')) as { batch_id: string; merchant_reference_id: string }[];
    for (const r of rows) if (r.batch_id === batchId) rowsOf.set(r.merchant_reference_id, (rowsOf.get(r.merchant_reference_id) ?? 0) + 1);
  }
  return new Set([...rowsOf].filter(([, n]) => n > 1).map(([reference]) => reference));
}

/** The error of a row whose reference a check refuses, and its move, the row's reason led by its place (`CODE [column A "Ref"]: …`). */
function referenceMark(row: RowMarking & { line: number }, column: ReferenceColumn): { error: BatchErrorRecord; move: RowMarking } {
  const { id, from, line, code, reason: message } = row;
  return {
    error: { line, column: column.column, columnIndex: column.columnIndex, field: 'merchantReferenceId', code, message },
    move: { id, from, code, reason: `${code} [${column.place}]: ${message}` },
  };
}

/**
 * Why the row on `line` is refused when its reference is on other rows of its file too (`lines`, its own among
 * them): those lines, and what to do. The ack says it, and `payoutd validate` before any file is dropped.
 */
export function inFileDuplicateMessage(reference: string, line: number, lines: readonly number[]): string {
  const others = lines.filter((l) => l !== line);
  return `the reference ${reference} is also on line${others.length > 1 ? 's' : ''} ${others.join(', ')} of this file; give each payout its own reference, or delete the row that repeats another`;
}

async function markInFileDuplicates(trx: Database, batchId: string, now: number, column: ReferenceColumn): Promise<Marked> {
  const errors: BatchErrorRecord[] = [];
  const moves: RowMarking[] = [];
  for (const [reference, rows] of await rowsSharingReference(trx, batchId)) {
    const lines = rows.map((r) => r.line);
    for (const r of rows) {
      const message = inFileDuplicateMessage(reference, r.line, lines);
      const mark = referenceMark({ id: r.id, line: r.line, from: r.state, code: 'DUPLICATE_IN_FILE', reason: message }, column);
      errors.push(mark.error);
      if (VALID.includes(r.state)) moves.push(mark.move);
    }
  }
  return { errors, moved: await markRows(trx, moves, 'INVALID', now) };
}

/** A row a check moves out of the valid states, from the state it was read in, and why. */
interface RowMarking {
  id: number;
  from: string;
  code: string;
  reason: string;
}

/**
 * Moves the rows to `to` with their reasons, a multi-row UPDATE per state left (a file sent again can mark every
 * one of its rows); a row no longer in the state it was read in is left as it is. How many rows moved.
 */
async function markRows(trx: Database, moves: RowMarking[], to: string, now: number): Promise<number> {
  let moved = 0;
  for (const from of new Set(moves.map((m) => m.from))) {
    const values = moves.filter((m) => m.from === from).map((m) => [m.id, to, m.code, m.reason, now]);
    moved += (await updateValueRows(trx, 'payouts', MARKED_COLUMNS, values, { column: 'state', value: from })).length;
  }
  return moved;
}

/** Whether two stored requests ask for the same payout (compared by value: rows kept before 0008 were re-encoded in SQL). */
function sameRequest(a: string, b: string): boolean {
  if (a === b) return true;
  const x = decodeRequestValues(a);
  const y = decodeRequestValues(b);
  return x.every((v, i) => v === y[i]);
}

/** When a batch was received, as a message says it: `2026-01-05 09:00 UTC`. */
function receivedText(ms: number | string): string {
  return `${new Date(Number(ms)).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A row of another batch as a message names it, its file by the name finance gave it: `line 2 of "pay.csv" (batch B…, received …)`. */
function placeIn(file: string, line: number, batchId: string, receivedAt: number | string): string {
  return `line ${line} of ${JSON.stringify(file)} (batch ${batchId}, received ${receivedText(receivedAt)})`;
}

/**
 * Marks the batch's VALIDATED rows whose reference a row of another batch holds, all of them or those of one
 * `range` of lines. A range leaves out a reference that is on another row of this file too: the acceptance
 * names it a duplicate in the file first.
 */
async function markEarlierReferences(
  trx: Database,
  batchId: string,
  now: number,
  column: ReferenceColumn,
  range?: LineRange,
): Promise<Marked> {
  const inRange = (q: Knex.QueryBuilder): Knex.QueryBuilder => {
    if (range === undefined) return q;
    q.andWhere('p.line', '>', range.after);
    return range.upTo === null ? q : q.andWhere('p.line', '<=', range.upTo);
  };
  const found = (await trx('payouts as p')
    .join('payouts as h', function () {
      this.on('h.merchant_reference_id', '=', 'p.merchant_reference_id').andOn('h.batch_id', '<>', 'p.batch_id');
    })
    .join('batches as hb', 'hb.id', 'h.batch_id')
    .where('p.batch_id', batchId)
    .andWhere('p.state', 'VALIDATED')
    .whereIn('h.state', HOLDING)
    .select(
      'p.id',
      'p.line',
      'p.merchant_reference_id',
      'p.request_values',
      'h.batch_id as other_batch',
      'h.line as other_line',
      'h.request_values as other_request',
      'hb.state as other_batch_state',
      'hb.file_name as other_file',
      'hb.received_at as other_received_at',
    )
    .modify(inRange)) as {
    id: number;
    line: number;
    merchant_reference_id: string;
    request_values: string;
    other_batch: string;
    other_line: number;
    /** Null once retention cleared the earlier row's details (its reference stays). */
    other_request: string | null;
    other_batch_state: string;
    other_file: string;
    other_received_at: number | string;
  }[];
  const alsoInFile =
    range === undefined
      ? new Set<string>()
      : await referencesOnTwoRows(
          trx,
          batchId,
          found.map((c) => c.merchant_reference_id),
        );
  const clashes = found.filter((c) => !alsoInFile.has(c.merchant_reference_id));
  const errors: BatchErrorRecord[] = [];
  const moves: RowMarking[] = [];
  for (const c of clashes) {
    const pruned = c.other_request === null;
    const same = c.other_request !== null && sameRequest(c.request_values, c.other_request);
    const code = same || pruned ? 'DUPLICATE_REFERENCE' : 'REFERENCE_CONFLICT';
    // Another file being read at the same time holds it from its insert; whether that file is accepted is not known yet.
    const undecided = isBeingRead(c.other_batch_state);
    const file = JSON.stringify(c.other_file);
    const earlier = placeIn(c.other_file, c.other_line, c.other_batch, c.other_received_at);
    const reference = `the reference ${c.merchant_reference_id}`;
    const message = undecided
      ? `${reference} is held by ${earlier}, a file being read at the same time; this row is not paid by this file: if ${file} is rejected, neither file pays it, so send this row again then`
      : pruned
        ? `${reference} was already used by ${earlier}, finished long ago (its details are no longer kept); this row is not paid: give it its own reference if it is a new payout`
        : same
          ? `${reference} was already submitted by ${earlier} with the same content; this row is not paid again: remove it, or give it its own reference to pay the same once more`
          : `${reference} is already used by ${earlier} for a different payout; this row is not paid: give it its own reference, or remove it if it was already paid by ${file}`;
    const mark = referenceMark({ id: c.id, line: c.line, from: 'VALIDATED', code, reason: message }, column);
    errors.push(mark.error);
    moves.push(mark.move);
  }
  return { errors, moved: await markRows(trx, moves, 'DUPLICATE', now) };
}

/** A retry round of the batch and a row holding its base or another round of it, with that row's batch. */
interface RoundClash {
  id: number;
  line: number;
  state: string;
  merchant_reference_id: string;
  retry_base: string;
  other_id: number;
  other_reference: string;
  /** Null when the other row is the base itself, an original. */
  other_base: string | null;
  other_batch: string;
  other_line: number;
  other_state: string;
  other_batch_state: string;
  other_file: string;
  other_received_at: number | string;
}

/**
 * The batch's valid retry rounds (READY or VALIDATED) and each row, of any batch, this one's among them, that
 * holds their base or another round of it in a state that was or may be sent and not cancelled. Only round rows
 * are read, through the partial indexes of migration 0027: for a file without any, each query is one empty probe.
 * Rounds are matched by key, then checked to be spellings of one base (a key alone could be a base's own
 * `-H…` text). The base is matched as spelled: the original behind a hashed spelling is not looked up, as
 * retry files make such rounds only of a cancelled row, which holds its reference for good.
 */
async function roundClashes(trx: Database, batchId: string): Promise<RoundClash[]> {
  const holders = (on: (join: Knex.JoinClause) => void): Knex.QueryBuilder =>
    trx('payouts as p')
      .join('payouts as h', function () {
        on(this);
        this.andOn('h.id', '<>', 'p.id');
      })
      .join('batches as hb', 'hb.id', 'h.batch_id')
      .where('p.batch_id', batchId)
      .whereNotNull('p.retry_key')
      .whereIn('p.state', VALID)
      .whereIn('h.state', [...RETRY_BLOCKING_STATES])
      .select(
        'p.id',
        'p.line',
        'p.state',
        'p.merchant_reference_id',
        'p.retry_base',
        'h.id as other_id',
        'h.merchant_reference_id as other_reference',
        'h.retry_base as other_base',
        'h.batch_id as other_batch',
        'h.line as other_line',
        'h.state as other_state',
        'hb.state as other_batch_state',
        'hb.file_name as other_file',
        'hb.received_at as other_received_at',
      );
  const rounds = (await holders((j) => j.on('h.retry_key', '=', 'p.retry_key'))) as RoundClash[];
  const bases = (await holders((j) => j.on('h.merchant_reference_id', '=', 'p.retry_base'))) as RoundClash[];
  return [...rounds.filter((c) => c.other_base !== null && sameRetryBase(c.retry_base, c.other_base)), ...bases];
}

/** How a row holding the base stands, the most telling first: paid, being paid, in a file being read, in this file. */
function clashRank(c: RoundClash, batchId: string): number {
  if (c.other_batch === batchId) return 3;
  if (c.other_state === 'PAID') return 0;
  return isBeingRead(c.other_batch_state) ? 2 : 1;
}

/** Why a retry row is refused: the payout it retries, the row holding it, where and how it stands, and what to do. */
function retryDuplicateMessage(c: RoundClash, batchId: string): string {
  const retry = `the reference ${c.merchant_reference_id} retries ${c.retry_base}`;
  const as = `${c.other_reference} (${c.other_state})`;
  if (c.other_batch === batchId) {
    return c.other_reference === c.retry_base
      ? `${retry}, which line ${c.other_line} of this file pays itself; this row is not paid: remove it`
      : `${retry}, as does ${c.other_reference} on line ${c.other_line} of this file; this row is not paid: keep one row for that payout and send it again`;
  }
  const other = placeIn(c.other_file, c.other_line, c.other_batch, c.other_received_at);
  // Finance's own references may end in -R<n> (revisions): such a row is a payout of its own.
  const own = `; if this row is another payout, not a retry, give it a reference not ending in ${c.merchant_reference_id.slice(c.retry_base.length)}`;
  switch (clashRank(c, batchId)) {
    case 0:
      return `${retry}, which ${other} already paid as ${as}; this row is not paid: nothing to do, that payout was made${own}`;
    case 1:
      return `${retry}, which ${other} is already paying as ${as}; this row is not paid: nothing to do but wait for that payout's outcome, and if it is cancelled, retry it from the retry file of that batch${own}`;
    default:
      return `${retry}, which ${other}, a file being read at the same time, may pay as ${as}; this row is not paid: wait for that file's outcome, and if it does not pay ${c.retry_base}, send this row again then`;
  }
}

/**
 * Marks DUPLICATE the batch's retry rows whose base, or another round of it, a row holds in a state that was
 * or may be sent and not cancelled, in this batch or another: a retry file dropped twice under different rounds
 * (one refused and made again, say) must not pay one cancellation twice. In the acceptance's transaction, so of
 * two retry files accepted at once the later sees the earlier's rows, and both rows of one file are refused.
 */
async function markRetryRounds(trx: Database, batchId: string, now: number, column: ReferenceColumn): Promise<Marked> {
  const named = new Map<number, RoundClash>();
  for (const c of await roundClashes(trx, batchId)) {
    const held = named.get(c.id);
    const rank = clashRank(c, batchId);
    const before =
      !held || rank < clashRank(held, batchId) || (rank === clashRank(held, batchId) && Number(c.other_id) < Number(held.other_id));
    if (before) named.set(c.id, c);
  }
  const errors: BatchErrorRecord[] = [];
  const moves: RowMarking[] = [];
  for (const c of [...named.values()].sort((a, b) => a.line - b.line)) {
    const reason = retryDuplicateMessage(c, batchId);
    const mark = referenceMark({ id: c.id, line: c.line, from: c.state, code: 'RETRY_DUPLICATE', reason }, column);
    errors.push(mark.error);
    moves.push(mark.move);
  }
  return { errors, moved: await markRows(trx, moves, 'DUPLICATE', now) };
}

/**
 * Marks, a range of lines per transaction, the rows whose reference another batch holds: a large file sent again
 * marks every row, which in the acceptance's one transaction would hold the write lock (and on SQLite the thread)
 * for tens of seconds. The batch is still being read, so nothing else moves its rows meanwhile, and a crash part
 * way reads it again from the start. The acceptance checks again what is left. How many rows moved.
 */
async function markEarlierReferencesByRange(
  db: Database,
  batchId: string,
  now: number,
  column: ReferenceColumn,
  fence?: ReaderFence,
): Promise<number> {
  const [set] = (await db('payouts').where({ batch_id: batchId, state: 'VALIDATED' }).count({ n: '*' })) as { n: number | string }[];
  // A usual file has a few such rows at most: the acceptance's own transaction marks them.
  if (Number(set?.n) <= MARKS_PER_RANGE) return 0;
  let moved = 0;
  await inLineRanges(
    db,
    batchId,
    async (trx, _rows, range) => {
      await fence?.(trx);
      const marked = await markEarlierReferences(trx, batchId, now, column, range);
      await insertBatchErrors(trx, batchId, marked.errors);
      moved += marked.moved;
    },
    MARKS_PER_RANGE,
  );
  return moved;
}

/**
 * The acceptance of a batch read whole. With `fence`, each of its transactions first checks that the batch is
 * still the caller's to read: a reader that lost it (another instance reads it again) must not decide on rows
 * that are no longer its own. `column`: the reference's column as the file has it, for the rows' reasons.
 */
export async function acceptBatchRows(
  db: Database,
  batchId: string,
  policy: InvalidRowsPolicy,
  now: number,
  fence?: ReaderFence,
  column: ReferenceColumn = REFERENCE_FIELD,
): Promise<AcceptanceResult> {
  const markedBefore = await markEarlierReferencesByRange(db, batchId, now, column, fence);
  const verdict = await writeTransaction(db, async (trx) => {
    await fence?.(trx);
    const inFile = await markInFileDuplicates(trx, batchId, now, column);
    const earlier = await markEarlierReferences(trx, batchId, now, column);
    // After those: a row they refused holds nothing, and a row of this file they left is read in its state now.
    const rounds = await markRetryRounds(trx, batchId, now, column);
    const rowsChanged = markedBefore + inFile.moved + earlier.moved + rounds.moved;
    await insertBatchErrors(trx, batchId, [...inFile.errors, ...earlier.errors, ...rounds.errors]);
    const counts = (await trx('payouts').where({ batch_id: batchId }).select('state').count({ n: '*' }).groupBy('state')) as {
      state: string;
      n: number | string;
    }[];
    const count = (s: string): number => Number(counts.find((c) => c.state === s)?.n ?? 0);
    const invalidCount = count('INVALID');
    const duplicateCount = count('DUPLICATE');
    const validated = count('READY') + count('VALIDATED');
    const problems = invalidCount + duplicateCount;
    const refusedForRows = problems > 0 && policy === 'reject-file';
    if (refusedForRows || validated === 0) {
      const rejectReason = refusedForRows
        ? `${problems} invalid row(s) (${invalidCount} invalid, ${duplicateCount} duplicate reference); onInvalidRows is reject-file, so no row of this file is paid`
        : 'no valid row to pay';
      // The valid rows of a file refused for its rows are let go below, with this reason.
      const letGo =
        refusedForRows && validated > 0 ? `not paid: the file has ${problems} invalid row(s) and the policy is reject-file` : null;
      return { accepted: false, rowsChanged, readyCount: 0, invalidCount, duplicateCount, rejectReason, letGo };
    }
    // Rows set aside at their insert whose reference was let go since (the holder's file was rejected).
    await trx('payouts').where({ batch_id: batchId, state: 'VALIDATED' }).update({ state: 'READY', next_attempt_at: now, updated_at: now });
    return { accepted: true, rowsChanged, readyCount: validated, invalidCount, duplicateCount, rejectReason: null, letGo: null };
  });
  const { letGo, ...result } = verdict;
  if (letGo !== null) {
    // The file is refused for its rows: their references are let go (it is sent again once corrected), a range
    // at a time as above; the batch is still being read until its refusal is recorded.
    await inLineRanges(db, batchId, async (trx, rows) => {
      await fence?.(trx);
      await rows().whereIn('state', VALID).update({ state: 'NOT_SUBMITTED', reason_code: 'FILE_REJECTED', reason: letGo, updated_at: now });
    });
  }
  return result;
}

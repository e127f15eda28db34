/**
 * Accepting a batch once all its rows are read: the checks that need every row (a reference twice in the
 * file, a reference another batch holds, a retry of a payout another row pays or may pay, the original of such
 * a retry) and the file policy, in one transaction. A reference that is another's but for leading zeros is
 * refused before it, a range of lines at a time (./reference-zeros.ts). Valid rows went in READY holding their
 * reference; those whose reference was already held went in VALIDATED, so the clashes are among the few
 * VALIDATED rows and an accepted batch's READY rows need no second pass (retry rows are found through indexes of
 * their own). The work that grows with a large file (a file sent again has every row marked; a file refused
 * lets every row go) is done a range of lines per transaction around that one.
 */
import type { Knex } from 'knex';
import { BEING_READ_BATCH_STATES, REFERENCE_HOLDING_STATES, isBeingRead } from '../domain/lifecycle.js';
import { decodeRequestValues } from '../domain/request-values.js';
import { HASHED_SUFFIX_LENGTH, RETRY_BLOCKING_STATES, sameRetryBase } from '../domain/retry-reference.js';
import { writeTransaction, type Database } from './db.js';
import { insertBatchErrors, type BatchErrorRecord } from './batch-errors.js';
import { cancelOnAcceptance, rowsCancelledOnAcceptance } from './cancels.js';
import { updateValueRows } from './multi-row-update.js';
import { inLineRanges, type LineRange } from './payouts.js';
import { updateBatch, type BatchRecord, type ReaderFence } from './batches.js';
import { recordBatchEvent } from './batch-events.js';
import { hasDigitReferences, zerosRefusals, type ZerosRefusal } from './reference-zeros.js';
import { ifNotPaidBy, placeIn, standingOf, standingOrder } from './row-place.js';
import { whereServiceContradicts } from './service-checks.js';
import {
  changedFields,
  conflictMessage,
  contradictedText,
  NO_RETRY_FILES,
  REFERENCES_PER_LOOKUP,
  retryPlans,
  sameContentMessage,
  type HoldingRow,
  type RetryFiles,
} from './reference-advice.js';
import type { BatchEventInput } from '../domain/batch-events.js';

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

/** A row whose reference a check refuses: the state it was read in, and why. */
interface Refusal {
  id: number;
  line: number;
  from: string;
  code: string;
  reason: string;
}

/**
 * Records the refusals: an error for each, and for a row read valid a move to `to` with its reason led by its
 * place (`CODE [column A "Ref"]: …`), a multi-row UPDATE per state left (a file sent again can mark every one of
 * its rows). A row read INVALID keeps its state; a row no longer in the state it was read in is left as it is.
 */
async function markRefused(trx: Database, refusals: Refusal[], column: ReferenceColumn, to: string, now: number): Promise<Marked> {
  const errors = refusals.map(({ line, code, reason: message }): BatchErrorRecord => {
    return { line, column: column.column, columnIndex: column.columnIndex, field: 'merchantReferenceId', code, message };
  });
  let moved = 0;
  for (const from of VALID) {
    const values = refusals.filter((r) => r.from === from).map((r) => [r.id, to, r.code, `${r.code} [${column.place}]: ${r.reason}`, now]);
    moved += (await updateValueRows(trx, 'payouts', MARKED_COLUMNS, values, { column: 'state', value: from })).length;
  }
  return { errors, moved };
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
  const refusals: Refusal[] = [];
  for (const [reference, rows] of await rowsSharingReference(trx, batchId)) {
    const lines = rows.map((r) => r.line);
    for (const r of rows) {
      const reason = inFileDuplicateMessage(reference, r.line, lines);
      refusals.push({ id: r.id, line: r.line, from: r.state, code: 'DUPLICATE_IN_FILE', reason });
    }
  }
  return markRefused(trx, refusals, column, 'INVALID', now);
}

/** Whether two stored requests ask for the same payout (compared by value: rows kept before 0008 were re-encoded in SQL). */
function sameRequest(a: string, b: string): boolean {
  if (a === b) return true;
  const x = decodeRequestValues(a);
  const y = decodeRequestValues(b);
  return x.every((v, i) => v === y[i]);
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
  files: RetryFiles,
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
      'h.state as other_state',
      'h.payout_id as other_payout',
      'h.service_check as other_check',
      'h.service_note as other_note',
      'h.reason_code as other_code',
      'hb.state as other_batch_state',
      'hb.file_name as other_file',
      'hb.received_at as other_received_at',
      'hb.hold_code as other_hold',
      'hb.approval_state as other_approval',
    )
    .modify(inRange)) as ({
    id: number;
    line: number;
    merchant_reference_id: string;
    request_values: string;
    other_batch: string;
    other_line: number;
    /** Null once retention cleared the earlier row's details (its reference stays). */
    other_request: string | null;
    other_received_at: number | string;
  } & HoldingRow)[];
  const alsoInFile =
    range === undefined
      ? new Set<string>()
      : await referencesOnTwoRows(
          trx,
          batchId,
          found.map((c) => c.merchant_reference_id),
        );
  const plans = await retryPlans(trx, found, files);
  const refusals: Refusal[] = [];
  for (const c of found.filter((x) => !alsoInFile.has(x.merchant_reference_id))) {
    const pruned = c.other_request === null;
    const same = c.other_request !== null && sameRequest(c.request_values, c.other_request);
    const code = same || pruned ? 'DUPLICATE_REFERENCE' : 'REFERENCE_CONFLICT';
    // Another file being read at the same time holds it from its insert; whether that file is accepted is not known yet.
    const undecided = isBeingRead(c.other_batch_state);
    const earlier = placeIn(c.other_file, c.other_line, c.other_batch, c.other_received_at);
    const reference = `the reference ${c.merchant_reference_id}`;
    const message = undecided
      ? `${reference} is held by ${earlier}, a file being read at the same time; this row is not paid by this file: ${ifNotPaidBy(c.other_file)}`
      : pruned
        ? `${reference} was already used by ${earlier}, finished long ago (its details are no longer kept); this row is not paid: give it its own reference if it is a new payout`
        : same
          ? sameContentMessage(earlier, c, plans.get(c.merchant_reference_id), files)
          : conflictMessage(earlier, c, changedFields(c.request_values, c.other_request), plans.get(c.merchant_reference_id), files);
    refusals.push({ id: c.id, line: c.line, from: 'VALIDATED', code, reason: message });
  }
  return markRefused(trx, refusals, column, 'DUPLICATE', now);
}

/** The states of a row holding the base of a retry round (src/domain/retry-reference.ts). */
const BLOCKING = [...RETRY_BLOCKING_STATES];
/** Of those, a row sent or to be sent and not paid yet. */
const PAYING = BLOCKING.filter((s) => s !== 'PAID');
/**
 * States of a row that held a payout and holds a base only while the payout service contradicts it, is being asked
 * about it (src/poll/checks.ts) or holds a payout under its reference (REFERENCE_TAKEN, recorded REJECTED): its
 * payout may have been paid all the same.
 */
const CONTRADICTABLE = HOLDING.filter((s) => !RETRY_BLOCKING_STATES.has(s));
const BEING_READ = [...BEING_READ_BATCH_STATES];

/** Narrows a query of payouts `h` to rows of CONTRADICTABLE states that the service contradicts (serviceContradicts). */
function contradicted(q: Knex.QueryBuilder, h: string): Knex.QueryBuilder {
  return whereServiceContradicts(q.whereIn(`${h}.state`, CONTRADICTABLE), h);
}

/** A row the guard names (it holds a base, or makes it known), with its batch as a message places it. */
interface NamedRow {
  id: number | string;
  batch_id: string;
  line: number;
  state: string;
  merchant_reference_id: string;
  payout_id: string | null;
  /** Set while payoutd asks the payout service about the row (src/store/service-checks.ts). */
  service_check: string | null;
  /** Set while that check is owed, or once the service contradicted the row. */
  service_note: string | null;
  /** REFERENCE_TAKEN: the service holds a payout under the row's reference. */
  reason_code: string | null;
  batch_state: string;
  file_name: string;
  received_at: number | string;
}

/** A valid retry round of the batch being accepted. */
interface RoundRow {
  id: number;
  line: number;
  state: string;
  merchant_reference_id: string;
  retry_key: string;
  retry_base: string;
}

/**
 * A base of the batch's rounds as spelled, with the ids of a row making it known (null: not known), of the most
 * telling row of another batch holding it, and of a valid row of this batch whose reference is the base itself.
 */
interface RoundBase {
  retry_key: string;
  retry_base: string;
  known_id: number | string | null;
  holder_id: number | string | null;
  own_base_id: number | string | null;
}

/** SQL: the start the base of round row `row` keeps in its hashed spelling (`<start>-H<its key>`), else the whole base. */
function startSql(row: string): string {
  const base = `${row}.retry_base`;
  const hashed = `substr(${base}, length(${base}) - ${HASHED_SUFFIX_LENGTH - 1}) = '-H' || ${row}.retry_key`;
  return `case when ${hashed} then substr(${base}, 1, length(${base}) - ${HASHED_SUFFIX_LENGTH}) else ${base} end`;
}

/**
 * SQL: sameRetryBase of a round row `h` and a base `k` of the same key whose start is `k.start`, so that a probe
 * stops at its first row of that base: the same text, or either start beginning the other.
 */
function sameBaseSql(h: string, k: string): string {
  const start = startSql(h);
  return `(${h}.retry_base = ${k}.retry_base or substr(${start}, 1, length(${k}.start)) = substr(${k}.start, 1, length(${start})))`;
}

/**
 * The bases of the batch's valid retry rounds, one row each however many of its rounds the file has, so that a
 * file of rounds of one base costs each probe once. A base is known as a payout of its own when a row has it as
 * its reference (any state, any batch) or, for a hashed spelling whose original text is not known, a round of it
 * is in another batch: rows merely sharing a prefix in one file (finance's `RUN-R1`, `RUN-R2`, …) are payouts
 * of their own. Each probe is an index search that stops at its first row: several probes, most telling first
 * (paid, being paid or contradicted by the payout service, in a file being read), name a holder without reading
 * every row of the base.
 */
async function roundBases(trx: Database, batchId: string): Promise<RoundBase[]> {
  const probe = (k: string, of: 'base' | 'round', where: (q: Knex.QueryBuilder) => unknown): Knex.QueryBuilder => {
    const q = trx('payouts as h').select('h.id');
    if (of === 'base') q.whereRaw(`h.merchant_reference_id = ${k}.retry_base`);
    else q.whereRaw(`h.retry_key = ${k}.retry_key and ${sameBaseSql('h', k)}`);
    where(q);
    return q.limit(1);
  };
  const otherBatch = (q: Knex.QueryBuilder, states: readonly string[]): Knex.QueryBuilder =>
    q
      .join('batches as hb', 'hb.id', 'h.batch_id')
      .whereNot('h.batch_id', batchId)
      .whereIn('h.state', [...states]);
  const ranks: ((q: Knex.QueryBuilder) => unknown)[] = [
    (q) => q.where('h.state', 'PAID'),
    (q) => otherBatch(q, PAYING).whereNotIn('hb.state', BEING_READ),
    // Ranked with the rows being paid: either may have paid the base, and neither outcome is known yet.
    (q) => contradicted(q, 'h'),
    (q) => otherBatch(q, BLOCKING).whereIn('hb.state', BEING_READ),
  ];
  const holders = ranks.flatMap((rank) => [probe('k', 'base', rank), probe('k', 'round', rank)]);
  // The batch concatenated: as an index column beside the reference, a planner may walk a large file's rows instead.
  const ownBase = probe('k', 'base', (q) => q.whereRaw(`h.batch_id || '' = ?`, [batchId]).whereIn('h.state', VALID));
  const bases = trx('payouts')
    .distinct('retry_key', 'retry_base')
    .where({ batch_id: batchId })
    .whereNotNull('retry_key')
    .whereIn('state', VALID);
  const spelled = trx.from('bases as b').select('b.retry_key', 'b.retry_base', trx.raw(`${startSql('b')} as start`));
  const known = trx
    .from('spelled as s')
    .select(
      's.retry_key',
      's.retry_base',
      's.start',
      trx.raw('coalesce(?, case when s.start <> s.retry_base then ? end) as known_id', [
        probe('s', 'base', () => undefined),
        probe('s', 'round', (q) => q.whereNot('h.batch_id', batchId)),
      ]),
    );
  return (await trx
    .withMaterialized('bases', bases)
    .withMaterialized('spelled', spelled)
    .withMaterialized('known', known)
    .from('known as k')
    .select(
      'k.retry_key',
      'k.retry_base',
      'k.known_id',
      trx.raw(`case when k.known_id is null then null else coalesce(${holders.map(() => '?').join(', ')}) end as holder_id`, holders),
      trx.raw('case when k.known_id is null then null else ? end as own_base_id', [ownBase]),
    )) as RoundBase[];
}

/** The rows of `ids` with their batches, by id. */
async function namedRows(trx: Database, ids: readonly (number | string | null)[]): Promise<Map<number, NamedRow>> {
  const wanted = [...new Set(ids.filter((id) => id !== null).map(Number))];
  const byId = new Map<number, NamedRow>();
  for (let i = 0; i < wanted.length; i += REFERENCES_PER_LOOKUP) {
    const rows = (await trx('payouts as h')
      .join('batches as hb', 'hb.id', 'h.batch_id')
      .whereIn('h.id', wanted.slice(i, i + REFERENCES_PER_LOOKUP))
      .select(
        'h.id',
        'h.batch_id',
        'h.line',
        'h.state',
        'h.merchant_reference_id',
        'h.payout_id',
        'h.service_check',
        'h.service_note',
        'h.reason_code',
        'hb.state as batch_state',
        'hb.file_name',
        'hb.received_at',
      )) as NamedRow[];
    for (const r of rows) byId.set(Number(r.id), r);
  }
  return byId;
}

/**
 * Two rows holding a base, the most telling first, then the first stored: the one a message names. Only the probes
 * of roundBases and markRetriedOriginals name a row, so one that ended (CANCELLED, REJECTED) is one they found
 * contradicted by the payout service.
 */
const byStanding = standingOrder((r: NamedRow) => [r.state, r.batch_state, r.id]);

/** The row named in a message: `line 3 of this file`, or a row of another batch with its file. */
function placeOf(row: NamedRow, batchId: string): string {
  return row.batch_id === batchId ? `line ${row.line} of this file` : placeIn(row.file_name, row.line, row.batch_id, row.received_at);
}

/** What a refused round is held by: a row of another batch, its base in this file, or another round of it in this file. */
type RoundHeld =
  { by: 'holder'; row: NamedRow } | { by: 'own base'; row: NamedRow } | { by: 'round alongside'; row: RoundRow; known: NamedRow };

/** Why a retry row is refused: the payout it retries, the row holding it, where and how it stands, and what to do. */
function retryDuplicateMessage(c: RoundRow, held: RoundHeld, batchId: string): string {
  const retry = `the reference ${c.merchant_reference_id} retries ${c.retry_base}`;
  // Finance's own references may end in -R<n> (revisions): such a row is a payout of its own.
  const own = `; if this row is another payout, not a retry, give it a reference not ending in ${c.merchant_reference_id.slice(c.retry_base.length)}`;
  if (held.by === 'own base')
    return `${retry}, which line ${held.row.line} of this file pays itself; this row is not paid: remove it${own}`;
  if (held.by === 'round alongside') {
    const { known, row } = held;
    const where = placeOf(known, batchId);
    const payout =
      known.merchant_reference_id === c.retry_base
        ? `a payout of ${where}`
        : `a payout retried as ${known.merchant_reference_id} by ${where}`;
    return `${retry}, ${payout}, as does ${row.merchant_reference_id} on line ${row.line} of this file; this row is not paid: keep one row for that payout and send it again${own}`;
  }
  const other = placeOf(held.row, batchId);
  const as = `${held.row.merchant_reference_id} (${held.row.state})`;
  switch (standingOf(held.row.state, held.row.batch_state)) {
    case 'paid':
      return `${retry}, which ${other} already paid as ${as}; this row is not paid: nothing to do, that payout was made${own}`;
    case 'paying':
      return `${retry}, which ${other} is already paying as ${as}; this row is not paid: nothing to do but wait for that payout's outcome, and if it is cancelled, retry it from the retry file of that batch${own}`;
    case 'ended': {
      const { said, todo } = contradictedText(held.row, 'this retry');
      return `${retry}, which ${other} recorded ${held.row.state} as ${held.row.merchant_reference_id}, but ${said}; this row is not paid: ${todo}${own}`;
    }
    case 'being read':
      return `${retry}, which ${other}, a file being read at the same time, may pay as ${as}; this row is not paid: wait for that file's outcome, and if it does not pay ${c.retry_base}, send this row again then`;
  }
}

/** The spellings of one base among `bases`: of one key, and each start beginning the other's (sameRetryBase). */
function spellingsOfOneBase(bases: readonly RoundBase[]): RoundBase[][] {
  const byKey = new Map<string, RoundBase[][]>();
  for (const b of bases) {
    const ofKey = byKey.get(b.retry_key) ?? [];
    const same = ofKey.find((spellings) => spellings[0] !== undefined && sameRetryBase(spellings[0].retry_base, b.retry_base));
    if (same) same.push(b);
    else ofKey.push([b]);
    byKey.set(b.retry_key, ofKey);
  }
  return [...byKey.values()].flat();
}

/**
 * Marks DUPLICATE the batch's retry rows whose base is known as a payout and held, or another round of it is, by a
 * row in a state that was or may be sent and not cancelled, in this batch or another, or by a cancelled row the
 * payout service contradicts or is being asked about: a retry file dropped twice under different rounds (one
 * refused and made again, say), or taken before the service said the payout was paid after all, must not pay one
 * cancellation twice. In the acceptance's transaction, so of two retry files accepted at once the later sees the
 * earlier's rows, and both rows of one file are refused.
 */
async function markRetryRounds(trx: Database, batchId: string, now: number, column: ReferenceColumn): Promise<Marked> {
  const known = spellingsOfOneBase(await roundBases(trx, batchId)).filter((spellings) => spellings.some((b) => b.known_id !== null));
  if (known.length === 0) return { errors: [], moved: 0 };
  const named = await namedRows(
    trx,
    known.flat().flatMap((b) => [b.known_id, b.holder_id, b.own_base_id]),
  );
  const nameOf = (id: number | string | null): NamedRow | undefined => (id === null ? undefined : named.get(Number(id)));
  const baseOf = new Map<string, RoundBase[]>();
  for (const spellings of known) for (const b of spellings) baseOf.set(`${b.retry_key} ${b.retry_base}`, spellings);
  const rounds = (await trx('payouts')
    .where({ batch_id: batchId })
    .whereNotNull('retry_key')
    .whereIn('state', VALID)
    .select('id', 'line', 'state', 'merchant_reference_id', 'retry_key', 'retry_base')) as RoundRow[];
  const roundsOf = new Map<RoundBase[], RoundRow[]>();
  // Sorted here: ordered by line, a planner may walk every row of the batch rather than its rounds.
  for (const r of rounds.sort((a, b) => a.line - b.line)) {
    const spellings = baseOf.get(`${r.retry_key} ${r.retry_base}`);
    if (spellings === undefined) continue;
    const ofBase = roundsOf.get(spellings);
    if (ofBase) ofBase.push(r);
    else roundsOf.set(spellings, [r]);
  }
  const refusals: Refusal[] = [];
  for (const [spellings, ofBase] of roundsOf) {
    const holder = spellings
      .map((b) => nameOf(b.holder_id))
      .filter((row) => row !== undefined)
      .sort(byStanding)[0];
    const ownBase = spellings.map((b) => nameOf(b.own_base_id)).find((row) => row !== undefined);
    const knownBy = spellings.map((b) => nameOf(b.known_id)).find((row) => row !== undefined);
    for (const c of ofBase) {
      const alongside = ofBase.find((r) => r.id !== c.id);
      const held: RoundHeld | undefined = holder
        ? { by: 'holder', row: holder }
        : ownBase
          ? { by: 'own base', row: ownBase }
          : alongside && knownBy
            ? { by: 'round alongside', row: alongside, known: knownBy }
            : undefined;
      if (!held) continue;
      refusals.push({ id: c.id, line: c.line, from: c.state, code: 'RETRY_DUPLICATE', reason: retryDuplicateMessage(c, held, batchId) });
    }
  }
  return markRefused(trx, refusals, column, 'DUPLICATE', now);
}

/** Why an original is refused: a retry of it is paid or may be paid (the row, where and how it stands), and what to do. */
function retriedOriginalMessage(reference: string, round: NamedRow): string {
  const place = placeIn(round.file_name, round.line, round.batch_id, round.received_at);
  const by = `its retry ${round.merchant_reference_id} (${round.state}) on ${place}`;
  const own = '; if this row is another payout, give it a reference of its own';
  switch (standingOf(round.state, round.batch_state)) {
    case 'paid':
      return `the reference ${reference} was already paid by ${by}; this row is not paid: nothing to do, that payout was made${own}`;
    case 'paying':
      return `the reference ${reference} is already being paid by ${by}; this row is not paid: nothing to do but wait for that payout's outcome, and if it is cancelled, retry it from the retry file of that batch${own}`;
    case 'ended': {
      const { said, todo } = contradictedText(round, 'this row');
      return `the reference ${reference} was retried by its retry ${round.merchant_reference_id} on ${place}, recorded ${round.state}, but ${said}; this row is not paid: ${todo}${own}`;
    }
    case 'being read':
      return `the reference ${reference} may be paid by ${by}, a file being read at the same time; this row is not paid: wait for that file's outcome, and if it does not pay ${round.merchant_reference_id}, send this row again then`;
  }
}

/**
 * Marks DUPLICATE the batch's valid rows whose reference is the base of a round of another batch in a state that
 * was or may be sent and not cancelled, or contradicted by the payout service: an original dropped again once a
 * retry of it was paid. Read from the side of the round rows, each probing this batch for its base, so the cost
 * grows with the database's rounds, not with the file (a file with no round anywhere costs one empty probe). After
 * markRetryRounds: a round of this file whose base is in it too was refused there, and holds nothing. An original
 * behind a hashed spelling is not matched.
 */
async function markRetriedOriginals(trx: Database, batchId: string, now: number, column: ReferenceColumn): Promise<Marked> {
  const original = trx('payouts as p')
    .select('p.id')
    .whereRaw('p.merchant_reference_id = r.retry_base')
    // The batch concatenated, as in roundBases: the file's rows are found by reference alone.
    .whereRaw(`p.batch_id || '' = ?`, [batchId])
    .whereIn('p.state', VALID)
    .limit(1);
  const pairs = (await trx
    .from(
      trx('payouts as r')
        .select('r.id as round_id', trx.raw('? as original_id', [original]))
        .whereNotNull('r.retry_key')
        .andWhere((w) => {
          void w.whereIn('r.state', BLOCKING).orWhere((x) => void contradicted(x, 'r'));
        })
        .whereNot('r.batch_id', batchId)
        .as('m'),
    )
    .whereNotNull('m.original_id')
    .select('m.round_id', 'm.original_id')) as { round_id: number | string; original_id: number | string }[];
  if (pairs.length === 0) return { errors: [], moved: 0 };
  const named = await namedRows(trx, [...pairs.map((p) => p.round_id), ...pairs.map((p) => p.original_id)]);
  const retriedBy = new Map<number, NamedRow>();
  for (const p of pairs) {
    const round = named.get(Number(p.round_id));
    const held = retriedBy.get(Number(p.original_id));
    if (round && (!held || byStanding(round, held) < 0)) retriedBy.set(Number(p.original_id), round);
  }
  const refusals: Refusal[] = [];
  for (const [id, round] of retriedBy) {
    const o = named.get(id);
    if (!o) continue;
    const reason = retriedOriginalMessage(o.merchant_reference_id, round);
    refusals.push({ id, line: o.line, from: o.state, code: 'RETRY_DUPLICATE', reason });
  }
  return markRefused(trx, refusals, column, 'DUPLICATE', now);
}

/** Runs `mark` on the batch a range of lines per transaction, each first fenced, recording its errors. How many rows moved. */
async function markInRanges(
  db: Database,
  batchId: string,
  fence: ReaderFence | undefined,
  mark: (trx: Database, range: LineRange) => Promise<Marked>,
): Promise<number> {
  let moved = 0;
  await inLineRanges(
    db,
    batchId,
    async (trx, _rows, range) => {
      await fence?.(trx);
      const marked = await mark(trx, range);
      await insertBatchErrors(trx, batchId, marked.errors);
      moved += marked.moved;
    },
    MARKS_PER_RANGE,
  );
  return moved;
}

/** Marks the batch's valid rows on `range`'s lines whose reference is another's but for leading zeros (./reference-zeros.ts). */
async function markLostZeros(trx: Database, batchId: string, now: number, column: ReferenceColumn, range: LineRange): Promise<Marked> {
  const refusals = await zerosRefusals(trx, batchId, range);
  const to = (state: ZerosRefusal['to']): ZerosRefusal[] => refusals.filter((r) => r.to === state);
  const duplicate = await markRefused(trx, to('DUPLICATE'), column, 'DUPLICATE', now);
  const invalid = await markRefused(trx, to('INVALID'), column, 'INVALID', now);
  return { errors: [...duplicate.errors, ...invalid.errors], moved: duplicate.moved + invalid.moved };
}

/**
 * Marks, a range of lines per transaction, the rows whose reference another batch holds: a large file sent again
 * marks every row, which in the acceptance's one transaction would hold the write lock (and on SQLite the thread)
 * for tens of seconds. The batch is still being read, so nothing else moves its rows meanwhile, and a crash part
 * way reads it again from the start. The acceptance checks again what is left. Likewise, always, the rows whose
 * reference is another's but for leading zeros (a file of numeric references saved again by a spreadsheet): every
 * row of such a reference is probed, and a batch without any costs one probe. Its held references are marked
 * first, whatever the file's size: a row whose own reference is held gets the advice for that row, not for
 * another spelling's. How many rows moved.
 */
async function markByRange(
  db: Database,
  batchId: string,
  now: number,
  column: ReferenceColumn,
  files: RetryFiles,
  fence?: ReaderFence,
): Promise<number> {
  let moved = 0;
  const digits = await hasDigitReferences(db, batchId);
  const [set] = (await db('payouts').where({ batch_id: batchId, state: 'VALIDATED' }).count({ n: '*' })) as { n: number | string }[];
  // A usual file has a few such rows at most: the acceptance's own transaction marks them, unless the zeros are checked.
  if (digits || Number(set?.n) > MARKS_PER_RANGE)
    moved += await markInRanges(db, batchId, fence, (trx, range) => markEarlierReferences(trx, batchId, now, column, files, range));
  if (digits) moved += await markInRanges(db, batchId, fence, (trx, range) => markLostZeros(trx, batchId, now, column, range));
  return moved;
}

/**
 * The acceptance of a batch read whole. With `fence`, each of its transactions first checks that the batch is
 * still the caller's to read: a reader that lost it (another instance reads it again) must not decide on rows
 * that are no longer its own. `column`: the reference's column as the file has it, for the rows' reasons; `files`:
 * the retry files the advice to a row whose payout was cancelled names.
 */
export async function acceptBatchRows(
  db: Database,
  batchId: string,
  policy: InvalidRowsPolicy,
  now: number,
  fence?: ReaderFence,
  column: ReferenceColumn = REFERENCE_FIELD,
  files: RetryFiles = NO_RETRY_FILES,
): Promise<AcceptanceResult> {
  const markedBefore = await markByRange(db, batchId, now, column, files, fence);
  const verdict = await writeTransaction(db, async (trx) => {
    await fence?.(trx);
    const inFile = await markInFileDuplicates(trx, batchId, now, column);
    const earlier = await markEarlierReferences(trx, batchId, now, column, files);
    // After those: a row they refused holds nothing, and a row of this file they left is read in its state now.
    const rounds = await markRetryRounds(trx, batchId, now, column);
    const originals = await markRetriedOriginals(trx, batchId, now, column);
    const rowsChanged = markedBefore + inFile.moved + earlier.moved + rounds.moved + originals.moved;
    await insertBatchErrors(trx, batchId, [...inFile.errors, ...earlier.errors, ...rounds.errors, ...originals.errors]);
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
    // A batch an operator cancelled while it was read: its valid rows end as the cancel says, with their being made READY.
    await cancelOnAcceptance(trx, batchId, now);
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

/**
 * The acceptance of a batch its operator cancelled while it was read: none of its rows is sent, so its accepted
 * money is none (not what its READY rows would have cost), and its event counts the rows the cancel stopped.
 */
export function cancelledAcceptance(
  patch: Partial<BatchRecord>,
  event: Omit<BatchEventInput, 'batchId'>,
  cancelledRows: number,
): { patch: Partial<BatchRecord>; event: Omit<BatchEventInput, 'batchId'> } {
  return {
    patch: { ...patch, acceptedTotalsJson: JSON.stringify({}) },
    event: { ...event, data: { ...event.data, totals: {}, cancelledRows } },
  };
}

/**
 * Makes a batch read whole ACTIVE (`patch`, with its `accepted` event), only while `reader` still reads it. A cancel
 * made since the acceptance looked for one is done in the same transaction: no row of the batch is READY once it
 * is ACTIVE. Rows that moved so were in the ack as accepted: it is owed again (the outbox repair writes it, now with
 * the cancel). A cancelled batch is accepted with no money (cancelledAcceptance). How many rows the cancel made
 * NOT_SUBMITTED here.
 */
export async function activateReadBatch(
  db: Database,
  batchId: string,
  patch: Partial<BatchRecord>,
  now: number,
  event: Omit<BatchEventInput, 'batchId'>,
  reader: string,
): Promise<number> {
  return writeTransaction(db, async (trx) => {
    const cancel = await rowsCancelledOnAcceptance(trx, batchId);
    const accepted = cancel === null ? { patch, event } : cancelledAcceptance(patch, event, cancel.rows);
    await updateBatch(trx, batchId, accepted.patch, now, undefined, reader);
    await recordBatchEvent(trx, { at: now, ...accepted.event, batchId });
    // The batch as read serves the cancel's work: the acceptance's patch changes nothing that work reads.
    const cancelled = cancel === null ? 0 : await cancelOnAcceptance(trx, cancel.batch, now);
    if (cancelled > 0) await trx('batches').where({ id: batchId }).update({ ack_written_at: null });
    return cancelled;
  });
}

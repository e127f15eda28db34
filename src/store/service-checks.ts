/**
 * Checks of rows against the payout service that a webhook made owed (src/poll/checks.ts): which rows are due, and
 * what finance is told of rows the service contradicts or is still being asked about (result files, status).
 */
import type { Knex } from 'knex';
import { FINAL_ROW_STATES, type RowState } from '../domain/lifecycle.js';
import { REFERENCE_TAKEN } from '../domain/payout.js';
import { writeTransaction, type Database } from './db.js';
import { NAMED_ROW_COLUMNS, type FinalRowNamed } from './settlement.js';
import type { BatchEventData } from '../domain/batch-events.js';
import { reportOfNote, serviceReportOf, type Contradiction, type ServiceCheckKind } from '../domain/service-check.js';
import { recordBatchEvent } from './batch-events.js';

/** A row's columns that say whether the payout service contradicts its recorded outcome. */
export interface ServiceSaid {
  service_check: string | null;
  service_note: string | null;
  reason_code: string | null;
}

/**
 * A row whose recorded outcome the payout service contradicts or may: a check owed, a note kept, or REFERENCE_TAKEN
 * (the service holds a payout under its reference). Whatever its state, it may have been paid.
 */
export function serviceContradicts(r: ServiceSaid): boolean {
  return r.service_check !== null || r.service_note !== null || r.reason_code === REFERENCE_TAKEN;
}

/** serviceContradicts in SQL: narrows a query to the rows `p` (a table or its alias) it holds for. */
export function whereServiceContradicts(q: Knex.QueryBuilder, p: string): Knex.QueryBuilder {
  return q.andWhere(
    (w) => void w.whereNotNull(`${p}.service_check`).orWhereNotNull(`${p}.service_note`).orWhere(`${p}.reason_code`, REFERENCE_TAKEN),
  );
}

/** A row a check is owed for, as the check needs it: without a payout only a row ended without one (asked by reference). */
export interface CheckTarget extends Omit<FinalRowNamed, 'payoutId'> {
  payoutId: string | null;
  serviceCheck: ServiceCheckKind;
  /** The round of the check asked: a check made owed again meanwhile has a higher one. */
  serviceCheckRound: number;
  /** The note the batch's last result file showed (null: none, or no result file yet). */
  serviceNoteShown: string | null;
}

/**
 * Makes a check of a row owed now, in a new round: an answer to a query sent before is not taken as this one's.
 * Its note (what finance is told meanwhile) is set unless it already holds one (what the service said before stays
 * until the check has an answer). A row owing a check of its reference, or holding what an answered check said
 * (which may tell of another payout under it), is asked by reference whatever `check` says: an answer about its own
 * payout alone would close what was said of the others. False when the row is no longer in `state` or holds another payout.
 */
export async function markServiceCheck(
  db: Database,
  row: { id: number; state: RowState; payoutId: string | null },
  check: ServiceCheckKind,
  note: string,
  now: number,
): Promise<boolean> {
  const n = await db('payouts')
    .where({ id: row.id, state: row.state, payout_id: row.payoutId })
    .update({
      service_check: db.raw(
        "case when service_check = 'REFERENCE' or (service_check is null and service_note is not null) then 'REFERENCE' else ? end",
        [check],
      ),
      service_check_at: now,
      service_check_round: db.raw('service_check_round + 1'),
      service_note: db.raw('coalesce(service_note, ?)', [note]),
      service_noted_at: now,
      updated_at: now,
    });
  return n > 0;
}

/**
 * Makes a check already owed of a row due now in a new round (an event naming the row came while it was owed, saying
 * what the row records): an answer to a query sent before may be older than the event, and does not close it. False
 * when no check of the row is owed.
 */
export async function renewServiceCheck(
  db: Database,
  row: { id: number; state: RowState; payoutId: string },
  now: number,
): Promise<boolean> {
  const n = await db('payouts')
    .where({ id: row.id, state: row.state, payout_id: row.payoutId })
    .whereNotNull('service_check')
    .update({ service_check_at: now, service_check_round: db.raw('service_check_round + 1'), updated_at: now });
  return n > 0;
}

/** A row holding a reference and a payout, as a webhook's follow-up finds it. */
export type RowHoldingPayout = FinalRowNamed;

/** Rows holding `merchantReferenceId` with a payout other than `payoutId` (a webhook named another payout under it). */
export async function rowsHoldingOtherPayout(db: Database, merchantReferenceId: string, payoutId: string): Promise<RowHoldingPayout[]> {
  return (await db('payouts')
    .where('merchant_reference_id', merchantReferenceId)
    .whereNotNull('payout_id')
    .whereNot('payout_id', payoutId)
    .orderBy('id')
    .select([...NAMED_ROW_COLUMNS])) as RowHoldingPayout[];
}

/** Rows whose check is due, oldest first. */
export async function dueServiceChecks(db: Database, now: number, limit: number): Promise<CheckTarget[]> {
  return (
    (await db('payouts')
      .whereNotNull('service_check')
      .andWhere('service_check_at', '<=', now)
      // Without a payout only a row that ended is asked (by reference): one a create may still be sent for is made
      // UNKNOWN instead (src/store/unfollowed-payouts.ts); an older build's such check waits for its payout.
      .andWhere((w) => void w.whereNotNull('payout_id').orWhereIn('state', FINAL_ROW_STATES))
      .orderBy([{ column: 'service_check_at' }, { column: 'id' }])
      .limit(limit)
      .select([
        ...NAMED_ROW_COLUMNS,
        'service_check as serviceCheck',
        'service_check_round as serviceCheckRound',
        'service_note_shown as serviceNoteShown',
      ])) as CheckTarget[]
  );
}

/** When the next owed check falls due (null: none is owed). */
export async function nextServiceCheckDue(db: Database): Promise<number | null> {
  const r = (await db('payouts').whereNotNull('service_check').min({ at: 'service_check_at' }).first()) as
    { at: number | null } | undefined;
  return r?.at ?? null;
}

/** Asks about these rows again at `at` (their check's query failed), unless a check was made owed again since. */
export async function rescheduleServiceChecks(
  db: Database,
  rows: readonly Pick<CheckTarget, 'id' | 'serviceCheckRound'>[],
  at: number,
): Promise<void> {
  for (const r of rows) {
    await db('payouts')
      .where({ id: r.id, service_check_round: r.serviceCheckRound })
      .whereNotNull('service_check')
      .update({ service_check_at: at });
  }
}

/** A row finance is told something of by the service's answer, or while a check is owed. */
export interface ServiceNoted {
  line: number;
  merchantReferenceId: string;
  state: RowState;
  payoutId: string | null;
  note: string;
}

/** The rows of a batch with a service note, in line order (at most `limit`). */
export async function serviceNotesOfBatch(db: Database, batchId: string, limit = 1000): Promise<ServiceNoted[]> {
  return (await db('payouts')
    .where({ batch_id: batchId })
    .whereNotNull('service_noted_at')
    .whereNotNull('service_note')
    .orderBy('line')
    .limit(limit)
    .select([
      'line',
      'merchant_reference_id as merchantReferenceId',
      'state',
      'payout_id as payoutId',
      'service_note as note',
    ])) as ServiceNoted[];
}

/** The batches holding rows with a service note, and how many, read from the index of the few rows that ever had one. */
async function notedBatches(db: Database): Promise<Map<string, number>> {
  // Rows, counted here: grouped in SQL, SQLite walks every row in batch order rather than the few noted ones.
  const rows = (await db('payouts').whereNotNull('service_noted_at').whereNotNull('service_note').select('batch_id as batchId')) as {
    batchId: string;
  }[];
  const out = new Map<string, number>();
  for (const r of rows) out.set(r.batchId, (out.get(r.batchId) ?? 0) + 1);
  return out;
}

/** For each of these batches that has any, how many of its rows carry a service note. */
export async function serviceNoteCounts(db: Database, batchIds: readonly string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (batchIds.length === 0) return out;
  const noted = await notedBatches(db);
  for (const id of batchIds) {
    const n = noted.get(id);
    if (n !== undefined) out.set(id, n);
  }
  return out;
}

/**
 * Batches with a row whose service note differs from what their last result file shows, or whose latest correction is
 * recorded and its file not yet written, whatever their state: read through the index of the few noted rows.
 */
async function batchesOwedCorrection(db: Database): Promise<string[]> {
  // Notes are never empty text: '' stands for none on both sides.
  const noted = (await db('payouts')
    .whereNotNull('service_noted_at')
    .whereRaw("coalesce(service_note, '') <> coalesce(service_note_shown, '')")
    // Not DISTINCT, for the reason notedBatches gives: this runs at every finish pass.
    .select('batch_id as batchId')) as { batchId: string }[];
  // The text of batches_correction_owed's predicate (migration 0034): a planner uses a partial index only when the query implies it.
  const owed = (await db('batches').whereRaw('result_corrections > result_corrections_written').select('id as batchId')) as {
    batchId: string;
  }[];
  return [...new Set([...noted, ...owed].map((r) => r.batchId))];
}

/**
 * COMPLETE batches whose last result file shows a row's service note otherwise than it now is, or whose latest
 * correction is recorded and its file not yet written: they get a corrected result file. A note set and cleared
 * before any result file showed it (the service agreed soon) is no change. Retention waits for them (listBatchesToPrune).
 */
export async function batchesToCorrect(db: Database): Promise<string[]> {
  const ids = await batchesOwedCorrection(db);
  if (ids.length === 0) return [];
  // Read by id and judged here: with the state in SQL, SQLite reads every COMPLETE batch through the index of the
  // state instead of these few by their key, and a note that never shows (its batch pruned) is found at every pass.
  const batches = (await db('batches').whereIn('id', ids).select('id', 'state', 'pruned_at', 'prune_started_at', 'result_written_at')) as {
    id: string;
    state: string;
    pruned_at: number | null;
    prune_started_at: number | null;
    result_written_at: number | null;
  }[];
  return batches
    .filter((b) => b.state === 'COMPLETE' && b.pruned_at === null && b.prune_started_at === null && b.result_written_at !== null)
    .map((b) => b.id)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Writes down correction `n` of a batch's result file before its file is written, in one transaction: each row whose
 * note differs from what the last file showed now shows its note, keeps the one it supersedes, and is marked as
 * changed by `n`. False (nothing recorded) when no note differs, or another writer recorded `n` first.
 */
export async function recordCorrection(db: Database, batchId: string, n: number, now: number): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    const counted = await trx('batches')
      .where({ id: batchId, result_corrections: n - 1, result_corrections_written: n - 1 })
      .update({ result_corrections: n, updated_at: now });
    if (counted === 0) return false;
    // The right-hand sides read the row as it was: the note shown so far becomes the superseded one.
    const changed = await trx('payouts')
      .where({ batch_id: batchId })
      .whereNotNull('service_noted_at')
      .whereRaw("coalesce(service_note, '') <> coalesce(service_note_shown, '')")
      .update({
        service_note_superseded: trx.raw('service_note_shown'),
        service_note_shown: trx.raw('service_note'),
        service_note_corrected: n,
      });
    if (changed === 0) throw new NothingToCorrect();
    return true;
  }).catch((err: unknown) => {
    if (err instanceof NothingToCorrect) return false;
    throw err;
  });
}

/** Rolls back a correction counted while no note differed any more. */
class NothingToCorrect extends Error {}

/**
 * Correction `n`'s files are in the outbox, and its `corrected` event (`data`) is stored with that record: counted
 * once, so a correction written again after a stop, or seen again by a later pass, is never announced twice.
 * False when it was counted already.
 */
export async function recordCorrectionWritten(
  db: Database,
  batchId: string,
  n: number,
  now: number,
  data: BatchEventData,
): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    const counted = await trx('batches')
      .where({ id: batchId, result_corrections: n })
      .where('result_corrections_written', '<', n)
      .update({ result_corrections_written: n, result_written_at: now, updated_at: now });
    if (counted === 0) return false;
    await recordBatchEvent(trx, { batchId, type: 'corrected', data, at: now });
    return true;
  });
}

/** Row ids per query of contradictionsOf: well under the bound variables either engine takes. */
const IDS_PER_QUERY = 500;

/**
 * The contradictions the service's answers recorded of these rows (their history's `service-contradicts`
 * entries: the note told and the answer's report, read from the note for an entry recorded without one), oldest
 * first per row.
 */
export async function contradictionsOf(db: Database, rowIds: readonly number[]): Promise<Map<number, Contradiction[]>> {
  const out = new Map<number, Contradiction[]>();
  for (let i = 0; i < rowIds.length; i += IDS_PER_QUERY) {
    const rows = (await db('payout_history')
      .whereIn('payout_row_id', rowIds.slice(i, i + IDS_PER_QUERY))
      .andWhere({ event: 'service-contradicts' })
      .whereNotNull('detail')
      .whereNotNull('outcome')
      .orderBy('id')
      .select('payout_row_id as rowId', 'detail as note', 'outcome as status', 'data')) as {
      rowId: number;
      note: string;
      status: string;
      data: string | null;
    }[];
    for (const r of rows) {
      const report = serviceReportOf(r.data) ?? reportOfNote(r.note, r.status);
      out.set(Number(r.rowId), [...(out.get(Number(r.rowId)) ?? []), { note: r.note, report }]);
    }
  }
  return out;
}

/** A row's note as a result file showed it. */
export interface NoteShown {
  id: number;
  note: string | null;
}

/** Records the notes a result file just written shows (a note changed since is corrected by the next one). */
export async function recordNotesShown(db: Database, shown: readonly NoteShown[]): Promise<void> {
  for (const r of shown) await db('payouts').where({ id: r.id }).update({ service_note_shown: r.note });
}

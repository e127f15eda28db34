/**
 * Archive and retention in the database. A finished batch's taken file is
 * archived (the record then names it in the archive); once a finished batch
 * is older than `retention.days`, its row details go: the stored request,
 * money cells, times, reasons, history and errors. Each row keeps its line,
 * reference, state and payout id, so an old reference is still refused as a
 * duplicate and a payout can still be named; a CANCELLED row keeps the leading
 * zeros of its identifiers (not the identifiers), so a retry of it is still
 * checked. Only finished batches whose every row is final are ever chosen.
 */
import { join, sep } from 'node:path';
import { FINAL_BATCH_STATES, FINAL_ROW_STATES, ROW_STATES } from '../domain/lifecycle.js';
import type { Knex } from 'knex';
import { keptZeroPadding } from '../domain/leading-zeros.js';
import { decodeRequestValues } from '../domain/request-values.js';
import { writeTransaction, type Database } from './db.js';
import { getBatch, type BatchRecord } from './batches.js';
import { batchesToCorrect } from './service-checks.js';
import { COLUMNS, inLineRanges, type PayoutRow } from './payouts.js';

async function batchesOf(db: Database, ids: readonly { id: string }[]): Promise<BatchRecord[]> {
  const out: BatchRecord[] = [];
  for (const { id } of ids) {
    const b = await getBatch(db, id);
    if (b) out.push(b);
  }
  return out;
}

/**
 * Finished batches whose taken file is not archived yet and no longer watched (received before
 * `receivedBefore`), oldest first, their file under `under` (this instance's state folder).
 */
export async function listBatchesToArchive(db: Database, under: string, receivedBefore: number, limit = 100): Promise<BatchRecord[]> {
  // With its separator: `/srv/state` must not take the files of `/srv/state-b`. substr counts characters, not UTF-16 units.
  const inside = join(under, sep);
  const ids = (await db('batches')
    .select('id')
    .whereIn('state', FINAL_BATCH_STATES)
    .whereNull('archived_at')
    .andWhere('received_at', '<', receivedBefore)
    .andWhereRaw('substr(stored_path, 1, ?) = ?', [[...inside].length, inside])
    .orderBy('received_at', 'asc')
    .limit(limit)) as { id: string }[];
  return batchesOf(db, ids);
}

/**
 * Records where the taken file (and its control file) now are, if the record still names it at `from`, not
 * archived: a pass that lost the race to archive it changes nothing (it would name a file no longer there, which
 * retention would then never delete). False when nothing changed.
 */
export async function markArchived(
  db: Database,
  batchId: string,
  paths: { from: string; storedPath: string; controlPath: string | null },
  now: number,
): Promise<boolean> {
  const n = await db('batches')
    .where({ id: batchId, stored_path: paths.from })
    .whereNull('archived_at')
    .update({ stored_path: paths.storedPath, control_path: paths.controlPath, archived_at: now, updated_at: now });
  return n > 0;
}

/**
 * Finished batches not yet pruned that finished before `before` (completed, or refused when received), with
 * no row in a state that can still move and no corrected result file owed: oldest first.
 */
export async function listBatchesToPrune(db: Database, before: number, limit = 1000): Promise<BatchRecord[]> {
  // Owed a corrected result file: waits for it. A batch whose pruning began is never corrected (batchesToCorrect
  // leaves it out), so its pruning goes on.
  const owed = new Set(await batchesToCorrect(db));
  const ids: { id: string }[] = [];
  for (let after: { at: number; id: string } | null = null; ids.length < limit;) {
    const q = db('batches')
      .select('id', 'received_at')
      .whereIn('state', FINAL_BATCH_STATES)
      .whereNull('pruned_at')
      .andWhereRaw('coalesce(completed_at, received_at) < ?', [before])
      // Its outbox files are written: pruned details could not be written again.
      .whereNotNull('ack_written_at')
      .andWhere((w) => w.whereNot('state', 'REJECTED').orWhere('row_count', 0).orWhereNotNull('result_written_at'));
    if (after) q.andWhereRaw('(received_at, id) > (?, ?)', [after.at, after.id]);
    const page = (await q.orderBy([{ column: 'received_at' }, { column: 'id' }]).limit(limit)) as { id: string; received_at: number }[];
    const open = await batchesWithOpenRows(
      db,
      page.map((b) => b.id),
    );
    for (const b of page) if (ids.length < limit && !open.has(b.id) && !owed.has(b.id)) ids.push({ id: b.id });
    const last = page.at(-1);
    if (page.length < limit || last === undefined) break;
    after = { at: Number(last.received_at), id: last.id };
  }
  return batchesOf(db, ids);
}

/** Rows of a batch (what pruning clears). */
export async function countBatchRows(db: Database, batchId: string): Promise<number> {
  const r = (await db('payouts').where({ batch_id: batchId }).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(r?.n ?? 0);
}

/** The row details retention clears; each row keeps its line, reference, state and payout id. */
export const PRUNED_DETAILS = [
  'requestValues',
  'payoutCurrency',
  'payoutAmount',
  'deductionCurrency',
  'rate',
  'deductionAmount',
  'serviceDeductionCurrency',
  'totalFee',
  'feeCurrency',
  'createTime',
  'completeTime',
  'reason',
] as const satisfies readonly (keyof PayoutRow)[];

/** The row states that can still move. */
const OPEN_ROW_STATES = ROW_STATES.filter((s) => !FINAL_ROW_STATES.includes(s));

/**
 * Which of these batches have a row that can still move, read by (batch, state) through the index of both: as a NOT
 * EXISTS beside the batches, PostgreSQL reads every payout row once instead.
 */
async function batchesWithOpenRows(db: Database, batchIds: readonly string[]): Promise<Set<string>> {
  if (batchIds.length === 0) return new Set();
  const rows = (await db('payouts').whereIn('batch_id', batchIds).whereIn('state', OPEN_ROW_STATES).pluck('batch_id')) as string[];
  return new Set(rows);
}

async function hasOpenRow(db: Database | Knex.Transaction, batchId: string): Promise<boolean> {
  const open = (await db('payouts').where({ batch_id: batchId }).whereNotIn('state', FINAL_ROW_STATES).first('id')) as unknown;
  return open !== undefined;
}

/**
 * Records that retention begins to remove a finished batch's files and row details, before the first of them
 * goes (the first time only): a prune cut short leaves pruned_at unset with some gone, and every reader must
 * still know. Refuses (changes nothing) if a row can still move.
 */
export async function beginPrune(db: Database, batchId: string, now: number): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    if (await hasOpenRow(trx, batchId)) return false;
    // Begun here, every row it clears keeps its leading zeros (keepZeroPadding); one begun by an older payoutd may not.
    await trx('batches')
      .where({ id: batchId })
      .whereNull('prune_started_at')
      .update({ prune_started_at: now, prune_keeps_zeros: true, updated_at: now });
    return true;
  });
}

/**
 * Keeps, of each CANCELLED row about to lose its request, the leading zeros of its identifiers (counts and a short
 * hash: no account number): its retry file may have been opened in a spreadsheet since, and a retry row that lost
 * them would pay another account (src/ingest/rules/damage.ts). Other rows are never retried.
 */
async function keepZeroPadding(trx: Knex.Transaction, rows: () => Knex.QueryBuilder): Promise<void> {
  // Only a request with a value starting with 0 can have any: most rows are not read at all.
  const candidates = (await rows()
    .where({ state: 'CANCELLED' })
    .whereNotNull('request_values')
    .andWhere('request_values', 'like', '%"0%')
    .select('id', 'merchant_reference_id', 'request_values')) as { id: number; merchant_reference_id: string; request_values: string }[];
  for (const r of candidates) {
    const kept = keptZeroPadding(r.merchant_reference_id, decodeRequestValues(r.request_values));
    if (kept !== null) await trx('payouts').where({ id: r.id }).update({ zero_padding: kept });
  }
}

/**
 * Clears the row details of a finished batch, keeping each row's line, reference, state and payout id; refuses
 * (changes nothing) if a row can still move. A range of rows at a time: a final row never moves again, and a
 * batch cut short is chosen again (it is marked pruned last, and begun first). `cleared` is told the rows of
 * each range once cleared for good.
 */
export async function pruneBatchDetails(db: Database, batchId: string, now: number, cleared?: (rows: number) => void): Promise<boolean> {
  if (!(await beginPrune(db, batchId, now))) return false;
  const details = Object.fromEntries(PRUNED_DETAILS.map((f) => [COLUMNS[f], null]));
  let inRange = 0;
  await inLineRanges(
    db,
    batchId,
    async (trx, rows) => {
      await keepZeroPadding(trx, rows);
      await trx('payout_history').whereIn('payout_row_id', rows().select('id')).delete();
      inRange = await rows().update({ ...details, updated_at: now });
    },
    undefined,
    () => cleared?.(inRange),
  );
  await writeTransaction(db, async (trx) => {
    await trx('batch_errors').where({ batch_id: batchId }).delete();
    await trx('batches').where({ id: batchId }).update({ pruned_at: now, upload_continued_note: null, updated_at: now });
  });
  return true;
}

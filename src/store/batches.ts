/** Batch records: one per file taken from the inbox, its state and counts, and the lease of the instance working on it. */
import type { Knex } from 'knex';
import { BATCH_STATES, BEING_READ_BATCH_STATES, canMoveBatch, FINAL_BATCH_STATES, type BatchState } from '../domain/lifecycle.js';
import { PayoutdError } from '../domain/errors.js';
import type { HoldCode } from '../domain/holds.js';
import { writeTransaction, type Database } from './db.js';
import { fromColumnValues, toColumnValues } from './columns.js';
import { inLineRanges } from './payouts.js';
import { finalCountsJson, stateCounts } from './counts.js';
import { recordBatchEvent } from './batch-events.js';
import type { BatchEventInput } from '../domain/batch-events.js';

export interface BatchRecord {
  id: string;
  fileName: string;
  storedPath: string;
  controlPath: string | null;
  sha256: string;
  size: number;
  mtimeMs: number;
  /** A `<name>.done` marker came with the file: the sender said the upload is complete. */
  doneMarker: boolean;
  state: BatchState;
  duplicateOf: string | null;
  rejectCode: string | null;
  rejectReason: string | null;
  holdCode: HoldCode | null;
  holdReason: string | null;
  holdUntil: number | null;
  rowCount: number;
  validCount: number;
  invalidCount: number;
  delimiter: string | null;
  /** The text encoding the file was read in when it was decided from its bytes (`encoding: auto`); else null. */
  encoding: string | null;
  /** JSON {currency: decimal text} of the payout amounts of all data rows, accepted or not (the file's). */
  totalsJson: string | null;
  /** JSON {currency: decimal text} of the payout amounts of the rows accepted (those to be sent); null before acceptance, or for a batch not accepted. */
  acceptedTotalsJson?: string | null;
  /** JSON {state: rows} once the batch ended with every row final (see counts.ts); null before, or if one was not. */
  finalCountsJson: string | null;
  receivedAt: number;
  acceptedAt: number | null;
  ackWrittenAt: number | null;
  resultWrittenAt: number | null;
  /** Corrected result files written since the first (`<name>.result.corrected-<n>.csv`, the latest n). */
  resultCorrections?: number;
  /** Corrections whose files are in the outbox; below resultCorrections: the latest is recorded, its file owed. */
  resultCorrectionsWritten?: number;
  completedAt: number | null;
  updatedAt: number;
  /** When the upload was first seen going on after the file was taken (the batch is held for it once). */
  fileChangedAt: number | null;
  /** The notice of an upload that went on (`<name>.upload-continued.csv`): when written, the file's size and mtime it describes, and its gist. */
  uploadContinuedAt: number | null;
  uploadContinuedSize: number | null;
  uploadContinuedMtimeMs: number | null;
  uploadContinuedNote: string | null;
  /** When the taken file moved to `<stateDir>/archive/` (its batch finished); storedPath then names it there. */
  archivedAt?: number | null;
  /** When retention (`retention.days`) removed its files and row details: references and payout ids stay. */
  prunedAt?: number | null;
  /** When retention began to remove them: set before the first goes, so a prune cut short is known (prunedAt still null). */
  pruneStartedAt?: number | null;
  /** The owner of the dropped file (its uid mapped to a user name at the claim), when known (src/approval). */
  uploadedBy?: string | null;
  uploadedByUid?: number | null;
  /** Approval (src/approval): null when not in use for the batch; else NONE, REQUIRED, APPROVED, REJECTED, EXPIRED or REFUSED. */
  approvalState?: string | null;
  /** Raised when a release found a limit the approvals given did not cover: approvals of earlier rounds no longer count. */
  approvalRound?: number;
  approvalsNeeded?: number;
  approvalReasonsJson?: string | null;
  approvalFiguresJson?: string | null;
  approvalExpiresAt?: number | null;
  /** When the batch was let go to be paid (the rolling limits count it from then). */
  releasedAt?: number | null;
  /** When an operator cancelled it, and why: no row of it is sent from then on. */
  cancelledAt?: number | null;
  cancelReason?: string | null;
  /** Readings of the batch that failed in a row the same unexpected way (src/daemon/file-reception.ts), and that way (`Name:CODE`). */
  readFailures?: number;
  readFailureKind?: string | null;
  /** The instance reading the batch or writing its results, while it does. */
  leaseOwner?: string | null;
  leaseExpiresAt?: number | null;
}

const COLUMNS: Record<keyof BatchRecord, string> = {
  id: 'id',
  fileName: 'file_name',
  storedPath: 'stored_path',
  controlPath: 'control_path',
  sha256: 'sha256',
  size: 'size',
  mtimeMs: 'mtime_ms',
  doneMarker: 'done_marker',
  state: 'state',
  duplicateOf: 'duplicate_of',
  rejectCode: 'reject_code',
  rejectReason: 'reject_reason',
  holdCode: 'hold_code',
  holdReason: 'hold_reason',
  holdUntil: 'hold_until',
  rowCount: 'row_count',
  validCount: 'valid_count',
  invalidCount: 'invalid_count',
  delimiter: 'delimiter',
  encoding: 'encoding',
  totalsJson: 'totals_json',
  acceptedTotalsJson: 'accepted_totals_json',
  finalCountsJson: 'final_counts_json',
  receivedAt: 'received_at',
  acceptedAt: 'accepted_at',
  ackWrittenAt: 'ack_written_at',
  resultWrittenAt: 'result_written_at',
  resultCorrections: 'result_corrections',
  resultCorrectionsWritten: 'result_corrections_written',
  completedAt: 'completed_at',
  updatedAt: 'updated_at',
  fileChangedAt: 'file_changed_at',
  uploadContinuedAt: 'upload_continued_at',
  uploadContinuedSize: 'upload_continued_size',
  uploadContinuedMtimeMs: 'upload_continued_mtime_ms',
  uploadContinuedNote: 'upload_continued_note',
  archivedAt: 'archived_at',
  prunedAt: 'pruned_at',
  pruneStartedAt: 'prune_started_at',
  uploadedBy: 'uploaded_by',
  uploadedByUid: 'uploaded_by_uid',
  approvalState: 'approval_state',
  approvalRound: 'approval_round',
  approvalsNeeded: 'approvals_needed',
  approvalReasonsJson: 'approval_reasons_json',
  approvalFiguresJson: 'approval_figures_json',
  approvalExpiresAt: 'approval_expires_at',
  releasedAt: 'released_at',
  cancelledAt: 'cancelled_at',
  cancelReason: 'cancel_reason',
  readFailures: 'read_failures',
  readFailureKind: 'read_failure_kind',
  leaseOwner: 'lease_owner',
  leaseExpiresAt: 'lease_expires_at',
};

function toRow(patch: Partial<BatchRecord>): Record<string, unknown> {
  return toColumnValues(COLUMNS, patch);
}

function fromRow(r: Record<string, unknown>): BatchRecord {
  const batch = fromColumnValues<BatchRecord>(COLUMNS, r);
  // SQLite keeps a boolean as 0 or 1.
  batch.doneMarker = Boolean(batch.doneMarker);
  return batch;
}

export class BatchStateError extends PayoutdError {
  override readonly name = 'BatchStateError';
}

/** The reader of a batch: the instance reading it, and how long its lease lasts without renewal. */
export interface ReaderLease {
  batchId: string;
  instanceId: string;
  leaseMs: number;
}

/** Checks, inside a transaction of a reader, that the batch is still this reader's (holdReaderLease). */
export type ReaderFence = (trx: Knex.Transaction) => Promise<void>;

/** The states of a batch being read: only its reader writes to it then. */
const BEING_READ = [...BEING_READ_BATCH_STATES];

function readerLost(batchId: string, instanceId: string): BatchStateError {
  return new BatchStateError(
    'BATCH_LEASE_LOST',
    `batch ${batchId} is no longer being read by ${instanceId}: its lease ran out and another instance took it over (or its reading ended); this reading stops and writes nothing more`,
  );
}

/**
 * Renews the reader's lease, and fails (so the caller's transaction rolls back) when the batch is no longer
 * this reader's: another instance took it over after the lease ran out, cleared what this reader wrote and
 * reads it again. Only the owner renews: a lease that ran out is not taken back here, since a reader that
 * stalled cannot tell whether another reading came and went meanwhile. In a transaction, the row lock it
 * takes makes a takeover wait until the transaction ends.
 */
export async function holdReaderLease(db: Database, lease: ReaderLease, now: number): Promise<void> {
  const n = await db('batches')
    .where({ id: lease.batchId, lease_owner: lease.instanceId })
    .whereIn('state', BEING_READ)
    .update({ lease_expires_at: now + lease.leaseMs });
  if (n !== 1) throw readerLost(lease.batchId, lease.instanceId);
}

/**
 * Makes `instanceId` the reader of a batch still being read, whoever held it. Only for an instance alone on its
 * database: the holder can only be an earlier process of its own, whose instance id may have been another.
 */
export async function takeReaderLease(db: Database, lease: ReaderLease, now: number): Promise<boolean> {
  const n = await db('batches')
    .where({ id: lease.batchId })
    .whereIn('state', BEING_READ)
    .update({ lease_owner: lease.instanceId, lease_expires_at: now + lease.leaseMs });
  return n === 1;
}

/** The facts of a file when it becomes a batch. */
export type ReceivedFile = Pick<
  BatchRecord,
  'id' | 'fileName' | 'storedPath' | 'controlPath' | 'sha256' | 'size' | 'mtimeMs' | 'doneMarker' | 'uploadedBy' | 'uploadedByUid'
>;

/** A new batch record in state RECEIVED: nothing read, decided or written yet. */
export function receivedBatch(file: ReceivedFile, now: number): BatchRecord {
  return {
    ...file,
    // Whole milliseconds: PostgreSQL refuses a fraction in a bigint (the file system gives nanoseconds).
    mtimeMs: Math.trunc(file.mtimeMs),
    state: 'RECEIVED',
    duplicateOf: null,
    rejectCode: null,
    rejectReason: null,
    holdCode: null,
    holdReason: null,
    holdUntil: null,
    rowCount: 0,
    validCount: 0,
    invalidCount: 0,
    delimiter: null,
    encoding: null,
    totalsJson: null,
    finalCountsJson: null,
    receivedAt: now,
    acceptedAt: null,
    ackWrittenAt: null,
    resultWrittenAt: null,
    completedAt: null,
    updatedAt: now,
    fileChangedAt: null,
    uploadContinuedAt: null,
    uploadContinuedSize: null,
    uploadContinuedMtimeMs: null,
    uploadContinuedNote: null,
  };
}

/** Stores a new batch, with its `received` event. */
export async function insertBatch(db: Database, batch: BatchRecord): Promise<void> {
  await writeTransaction(db, async (trx) => {
    await trx('batches').insert(toRow(batch));
    await recordBatchEvent(trx, {
      batchId: batch.id,
      type: 'received',
      data: { size: batch.size, sha256: batch.sha256 },
      at: batch.receivedAt,
    });
  });
}

export async function getBatch(db: Database, id: string): Promise<BatchRecord | undefined> {
  const r = (await db('batches').where({ id }).first()) as Record<string, unknown> | undefined;
  return r ? fromRow(r) : undefined;
}

/**
 * The first batch received before `batch` (by time, then id) with the same bytes that was accepted or is still
 * being read; a rejected one paid nothing, so its bytes may come again. An accepted one counts even if it ended
 * paying nothing (cancelled before any row left): its duplicate's ack says what it did, and its rows go again in a
 * new file. Only earlier ones count: two copies taken at once (by two instances) are each still RECEIVED when they
 * look, and the later one alone is the duplicate.
 */
export async function findFirstBySha(
  db: Database,
  batch: Pick<BatchRecord, 'id' | 'sha256' | 'receivedAt'>,
): Promise<BatchRecord | undefined> {
  const r = (await db('batches')
    .where({ sha256: batch.sha256 })
    .andWhere((q) =>
      q
        .where('received_at', '<', batch.receivedAt)
        .orWhere((same) => same.where('received_at', batch.receivedAt).andWhere('id', '<', batch.id)),
    )
    .whereIn('state', ['RECEIVED', 'VALIDATING', 'ACTIVE', 'COMPLETE'])
    .orderBy([{ column: 'received_at' }, { column: 'id' }])
    .first()) as Record<string, unknown> | undefined;
  return r ? fromRow(r) : undefined;
}

/** The batch whose file was claimed to `storedPath`, if any (a claimed file without one was stopped mid-claim). */
export async function findBatchByStoredPath(db: Database, storedPath: string): Promise<BatchRecord | undefined> {
  const r = (await db('batches').where({ stored_path: storedPath }).first()) as Record<string, unknown> | undefined;
  return r ? fromRow(r) : undefined;
}

/** Which of `storedPaths` a batch records, in one statement per chunk (the search for orphan claims runs often). */
export async function recordedStoredPaths(db: Database, storedPaths: readonly string[]): Promise<Set<string>> {
  const recorded = new Set<string>();
  for (let i = 0; i < storedPaths.length; i += 500) {
    const found = (await db('batches')
      .whereIn('stored_path', storedPaths.slice(i, i + 500))
      .pluck('stored_path')) as string[];
    for (const path of found) recorded.add(path);
  }
  return recorded;
}

/**
 * Batches lacking a file: an ack or refusal, or a partly read rejected batch's result file. With `settled`, only
 * those last changed at least `minAgeMs` from `now`, before it or after it: a clock that was ahead (and went
 * back) left `updated_at` in the future, and such a batch must not wait for the clock to catch up.
 */
export async function listBatchesMissingFiles(db: Database, settled?: { now: number; minAgeMs: number }): Promise<string[]> {
  const batches = db('batches');
  if (settled) {
    const { now, minAgeMs } = settled;
    batches.where((w) => w.where('updated_at', '<=', now - minAgeMs).orWhere('updated_at', '>=', now + minAgeMs));
  }
  return (await batches
    .andWhere((q) =>
      q
        .where((w) => w.whereNull('ack_written_at').whereIn('state', ['ACTIVE', 'REJECTED', 'DUPLICATE', 'COMPLETE']))
        // Each branch implies a partial index of migration 0034 (batches_ack_owed, batches_result_owed) by its text.
        .orWhere((w) => w.where('state', 'REJECTED').whereNull('result_written_at').whereRaw('row_count > 0')),
    )
    .pluck('id')) as string[];
}

/**
 * Applies a patch; a state change must be a legal move from the stored state. A batch moving to a final
 * state keeps its rows' counts if every row is final by then (counts.ts). With `event`,
 * the event the change makes is stored in the same transaction. With `reader`, the change is that reader's
 * and is made only while the batch is still being read by it (BATCH_LEASE_LOST else, nothing written).
 */
export async function updateBatch(
  db: Database,
  id: string,
  patch: Partial<BatchRecord>,
  now: number,
  event?: Omit<BatchEventInput, 'batchId'>,
  reader?: string,
): Promise<void> {
  if (event) {
    await writeTransaction(db, async (trx) => {
      await updateBatch(trx, id, patch, now, undefined, reader);
      await recordBatchEvent(trx, { at: now, ...event, batchId: id });
    });
    return;
  }
  let finalCounts: Partial<BatchRecord> = {};
  if (patch.state) {
    const current = await getBatch(db, id);
    if (!current) throw new BatchStateError('BATCH_NOT_FOUND', `batch ${id} does not exist`);
    if (current.state !== patch.state && !canMoveBatch(current.state, patch.state)) {
      throw new BatchStateError('BATCH_STATE', `batch ${id} cannot move from ${current.state} to ${patch.state}`);
    }
    if (FINAL_BATCH_STATES.includes(patch.state)) finalCounts = { finalCountsJson: finalCountsJson(await stateCounts(db, id)) };
  }
  const q = db('batches').where({ id });
  // A reader that lost its batch (another instance read it again) must not move it out of being read.
  if (reader !== undefined) q.where('lease_owner', reader).whereIn('state', BEING_READ);
  const n = await q.update(toRow({ ...patch, ...finalCounts, updatedAt: now }));
  if (reader !== undefined && n !== 1) throw readerLost(id, reader);
}

/**
 * Counts a failed reading of a batch still being read, that failed the way `kind` says: one more when the last
 * failure was the same, else the first. The readings that failed so far that way (0: no longer being read).
 */
export async function countReadFailure(db: Database, id: string, kind: string, now: number): Promise<number> {
  return writeTransaction(db, async (trx) => {
    const row = (await trx('batches').where({ id }).whereIn('state', BEING_READ).first('read_failures', 'read_failure_kind')) as
      { read_failures: number; read_failure_kind: string | null } | undefined;
    if (!row) return 0;
    const failures = row.read_failure_kind === kind ? Number(row.read_failures) + 1 : 1;
    await trx('batches').where({ id }).update({ read_failures: failures, read_failure_kind: kind, updated_at: now });
    return failures;
  });
}

/** Starts the count of failed readings of a batch still being read over: a reading failed another way between. */
export async function forgetReadFailures(db: Database, id: string, now: number): Promise<void> {
  await db('batches').where({ id }).whereIn('state', BEING_READ).where('read_failures', '>', 0).update({
    read_failures: 0,
    read_failure_kind: null,
    updated_at: now,
  });
}

export async function listBatchesInStates(db: Database, states: BatchState[]): Promise<BatchRecord[]> {
  const rows = (await db('batches').whereIn('state', states).orderBy('received_at', 'asc')) as Record<string, unknown>[];
  return rows.map(fromRow);
}

/** The batches whose taken file is watched (src/holds): every ACTIVE one, and those finished since `since`. */
export async function listWatchedBatches(db: Database, since: number): Promise<BatchRecord[]> {
  const rows = (await db('batches')
    .where('state', 'ACTIVE')
    .orWhere((w) => w.whereIn('state', ['COMPLETE', 'REJECTED', 'DUPLICATE']).andWhere('received_at', '>=', since))
    .orderBy('received_at', 'asc')) as Record<string, unknown>[];
  return rows.map(fromRow);
}

export async function listRecentBatches(db: Database, limit: number): Promise<BatchRecord[]> {
  const rows = (await db('batches').orderBy('received_at', 'desc').limit(limit)) as Record<string, unknown>[];
  return rows.map(fromRow);
}

/** What `payoutd status` lists: the batches, newest first, and how many older finished ones it leaves out. */
export interface StatusBatches {
  batches: BatchRecord[];
  olderFinished: number;
}

/** Newest received first, ties by id (the order status lists batches in). */
function newestFirstOrder(a: BatchRecord, b: BatchRecord): number {
  if (a.receivedAt !== b.receivedAt) return b.receivedAt - a.receivedAt;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * Every unfinished batch, however old (an UNKNOWN row or a hold must not drop out of sight), and the most
 * recent finished ones up to `limit` batches in all.
 */
export async function listStatusBatches(db: Database, limit: number): Promise<StatusBatches> {
  const newestFirst = (q: Knex.QueryBuilder): Knex.QueryBuilder => q.orderBy('received_at', 'desc').orderBy('id', 'desc');
  // One state at a time, each through the index of (state, received_at) from its newest: over several states at once
  // the planner reads every finished batch ever taken and sorts them all for the few shown.
  const inState = async (state: BatchState, n?: number): Promise<BatchRecord[]> => {
    const q = newestFirst(db('batches').where('state', state));
    return ((await (n === undefined ? q : q.limit(n))) as Record<string, unknown>[]).map(fromRow);
  };
  const unfinished: BatchRecord[] = [];
  for (const state of BATCH_STATES.filter((s) => !FINAL_BATCH_STATES.includes(s))) unfinished.push(...(await inState(state)));
  const room = Math.max(0, limit - unfinished.length);
  const finished: BatchRecord[] = [];
  if (room > 0) for (const state of FINAL_BATCH_STATES) finished.push(...(await inState(state, room)));
  finished.sort(newestFirstOrder);
  finished.length = Math.min(finished.length, room);
  const [all] = (await db('batches').whereIn('state', FINAL_BATCH_STATES).count({ n: '*' })) as { n: number | string }[];
  // A batch that ended between the reads is in both: shown once, as it ended.
  const byId = new Map<string, BatchRecord>();
  for (const b of [...unfinished, ...finished]) byId.set(b.id, b);
  const batches = [...byId.values()].sort((a, b) => b.receivedAt - a.receivedAt);
  return { batches, olderFinished: Number(all?.n ?? 0) - finished.length };
}

/**
 * Forgets what a reading of the batch wrote, so it can be read again from the start (or refused with no rows
 * kept). With `fence`, only while the batch is still the caller's to read: a reader that lost it must not
 * clear the rows of the reading that took over.
 */
export async function clearBatchContents(db: Database, batchId: string, fence?: ReaderFence): Promise<void> {
  // A range at a time: a crash part way leaves the batch being read, and its next reading clears the rest first.
  await inLineRanges(db, batchId, async (trx, rows) => {
    await fence?.(trx);
    await trx('payout_history').whereIn('payout_row_id', rows().select('id')).delete();
    await rows().delete();
  });
  await writeTransaction(db, async (trx) => {
    await fence?.(trx);
    await trx('batch_errors').where({ batch_id: batchId }).delete();
  });
}

/** Takes or renews a batch's lease for one instance; false: another live instance holds it. */
export async function claimBatchLease(
  db: Database,
  id: string,
  instanceId: string,
  leaseMs: number,
  now: number,
  /** Only while the batch is in one of these states (checked in the same UPDATE). */
  states?: BatchState[],
): Promise<boolean> {
  const q = db('batches').where({ id });
  if (states) q.whereIn('state', states);
  const n = await q
    .andWhere((w) => w.whereNull('lease_owner').orWhere('lease_expires_at', '<', now).orWhere('lease_owner', instanceId))
    .update({ lease_owner: instanceId, lease_expires_at: now + leaseMs });
  return n === 1;
}

/** Renews this instance's lease on a batch while it is still this instance's: a lease taken over is not taken back. */
export async function holdBatchLease(db: Database, id: string, instanceId: string, leaseMs: number, now: number): Promise<boolean> {
  const n = await db('batches')
    .where({ id, lease_owner: instanceId })
    .update({ lease_expires_at: now + leaseMs });
  return n === 1;
}

/** Ends this instance's lease on a batch; one another instance took over stays theirs. */
export async function releaseBatchLease(db: Database, id: string, instanceId: string, now: number): Promise<void> {
  await db('batches').where({ id, lease_owner: instanceId }).update({ lease_owner: null, lease_expires_at: null, updated_at: now });
}

/**
 * Marks an ACTIVE batch COMPLETE with its `completed` event, in one transaction, and only while it is still
 * ACTIVE and (with `owner`) still that instance's: of two instances that both wrote its result files, one
 * completes it and announces it. False when it was not this caller's to complete.
 */
export async function completeBatch(
  db: Database,
  id: string,
  patch: Pick<BatchRecord, 'resultWrittenAt' | 'completedAt'>,
  now: number,
  event: Omit<BatchEventInput, 'batchId'>,
  owner?: string,
): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    const q = trx('batches').where({ id, state: 'ACTIVE' });
    if (owner !== undefined) q.where('lease_owner', owner);
    const counts = finalCountsJson(await stateCounts(trx, id));
    const row = toRow({ ...patch, state: 'COMPLETE', finalCountsJson: counts, leaseOwner: null, leaseExpiresAt: null, updatedAt: now });
    if ((await q.update(row)) !== 1) return false;
    await recordBatchEvent(trx, { at: now, ...event, batchId: id });
    return true;
  });
}

/** Which batches a page of the console's list shows: states, and a window on the time received (ms, `until` exclusive). */
export interface BatchFilter {
  states?: readonly BatchState[];
  receivedFrom?: number;
  receivedUntil?: number;
}

/** One page of batches, newest first, and how many match in all (the console pages a long history). */
export async function listBatchPage(
  db: Database,
  filter: BatchFilter,
  offset: number,
  limit: number,
): Promise<{ batches: BatchRecord[]; total: number }> {
  const where = (q: ReturnType<Database>): ReturnType<Database> => {
    if (filter.states && filter.states.length > 0) q.whereIn('state', filter.states);
    if (filter.receivedFrom !== undefined) q.andWhere('received_at', '>=', filter.receivedFrom);
    if (filter.receivedUntil !== undefined) q.andWhere('received_at', '<', filter.receivedUntil);
    return q;
  };
  const rows = (await where(db('batches'))
    .orderBy([
      { column: 'received_at', order: 'desc' },
      { column: 'id', order: 'desc' },
    ])
    .offset(offset)
    .limit(limit)) as Record<string, unknown>[];
  const counted = (await where(db('batches')).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return { batches: rows.map(fromRow), total: Number(counted?.n ?? 0) };
}

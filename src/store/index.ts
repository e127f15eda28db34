/**
 * The store: payoutd's state in SQL, on SQLite (embedded, the default) or
 * PostgreSQL (several instances). It owns the schema and every statement;
 * nothing outside this folder writes SQL. Every state move of a row is
 * guarded by the state it leaves and written with its history entry in the
 * same transaction, and a reference is held by one row at most (the partial
 * unique index behind "paid at most once", see migrations.ts).
 *
 * What lives where, one concern a file:
 * - db.ts, open.ts, migrations.ts, instance-lock.ts: opening the database, its schema, one daemon per state directory;
 *   sqlite-driver.ts: which better-sqlite3 opens SQLite files on the running Node;
 * - batches.ts, batch-errors.ts, file-claims.ts, holds.ts: batch records and leases, a file's errors, who took
 *   a file from a shared inbox, holds and an operator's cancel;
 * - payouts.ts (the row record), insert-rows.ts (the intake's inserts), acceptance.ts (accepting a batch once read);
 * - moves.ts (guarded moves and their history), claims.ts (taking rows for work: the intent before a create),
 *   answers.ts, group-commit.ts and reproducible.ts (recording the service's answers);
 * - settlement.ts (what the poller asks about), webhook-events.ts (webhook deliveries seen), counts.ts (rows per state),
 *   service-health.ts (whether each instance can reach the payout service);
 * - acks.ts, results.ts, reports.ts, request-fields.ts: the reads behind the ack, the result files and the
 *   finance reports; columns.ts and multi-row-insert.ts: records to columns, and inserts of many rows.
 */
export { assertSchemaCurrent, closeDatabase, isPostgres, migrateToLatest, pingDatabase, type Database } from './db.js';
export { openStore, type StoreSettings } from './open.js';
export { acquireInstanceLock, tryExclusiveLock, type InstanceLock } from './instance-lock.js';
// A SQLite file opened raw, by the better-sqlite3 for the running Node (the bench's bulk loads and reads).
export { openSqlite } from './sqlite-driver.js';

export {
  receivedBatch,
  insertBatch,
  getBatch,
  updateBatch,
  findFirstBySha,
  findBatchByStoredPath,
  listBatchesInStates,
  listRecentBatches,
  listWatchedBatches,
  listBatchesMissingFiles,
  clearBatchContents,
  claimBatchLease,
  type BatchRecord,
} from './batches.js';
export { insertBatchErrors, listBatchErrors, type BatchErrorRecord } from './batch-errors.js';
export { claimFileInDatabase, releaseFileClaim, releaseAllFileClaims, releaseStaleFileClaims } from './file-claims.js';
export { holdBatch, releaseBatchHold, cancelReadyRows, listBalanceHoldsDue } from './holds.js';

export { readyRequestPages, type PayoutRowPatch } from './payouts.js';
export { insertRows, insertRowsWhileReading, type NewPayoutRow, type ReaderLease } from './insert-rows.js';
export { acceptBatchRows, type InvalidRowsPolicy } from './acceptance.js';
export { lastIntentAt, type RowMove } from './moves.js';
export { claimDueRows, claimReadyRows, markInterruptedCreatesUnknown, type Claimant, type ClaimedRow } from './claims.js';
export { applyRowMoves, recordAnswers } from './answers.js';
export { GroupCommit } from './group-commit.js';

export {
  flagStale,
  listDueForPoll,
  listFinishedActiveBatches,
  listStalePending,
  nextPollDue,
  oldestPendingCreatedAt,
  pollBatchNow,
  pollSoon,
  reschedulePolls,
  type PayoutNamed,
  type PollCursor,
  type PollTarget,
} from './settlement.js';
export { batchStateCounts, countRowsInState, stateCounts, stateCountsOfAllBatches, type StateCounts } from './counts.js';
export { recordWebhookEvent, forgetWebhookEventsBefore, type WebhookEventRecord } from './webhook-events.js';
export { recordServiceHealth, latestServiceHealth, forgetServiceHealth, type ServiceHealthRecord } from './service-health.js';

export { ackRowPages, type AckSourceRow } from './acks.js';
export { resultRowPages, type BatchResultRow } from './results.js';
export { batchRetrySource, countCancelledRows, payoutsCreatedBetween, requestValuesOfReferences } from './reports.js';

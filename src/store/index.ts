/**
 * The store: payoutd's state in SQL, on SQLite (embedded, the default) or
 * PostgreSQL (several instances). It owns the schema and every statement;
 * nothing outside this folder writes SQL. Every state move of a row is
 * guarded by the state it leaves and written with its history entry in the
 * same transaction, and a reference is held by one row at most (the partial
 * unique index behind "paid at most once", see migrations.ts).
 *
 * What lives where: db.ts and open.ts open a database; batches.ts holds batch
 * records and file claims; payouts.ts the payout rows (intake inserts, guarded
 * moves); counts.ts their counts per state (kept by a batch that ended);
 * acceptance.ts accepts a batch once read; submission.ts and group-commit.ts
 * the intent before a create and the answer after; settlement.ts what the
 * poller asks about; webhook-events.ts the webhook deliveries seen; acks.ts,
 * results.ts and reports.ts the reads behind the ack, the result files and
 * the finance reports.
 */
export { assertSchemaCurrent, isPostgres, migrateToLatest, pingDatabase, type Database } from './db.js';
export { openStore, type StoreSettings } from './open.js';
export { acquireInstanceLock, type InstanceLock } from './instance-lock.js';

export {
  // Batch records: one per file claimed from the inbox.
  receivedBatch,
  insertBatch,
  getBatch,
  updateBatch,
  findFirstBySha,
  findBatchByStoredPath,
  listBatchesInStates,
  listRecentBatches,
  listBalanceHoldsDue,
  listBatchesMissingFiles,
  clearBatchContents,
  type BatchRecord,
  // A file's validation errors.
  insertBatchErrors,
  listBatchErrors,
  type BatchErrorRecord,
  // Which instance reads or finishes a batch, and which took a file from a shared inbox.
  claimBatchLease,
  claimFileInDatabase,
  releaseFileClaim,
  releaseAllFileClaims,
  releaseStaleFileClaims,
} from './batches.js';

export {
  insertRows,
  insertRowsWhileReading,
  readyRequestPages,
  type NewPayoutRow,
  type PayoutRowPatch,
  type ReaderLease,
} from './payouts.js';
export { batchStateCounts, stateCounts, stateCountsOfAllBatches, type StateCounts } from './counts.js';
export { acceptBatchRows, type InvalidRowsPolicy } from './acceptance.js';

export {
  applyRowMoves,
  cancelReadyRows,
  claimDueRows,
  claimReadyRows,
  countRowsInState,
  holdBatch,
  lastIntentAt,
  markInterruptedCreatesUnknown,
  recordAnswers,
  releaseBatchHold,
  type Claimant,
  type ClaimedRow,
  type RowMove,
} from './submission.js';
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

export { recordWebhookEvent, forgetWebhookEventsBefore, type WebhookEventRecord } from './webhook-events.js';
export { recordServiceHealth, latestServiceHealth, forgetServiceHealth, type ServiceHealthRecord } from './service-health.js';

export { ackRowPages, type AckSourceRow } from './acks.js';
export { resultRowPages, type BatchResultRow } from './results.js';
export { batchRetrySource, countCancelledRows, payoutsCreatedBetween } from './reports.js';

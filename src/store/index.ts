/**
 * The store: payoutd's state in SQL, on SQLite (embedded, the default) or PostgreSQL (several instances).
 * It owns the schema and every statement; nothing outside this folder writes SQL. Every state move of a
 * row is guarded by the state it leaves and written with its history entry in the same transaction, and a
 * reference is held by one row at most (the partial unique index behind "paid at most once").
 */
export {
  assertSchemaCurrent,
  closeDatabase,
  isPostgres,
  migrateToLatest,
  pingDatabase,
  schemaFound,
  DatabaseBusyError,
  type Database,
} from './db.js';
export { openStore } from './open.js';
export { acquireInstanceLocks, InstanceLockError, tryExclusiveLock, type InstanceLock } from './instance-lock.js';
export { openSqlite } from './sqlite-driver.js';

export {
  receivedBatch,
  insertBatch,
  getBatch,
  updateBatch,
  findFirstBySha,
  findBatchByStoredPath,
  recordedStoredPaths,
  listBatchesInStates,
  listRecentBatches,
  listStatusBatches,
  listWatchedBatches,
  listBatchesMissingFiles,
  clearBatchContents,
  claimBatchLease,
  completeBatch,
  holdBatchLease,
  releaseBatchLease,
  listBatchPage,
  countReadFailure,
  forgetReadFailures,
  BatchStateError,
  holdReaderLease,
  takeReaderLease,
  type BatchRecord,
  type ReaderFence,
  type ReaderLease,
} from './batches.js';
export { insertBatchErrors, listBatchErrors, type BatchErrorRecord } from './batch-errors.js';
export { claimFileInDatabase, releaseFileClaim, releaseAllFileClaims, releaseStaleFileClaims } from './file-claims.js';
export { holdBatch, releaseBatchHold, listBalanceHoldsDue } from './holds.js';
export { anyRowSent, cancelReadyRows, cancelReturnedRows, type CancelOutcome } from './cancels.js';

export { type PayoutRowPatch } from './payouts.js';
export { createdWhenWritten, fixPeriodEnd } from './created-at.js';
export { readyMoneyOf, recentFees, type ChargedFee } from './request-fields.js';
export { insertRowsWhileReading } from './insert-rows.js';
export { acceptBatchRows, activateReadBatch, inFileDuplicateMessage, type InvalidRowsPolicy, type ReferenceColumn } from './acceptance.js';
export { inFileZerosMessage } from './reference-zeros.js';
export type { RetryFiles } from './reference-advice.js';
export { lastIntentAt, type RowMove } from './moves.js';
export { noteLateCreate, triedRowsNamed, type LateCreate, type TriedRowsNamed } from './unfollowed-payouts.js';
export {
  claimDueRows,
  claimReadyRows,
  claimOf,
  markInterruptedCreatesUnknown,
  fenceCreate,
  renewClaims,
  type Claimant,
  type ClaimedRow,
} from './claims.js';
export { applyClaimedMoves, applyRowMoves, recordAnswers } from './answers.js';
export { GroupCommit } from './group-commit.js';

export {
  finalRowsNamed,
  flagStale,
  listDueForPoll,
  listFinishedActiveBatches,
  listStalePending,
  nextPollDue,
  oldestPendingCreatedAt,
  pollBatchNow,
  pollSoon,
  reaskUnknownOfReference,
  reschedulePolls,
  type FinalRowNamed,
  type PayoutNamed,
  type PollCursor,
  type PollTarget,
} from './settlement.js';
export {
  amountsByState,
  batchStateCounts,
  countRowsInState,
  reasonsInState,
  contradictedCounts,
  stateCounts,
  stateCountsOfAllBatches,
  type StateCounts,
  type StateReason,
} from './counts.js';
export {
  recordBatchEvent,
  recordBatchEventIfLatest,
  listBatchEvents,
  latestEventTimes,
  latestBatchEvent,
  makeDeliveryRecords,
  owePendingEvents,
  channelsOwing,
  dropChannelRecords,
  claimChannelEvents,
  holdChannelClaims,
  eventsOwedBefore,
  settleChannelDelivery,
  releaseChannelClaim,
  countEventsByDelivery,
  countBatchesByState,
  oldestHoldSince,
  type ChannelOutcome,
  type ChannelScope,
  type ClaimedEvent,
} from './batch-events.js';
export { recordWebhookEvent, forgetWebhookEventsBefore } from './webhook-events.js';
export {
  batchesToCorrect,
  contradictionsOf,
  recordCorrection,
  recordCorrectionWritten,
  recordNotesShown,
  type NoteShown,
  dueServiceChecks,
  markServiceCheck,
  renewServiceCheck,
  nextServiceCheckDue,
  rescheduleServiceChecks,
  rowsHoldingOtherPayout,
  serviceNoteCounts,
  serviceNotesOfBatch,
  type CheckTarget,
  type RowHoldingPayout,
  type ServiceNoted,
} from './service-checks.js';
export { recordServiceHealth, latestServiceHealth, forgetServiceHealth } from './service-health.js';
export {
  recordedServiceIdentity,
  recordServiceIdentity,
  replaceServiceIdentity,
  serviceHistory,
  payoutsOnService,
  payoutsToVerify,
  type RecordedServiceIdentity,
  type ServiceIdentity,
} from './service-identity.js';

export { ackMoneyPages, type AckSourceRow, type AckMoneySourceRow } from './acks.js';
export { resultRowPages, resultRowsPage, type BatchResultRow } from './results.js';
export { beginPrune, countBatchRows, listBatchesToArchive, listBatchesToPrune, markArchived, pruneBatchDetails } from './retention.js';
export { batchRetrySource, countCancelledRows, payoutsCreatedBetween, retryOriginalsOf, type ReportedPayoutRow } from './reports.js';
export {
  withBatchForDecision,
  insertApprovalEntry,
  listApprovalEntries,
  rollingTotals,
  cancelledCounts,
  endUnpaid,
  markApproved,
  listExpiredApprovals,
  type ApprovalEntry,
  type DecisionTransaction,
} from './approvals.js';
export {
  getConsoleUser,
  listConsoleUsers,
  insertConsoleUser,
  updateConsoleUser,
  deleteConsoleUser,
  beginSignIn,
  endSignIn,
  uncountSignIn,
  signInLocks,
  clearSignInFailures,
  insertConsoleSession,
  getConsoleSession,
  deleteConsoleSession,
  deleteConsoleSessions,
  recordConsoleUpload,
  forgetConsoleUpload,
  consoleUploaderOf,
  type SignInLockout,
} from './console-access.js';

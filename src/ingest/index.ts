/**
 * Ingest: from a file in the drop folder to validated payout rows.
 * inbox/ finds complete uploads and claims them; csv/ streams and checks a
 * file; rules/ validates a row; intake.ts reads a claimed file into the
 * database and accepts or rejects it.
 */
export { BatchIntake, type AckDraft } from './intake.js';
export { InboxWatcher, claimedDirOf, type ClaimedFile, type InboxCandidate, type MarkerNotice, type RejectedEntry } from './inbox/index.js';
export { FileReadFailure } from './csv/index.js';

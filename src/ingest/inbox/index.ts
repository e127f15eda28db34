/** The inbox: finding complete uploads in the drop folder and claiming them into storage. */
export { InboxWatcher, INBOX_DEFAULTS, HIDDEN_NOTICE_WINDOWS, type InboxWatcherOptions, type PendingEntry } from './watcher.js';
export { PAUSE_FACTOR, fingerprintKey, observe, stabilityVerdict, type Observation, type Patience, type WaitReason } from './stability.js';
export { claimFile, lstatOrNull, takenFileChange, verifyUnchanged, type ClaimOptions } from './claim.js';
export { moveAside, type MoveAsideOptions, type MovedAside } from './move-aside.js';
export {
  isIgnoredName,
  safeName,
  outboxSafeName,
  parseStoredName,
  newClaimId,
  compileIgnore,
  type IgnorePattern,
  type ParsedStoredName,
  DONE_SUFFIX,
  CONTROL_SUFFIX,
} from './names.js';
export { InboxError, type InboxErrorCode } from './errors.js';
export type { EntryKind } from './kinds.js';
export type { ClaimedFile, IgnoredEntry, InboxCandidate, RejectedEntry } from './types.js';

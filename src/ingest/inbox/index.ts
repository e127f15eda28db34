/** The inbox: finding complete uploads in the drop folder and claiming them into storage. */
export { InboxWatcher, claimedDirOf, type InboxWatcherOptions } from './watcher.js';
export { fingerprintKey, observe, stabilityVerdict, type Observation, type Patience } from './stability.js';
export { claimFile, lstatOrNull, sha256OfFile, takenFileChange, verifyUnchanged } from './claim.js';
export { moveAside } from './move-aside.js';
export { isIgnoredName, outboxSafeName, parseStoredName, newClaimId, compileIgnore } from './names.js';
export { InboxError } from './errors.js';
export { refusalOutcome } from './kinds.js';
export type { ClaimedFile, IgnoredEntry, InboxCandidate, MarkerNotice, RejectedEntry } from './types.js';

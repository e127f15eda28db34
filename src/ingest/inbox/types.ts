/** The records the inbox hands to its caller: a stable candidate, a claimed file, a rejected entry, a dotfile. */
import type { EntryKind } from './kinds.js';

/** A regular file in the inbox judged complete; offered through onCandidateReady. */
export interface InboxCandidate {
  /** The base name in the inbox, as uploaded. */
  name: string;
  /** Absolute path in the (real path of the) inbox. */
  path: string;
  /** Size and mtime judged stable; the claim refuses a file that no longer matches. */
  size: number;
  mtimeMs: number;
  ino: number;
  /** `<name>.ctl` next to the file when it was judged, if any. */
  controlPath?: string;
  /** `<name>.done`, when the claim must find it: markers are required, or the file was offered on the strength of it. */
  doneMarkerPath?: string;
}

/** A file moved into storage by a claim. */
export interface ClaimedFile {
  claimId: string;
  /** The base name as uploaded; the stored name is a safe form of it. */
  originalName: string;
  /** `<storageDir>/claimed/<claimId>__<safeName>`. */
  storedPath: string;
  size: number;
  mtimeMs: number;
  /** SHA-256 of the first `size` bytes, lower-case hex. */
  sha256: string;
  /** The control sidecar moved along, `<storedPath>.ctl`. */
  controlPath?: string;
  /**
   * `<name>.done` was present at the claim, arrived after the file last changed, and was consumed; false for a
   * file found in storage without its record.
   */
  doneMarker: boolean;
  /**
   * The hard links and mode of the inode as the claim's handle saw them (absent for a file found in storage without
   * its record): who else could write the bytes read then, which decides whether its owner is its uploader.
   */
  seen?: { nlink: number; mode: number };
}

/**
 * What the watcher did about a `<name>.done` marker, told once each: one older than the file beside it is
 * ignored (the file waits as if it had none); one with no file beside it for longer than stableForMs is removed.
 * `name` is the file's name, times are ctimes (ms since the epoch).
 */
export type MarkerNotice =
  | { kind: 'older-than-file'; name: string; markerPath: string; markerChangedMs: number; fileChangedMs: number }
  | { kind: 'removed-alone'; name: string; markerPath: string; aloneForMs: number };

/** An inbox entry that is not a regular file (or cannot be named), reported once. */
export interface RejectedEntry {
  name: string;
  /** Where it was in the inbox; for an invalid-name entry, a display form only. */
  path: string;
  kind: EntryKind;
  /** Where it was moved, when it could be moved aside; directories and invalid names stay in place. */
  movedTo?: string;
  /**
   * A file payoutd may not read, left in place: the size and mtime it was answered for. An answer is owed once per
   * name, size and mtime, across restarts: a changed file is answered again.
   */
  version?: { size: number; mtimeMs: number };
}

/** A dotfile (never taken) not written to for a while: reported once per name and inode. */
export interface IgnoredEntry {
  name: string;
  path: string;
  kind: EntryKind;
  /** Since its mtime, by the watcher's clock (ms). */
  unchangedForMs: number;
}

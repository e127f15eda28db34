/**
 * When an upload is complete: its fingerprint (inode, size, mtime, and its sidecar's) unchanged for at least
 * `stableForMs` and PAUSE_FACTOR times the longest pause seen while it grew, at most `maxStableForMs`. A file
 * not ending in a line break waits `unterminatedStableForMs` unless a done marker vouches for it. Pure.
 */
import type { Stats } from 'node:fs';

/** How many times the longest pause seen a file must stay unchanged: one more pause as long would not be mistaken for the end. */
export const PAUSE_FACTOR = 3;

export interface Observation {
  /** The fingerprint seen; see fingerprintKey. */
  key: string;
  /** When this fingerprint was first seen, clock ms. */
  since: number;
  /** When this fingerprint was last seen, clock ms. */
  lastSeen: number;
  /** The longest time an earlier fingerprint was seen unchanged before the file changed again (between sightings). */
  longestPauseMs: number;
}

/** The waiting rules, from the configuration. */
export interface Patience {
  stableForMs: number;
  /** Upper bound of the wait that pauses can impose (never below stableForMs). */
  maxStableForMs: number;
  /** The wait of a file whose last byte is not a line break, unless a done marker came with it. */
  unterminatedStableForMs: number;
}

/** What is known of the file's end, once its window has passed: both absent until then. */
export interface FileEnd {
  /** Its last byte is a line break (an empty file is not terminated). */
  terminated: boolean;
  /** A `<name>.done` that arrived after the file last changed is present. */
  doneMarker: boolean;
}

/** What the wait is for: the configured window, the pauses of the upload, or an unterminated last line. */
export type WaitReason = 'stable-window' | 'upload-pauses' | 'unterminated';

export interface StabilityVerdict {
  stable: boolean;
  /** When the file is stable if it stays unchanged, clock ms. */
  stableAt: number;
  reason: WaitReason;
}

/** Inode, size and mtime of the file and of its sidecar (or its absence): any change restarts the window. */
export function fingerprintKey(file: Stats, sidecar: Stats | null): string {
  const own = `${file.ino}:${file.size}:${file.mtimeMs}`;
  return sidecar === null ? own : `${own}|ctl:${sidecar.ino}:${sidecar.size}:${sidecar.mtimeMs}`;
}

/** The observation after seeing `key` at `now`; a clock that went backwards restarts the window. */
export function observe(previous: Observation | undefined, key: string, now: number): Observation {
  if (previous === undefined) return { key, since: now, lastSeen: now, longestPauseMs: 0 };
  if (now < previous.lastSeen) return { key, since: now, lastSeen: now, longestPauseMs: previous.longestPauseMs };
  if (previous.key === key) return { ...previous, lastSeen: now };
  const pause = previous.lastSeen - previous.since;
  return { key, since: now, lastSeen: now, longestPauseMs: Math.max(previous.longestPauseMs, pause) };
}

/** How long the current fingerprint must stay unchanged, from the window and the pauses seen (the file's end aside). */
export function requiredQuietMs(observation: Observation, patience: Patience): { ms: number; reason: WaitReason } {
  const cap = Math.max(patience.maxStableForMs, patience.stableForMs);
  const fromPauses = Math.min(PAUSE_FACTOR * observation.longestPauseMs, cap);
  return fromPauses > patience.stableForMs
    ? { ms: fromPauses, reason: 'upload-pauses' }
    : { ms: patience.stableForMs, reason: 'stable-window' };
}

/** Whether the file can be offered at `now`; without `end`, the verdict of the window alone. */
export function stabilityVerdict(observation: Observation, now: number, patience: Patience, end?: FileEnd): StabilityVerdict {
  let { ms, reason } = requiredQuietMs(observation, patience);
  if (end !== undefined && !end.terminated && !end.doneMarker && patience.unterminatedStableForMs > ms) {
    ms = patience.unterminatedStableForMs;
    reason = 'unterminated';
  }
  const stableAt = observation.since + ms;
  return { stable: now >= stableAt, stableAt, reason };
}

/**
 * When an upload is complete. A file is stable once its fingerprint (inode,
 * size, mtime, and the same for its control sidecar) has stayed the same for
 * long enough: at least `stableForMs`, and at least PAUSE_FACTOR times the
 * longest pause seen between two changes while it grew (a slow link writes
 * in bursts with long gaps), but never more than `maxStableForMs`. A file
 * whose last byte is not a line break waits `unterminatedStableForMs` unless
 * a done marker vouches for it. Pure: observations and times in, verdict out.
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
  /**
   * The longest time an earlier fingerprint was seen unchanged before the file changed again (ms). Only
   * time between two sightings counts, so a watcher busy elsewhere does not make a pause look longer.
   */
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
  /** `<name>.done` is present. */
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

/**
 * The observation after seeing `key` at `now`. A change records how long the previous fingerprint was
 * seen unchanged. A clock that went backwards restarts the window rather than stretching it, and keeps
 * the pauses already seen.
 */
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

/**
 * Whether the file can be offered at `now`. Without `end`, the verdict of the window alone (the caller
 * reads the last byte only once that passes, then asks again with it).
 */
export function stabilityVerdict(observation: Observation, now: number, patience: Patience, end?: FileEnd): StabilityVerdict {
  let { ms, reason } = requiredQuietMs(observation, patience);
  if (end !== undefined && !end.terminated && !end.doneMarker && patience.unterminatedStableForMs > ms) {
    ms = patience.unterminatedStableForMs;
    reason = 'unterminated';
  }
  const stableAt = observation.since + ms;
  return { stable: now >= stableAt, stableAt, reason };
}

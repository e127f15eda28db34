/**
 * When an upload is complete: a file is stable once two observations at
 * least `stableForMs` apart saw the same fingerprint (inode, size, mtime, and
 * the same for its control sidecar). Pure: time comes in as numbers.
 */
import type { Stats } from 'node:fs';

export interface Observation {
  /** The fingerprint seen; see fingerprintKey. */
  key: string;
  /** When this fingerprint was first seen, clock ms. */
  since: number;
}

/** Inode, size and mtime of the file and of its sidecar (or its absence): any change restarts the window. */
export function fingerprintKey(file: Stats, sidecar: Stats | null): string {
  const own = `${file.ino}:${file.size}:${file.mtimeMs}`;
  return sidecar === null ? own : `${own}|ctl:${sidecar.ino}:${sidecar.size}:${sidecar.mtimeMs}`;
}

/** The observation after seeing `key` at `now`. A clock that went backwards restarts the window rather than stretching it. */
export function observe(previous: Observation | undefined, key: string, now: number): Observation {
  if (previous === undefined || previous.key !== key || now < previous.since) return { key, since: now };
  return previous;
}

export function isStable(observation: Observation, now: number, stableForMs: number): boolean {
  return now - observation.since >= stableForMs;
}

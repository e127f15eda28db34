/**
 * Test fixtures for the inbox: real temp folders, a watcher driven by a
 * ManualClock and manual ticks, and recorders for its callbacks.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../src/domain/clock.js';
import {
  type ClaimedFile,
  type IgnoredEntry,
  type InboxCandidate,
  type InboxError,
  InboxWatcher,
  type InboxWatcherOptions,
  type MarkerNotice,
  type RejectedEntry,
} from '../../src/ingest/inbox/index.js';

export interface Folders {
  base: string;
  inbox: string;
  storage: string;
  cleanup: () => Promise<void>;
}

export async function makeFolders(): Promise<Folders> {
  const base = await mkdtemp(join(tmpdir(), 'payoutd-inbox-'));
  const inbox = join(base, 'inbox');
  const storage = join(base, 'storage');
  await mkdir(inbox);
  return { base, inbox, storage, cleanup: () => rm(base, { recursive: true, force: true }) };
}

/** Polls a condition until it holds or the deadline passes: for chokidar, whose events arrive when they arrive. */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Harness {
  watcher: InboxWatcher;
  clock: ManualClock;
  offered: InboxCandidate[];
  claimed: ClaimedFile[];
  rejected: { entry: RejectedEntry; reason: string }[];
  ignored: { entry: IgnoredEntry; reason: string }[];
  errors: InboxError[];
  /** What it said of `.done` markers: ignored as older than their file, removed as alone. */
  markerNotices: MarkerNotice[];
  /** Advances the clock and runs one pass. */
  step: (ms: number) => Promise<void>;
  /** Advances the clock `ms` in passes a second apart, as the daemon's timer runs them. */
  run: (ms: number) => Promise<void>;
}

type HarnessOptions = Partial<Omit<InboxWatcherOptions, 'onCandidateReady'>> & {
  /** Defaults to claiming every offer. */
  onCandidateReady?: (candidate: InboxCandidate, h: Harness) => Promise<void>;
};

/** A watcher with autoTick off and a ManualClock; by default it claims everything offered. */
export function harness(folders: Folders, options: HarnessOptions = {}): Harness {
  const clock = new ManualClock();
  const h = { clock, offered: [], claimed: [], rejected: [], ignored: [], errors: [], markerNotices: [] } as unknown as Harness;
  const decide =
    options.onCandidateReady ??
    (async (candidate: InboxCandidate, hh: Harness) => {
      const claimed = await hh.watcher.claim(candidate);
      if (claimed !== null) hh.claimed.push(claimed);
    });
  h.watcher = new InboxWatcher({
    inboxDir: folders.inbox,
    storageDir: folders.storage,
    autoTick: false,
    clock,
    ...options,
    onCandidateReady: async (candidate) => {
      h.offered.push(candidate);
      await decide(candidate, h);
    },
    onRejected: (entry, reason) => {
      h.rejected.push({ entry, reason });
    },
    onIgnored: (entry, reason) => {
      h.ignored.push({ entry, reason });
    },
    onError: (error) => {
      h.errors.push(error);
    },
    onMarkerNotice: (notice) => {
      h.markerNotices.push(notice);
    },
  });
  h.step = async (ms: number) => {
    clock.advance(ms);
    await h.watcher.tick();
  };
  h.run = async (ms: number) => {
    for (let left = ms; left > 0; left -= 1000) await h.step(Math.min(1000, left));
  };
  return h;
}

/** Waits long enough that a file written next gets a later status-change time (filesystem timestamps are coarse). */
export function nextTimestamp(): Promise<void> {
  return new Promise((r) => setTimeout(r, 30));
}

export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function names(dir: string): Promise<string[]> {
  return (await readdir(dir)).sort();
}

/**
 * The inbox watcher: keeps the set of names in the drop folder (chokidar hints and periodic listings), judges
 * each regular file's stability itself with lstat against a Clock (stability.ts), offers stable files one at
 * a time, and reports entries that are not regular files, files payoutd may not read and long-lived dotfiles
 * once. chokidar events only say "look at this name": events can be missed, duplicated or reordered, so every
 * decision comes from lstat.
 */
import { type FSWatcher, watch } from 'chokidar';
import type { Stats } from 'node:fs';
import { mkdir, readdir, realpath, stat, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { type Clock, systemClock } from '../../domain/clock.js';
import { ConfigError } from '../../domain/errors.js';
import { claimFile, lstatOrNull, markerVouches } from './claim.js';
import { InboxError, describeError, errnoCode, isPermissionDenied } from './errors.js';
import { endsWithLineBreak } from './ending.js';
import { entryKind, processUser, rejectionReason, unreadableReason } from './kinds.js';
import { moveAside } from './move-aside.js';
import {
  CONTROL_SUFFIX,
  DONE_SUFFIX,
  type IgnorePattern,
  type NameFilter,
  compileIgnore,
  displayRawName,
  isHiddenName,
  isIgnoredName,
  isUtf8Name,
} from './names.js';
import { type FileEnd, type Observation, type Patience, type WaitReason, fingerprintKey, observe, stabilityVerdict } from './stability.js';
import type { ClaimedFile, IgnoredEntry, InboxCandidate, MarkerNotice, RejectedEntry } from './types.js';

/** A dotfile unchanged this many stability windows is reported once through onIgnored. */
export const HIDDEN_NOTICE_WINDOWS = 12;

export const INBOX_DEFAULTS = {
  stableForMs: 5000,
  maxStableForMs: 600_000,
  unterminatedStableForMs: 600_000,
  rescanIntervalMs: 30_000,
  checkIntervalMs: 1000,
  requireDoneMarker: false,
  usePolling: false,
  pollIntervalMs: 1000,
  watchEvents: true,
  autoTick: true,
} as const;

/** Where a storage folder's claims go: `<storageDir>/claimed` (the daemon's start check renames a probe into it too). */
export function claimedDirOf(storageDir: string): string {
  return join(resolve(storageDir), 'claimed');
}

export interface InboxWatcherOptions {
  /** The drop folder; only its direct entries are considered. */
  inboxDir: string;
  /** Daemon storage on the inbox's filesystem; claims go to `<storageDir>/claimed`. */
  storageDir: string;
  /** Where non-regular entries are moved; default `<storageDir>/rejected`. */
  rejectedDir?: string;
  /** Size and mtime unchanged this long (ms), and at least 3 times the longest pause seen while the file grew. */
  stableForMs?: number;
  /** The longest wait the pauses of an upload can impose (ms); never below stableForMs. Default 600000. */
  maxStableForMs?: number;
  /** The wait of a file whose last byte is not a line break, unless a `<name>.done` newer than the file is present (ms). Default 600000. */
  unterminatedStableForMs?: number;
  /** A full listing of the folder at least this often (ms), so a missed event delays a file but never loses it. Default 30000. */
  rescanIntervalMs?: number;
  /** How often the production timer runs a pass (ms); a file is claimed within stableForMs + checkIntervalMs of its last write. Default 1000. */
  checkIntervalMs?: number;
  /** Require a `<name>.done` newer than the file before it is offered; the marker is consumed by the claim. Default false. */
  requireDoneMarker?: boolean;
  /** chokidar polling, for network shares where inotify sees nothing. CPU-heavy on large folders. Default false. */
  usePolling?: boolean;
  /** Extra names never claimed: globs on the base name (`*`, `?`) or RegExps. */
  ignore?: readonly IgnorePattern[];
  /** Use chokidar hints. Off: only listings find files (every rescanIntervalMs). Default true. */
  watchEvents?: boolean;
  /** Run passes on a timer every checkIntervalMs. Off: the caller drives tick() (tests). Default true. */
  autoTick?: boolean;
  clock?: Clock;
  /** A file is stable: decide (database) and call claim(). Awaited; one at a time. */
  onCandidateReady: (candidate: InboxCandidate) => Promise<void>;
  /**
   * An entry that is not a regular file, reported once (moved aside when it can be renamed); a file payoutd may
   * not read, once per name, size and mtime (left in place, taken once readable), with that `version`.
   */
  onRejected: (entry: RejectedEntry, reason: string) => void | Promise<void>;
  /** A dotfile unchanged for HIDDEN_NOTICE_WINDOWS x stableForMs: never taken, reported once per name and inode. */
  onIgnored?: (entry: IgnoredEntry, reason: string) => void;
  /** A `<name>.done` ignored as older than its file, or removed as alone; each told once. */
  onMarkerNotice?: (notice: MarkerNotice) => void;
  /** Errors of the watcher and of the callbacks; the watcher never throws out of its loop. */
  onError: (error: InboxError) => void;
}

interface Resolved extends Patience {
  rescanIntervalMs: number;
  checkIntervalMs: number;
  requireDoneMarker: boolean;
  usePolling: boolean;
  watchEvents: boolean;
  autoTick: boolean;
  clock: Clock;
  ignore: NameFilter;
}

interface Tracked {
  observation?: Observation;
  /** Whether the file ends with a line break, read once its window passed, for that fingerprint. */
  end?: { key: string; terminated: boolean };
  /** A `<name>.done` that vouches for the file (arrived after it last changed) was present when last looked for. */
  doneMarker?: boolean;
  /** The fingerprint last offered and when: an unchanged file the caller left in place is offered again only after rescanIntervalMs. */
  offeredKey?: string;
  offeredAt?: number;
}

/** A name waiting in the inbox, for status displays. */
export interface PendingEntry {
  name: string;
  unchangedSince?: number;
  /** When it will be offered if it stays unchanged (clock ms); absent while it waits for its `.done` marker. */
  stableAt?: number;
  waitsMs?: number;
  waitingFor?: WaitReason | 'done-marker';
}

const HIDDEN_REASON =
  "a dotfile: names starting with '.' are upload clients' temporary names and are never taken; if it is a batch, rename it without the leading dot";

export class InboxWatcher {
  readonly claimedDir: string;
  readonly rejectedDir: string;
  private readonly inboxDir: string;
  private readonly options: Resolved;
  private readonly callbacks: Pick<InboxWatcherOptions, 'onCandidateReady' | 'onRejected' | 'onError' | 'onIgnored' | 'onMarkerNotice'>;
  private root = '';
  private ownNames = new Set<string>();
  private readonly tracked = new Map<string, Tracked>();
  /** Entries reported and left in place, by name, with the identity reported, so each is reported once. */
  private readonly reported = new Map<string, string>();
  private readonly hiddenNoticed = new Map<string, number>();
  /**
   * `<name>.done` names to look at for a file beside them (found by listings, or left when their file went): null
   * until seen alone, then since when (clock ms) and as which marker. Removed once alone longer than stableForMs.
   */
  private readonly markers = new Map<string, LoneMarker | null>();
  /** Markers told of as older than their file, by file name, as `ino:ctime`: told once each. */
  private readonly staleNoticed = new Map<string, string>();
  /** Who this process is, for the reason given for a file it may not read. */
  private readonly runAs = processUser();
  private chokidar: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> = Promise.resolve();
  private passRunning = false;
  private running = false;
  private lastRescanAt = 0;

  constructor(options: InboxWatcherOptions) {
    this.inboxDir = resolve(options.inboxDir);
    this.claimedDir = claimedDirOf(options.storageDir);
    this.rejectedDir = resolve(options.rejectedDir ?? join(options.storageDir, 'rejected'));
    this.options = {
      stableForMs: wholeMs('stableForMs', options.stableForMs ?? INBOX_DEFAULTS.stableForMs, 1),
      maxStableForMs: wholeMs('maxStableForMs', options.maxStableForMs ?? INBOX_DEFAULTS.maxStableForMs, 1),
      unterminatedStableForMs: wholeMs(
        'unterminatedStableForMs',
        options.unterminatedStableForMs ?? INBOX_DEFAULTS.unterminatedStableForMs,
      ),
      rescanIntervalMs: wholeMs('rescanIntervalMs', options.rescanIntervalMs ?? INBOX_DEFAULTS.rescanIntervalMs, 1),
      checkIntervalMs: wholeMs('checkIntervalMs', options.checkIntervalMs ?? INBOX_DEFAULTS.checkIntervalMs, 1),
      requireDoneMarker: options.requireDoneMarker ?? INBOX_DEFAULTS.requireDoneMarker,
      usePolling: options.usePolling ?? INBOX_DEFAULTS.usePolling,
      watchEvents: options.watchEvents ?? INBOX_DEFAULTS.watchEvents,
      autoTick: options.autoTick ?? INBOX_DEFAULTS.autoTick,
      clock: options.clock ?? systemClock,
      ignore: compileIgnore(options.ignore ?? []),
    };
    this.callbacks = {
      onCandidateReady: options.onCandidateReady,
      onRejected: options.onRejected,
      onError: options.onError,
      onIgnored: options.onIgnored,
      onMarkerNotice: options.onMarkerNotice,
    };
  }

  /** Creates the storage folders, lists the inbox (files already there are candidates), starts chokidar and the timer. */
  async start(): Promise<void> {
    if (this.running) return;
    try {
      this.root = await realpath(this.inboxDir);
    } catch (error) {
      throw new InboxError('INBOX_UNREADABLE', `cannot open the inbox ${this.inboxDir}: ${errnoCode(error) ?? 'error'}`, { cause: error });
    }
    await mkdir(this.claimedDir, { recursive: true });
    await mkdir(this.rejectedDir, { recursive: true });
    await this.checkSameFilesystem();
    this.ownNames = ownEntryNames(this.root, [await realpath(this.claimedDir), await realpath(this.rejectedDir)]);
    this.running = true;
    await this.rescan();
    if (this.options.watchEvents) await this.startChokidar();
    if (this.options.autoTick) {
      this.timer = setInterval(() => {
        // A slow pass (a long callback) is not queued behind: the next tick after it catches up.
        if (!this.passRunning) void this.tick();
      }, this.options.checkIntervalMs);
      this.timer.unref();
    }
  }

  /**
   * Closes chokidar, clears the timer and waits for the pass in flight (and its callback) to finish. From inside
   * onCandidateReady, call it without awaiting it: the pass it waits for is the caller's own.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    const closing = this.chokidar?.close();
    this.chokidar = undefined;
    await closing;
    await this.pass;
    this.tracked.clear();
    this.markers.clear();
  }

  /** One pass: a listing when rescanIntervalMs has passed, then an lstat of every known name. Passes never overlap. */
  tick(): Promise<void> {
    const next = this.pass.then(() => this.runPass());
    this.pass = next;
    return next;
  }

  /**
   * Claims a candidate this watcher offered; null when nothing was claimed (gone, changed again, marker gone).
   * `beforeRename`: told the stored path just before the file is renamed into claimed/.
   */
  async claim(candidate: InboxCandidate, beforeRename?: (storedPath: string) => void): Promise<ClaimedFile | null> {
    if (!isPlainName(candidate.name) || candidate.path !== join(this.root, candidate.name)) {
      throw new InboxError(
        'INBOX_CLAIM_FAILED',
        `refusing to claim ${JSON.stringify(candidate.path)}: not an entry of the inbox ${this.root}`,
      );
    }
    let claimed: ClaimedFile | null;
    try {
      claimed = await claimFile(candidate, {
        claimedDir: this.claimedDir,
        clock: this.options.clock,
        requireDoneMarker: this.options.requireDoneMarker,
        beforeRename,
        onStaleMarker: (marker, file) => this.noticeStaleMarker(candidate.name, marker, file),
      });
    } catch (error) {
      if (!(error instanceof InboxError && error.code === 'INBOX_FILE_UNREADABLE')) throw error;
      // Made unreadable since it was judged: answered as examine answers it, and looked at again at the next listing.
      this.tracked.delete(candidate.name);
      const st = await lstatOrNull(candidate.path).catch(() => null);
      if (st !== null) await this.reportUnreadable(candidate.name, candidate.path, st);
      return null;
    }
    if (claimed !== null) this.tracked.delete(candidate.name);
    return claimed;
  }

  /** Names waiting in the inbox, with how long each has been unchanged and how long it still waits. */
  pending(): PendingEntry[] {
    const now = this.options.clock.now();
    return [...this.tracked].map(([name, t]) => {
      if (t.observation === undefined) return { name };
      const unchangedSince = t.observation.since;
      if (this.options.requireDoneMarker && t.doneMarker !== true) return { name, unchangedSince, waitingFor: 'done-marker' };
      const verdict = stabilityVerdict(t.observation, now, this.options, this.knownEnd(t));
      return { name, unchangedSince, stableAt: verdict.stableAt, waitsMs: Math.max(0, verdict.stableAt - now), waitingFor: verdict.reason };
    });
  }

  private async runPass(): Promise<void> {
    if (!this.running) return;
    this.passRunning = true;
    try {
      const now = this.options.clock.now();
      if (now - this.lastRescanAt >= this.options.rescanIntervalMs || now < this.lastRescanAt) await this.rescan();
      for (const name of [...this.tracked.keys()]) {
        if (!this.running) break;
        await this.examine(name);
      }
      for (const name of [...this.markers.keys()]) {
        if (!this.running) break;
        await this.examineMarker(name);
      }
    } catch (error) {
      // examine and rescan report their own errors; this is the last guard so the loop never dies silently.
      this.fail(new InboxError('INBOX_WATCH_ERROR', `inbox pass failed: ${describeError(error)}`, { cause: error }));
    } finally {
      this.passRunning = false;
    }
  }

  /** Lists the folder: every name becomes known; names that are not valid UTF-8 are reported (they cannot be addressed as strings). */
  private async rescan(): Promise<void> {
    this.lastRescanAt = this.options.clock.now();
    let raw: Buffer[];
    try {
      raw = await readdir(this.root, { encoding: 'buffer' });
    } catch (error) {
      this.fail(new InboxError('INBOX_UNREADABLE', `cannot list the inbox ${this.root}: ${errnoCode(error) ?? 'error'}`, { cause: error }));
      return;
    }
    const seen = new Set<string>();
    for (const bytes of raw) {
      if (!isUtf8Name(bytes)) {
        const key = `\0${bytes.toString('hex')}`;
        seen.add(key);
        await this.reportInPlace(key, 'invalid-name', {
          name: displayRawName(bytes),
          path: join(this.root, displayRawName(bytes)),
          kind: 'invalid-name',
        });
        continue;
      }
      const name = bytes.toString('utf8');
      seen.add(name);
      if (isHiddenName(name) && !this.ownNames.has(name)) await this.noticeHidden(name);
      else if (isMarkerName(name)) this.watchMarker(name);
      else this.track(name);
    }
    for (const name of this.reported.keys()) if (!seen.has(name)) this.reported.delete(name);
    for (const name of this.staleNoticed.keys()) if (!seen.has(name + DONE_SUFFIX)) this.staleNoticed.delete(name);
    for (const name of this.hiddenNoticed.keys()) if (!seen.has(name)) this.hiddenNoticed.delete(name);
  }

  /** A dotfile is never taken; one unchanged for HIDDEN_NOTICE_WINDOWS windows is reported once per name and inode. */
  private async noticeHidden(name: string): Promise<void> {
    const onIgnored = this.callbacks.onIgnored;
    if (onIgnored === undefined) return;
    const path = join(this.root, name);
    let st: Stats | null;
    try {
      st = await lstatOrNull(path);
    } catch {
      return; // only a notice: an entry that cannot be examined is left for the next listing
    }
    if (st === null || this.hiddenNoticed.get(name) === st.ino) return;
    const unchangedForMs = this.options.clock.now() - st.mtimeMs;
    if (unchangedForMs < HIDDEN_NOTICE_WINDOWS * this.options.stableForMs) return;
    this.hiddenNoticed.set(name, st.ino);
    try {
      onIgnored({ name, path, kind: entryKind(st), unchangedForMs: Math.trunc(unchangedForMs) }, HIDDEN_REASON);
    } catch (error) {
      this.fail(new InboxError('INBOX_CALLBACK_FAILED', `onIgnored failed for ${name}: ${describeError(error)}`, { cause: error }));
    }
  }

  private track(name: string): void {
    if (this.tracked.has(name) || isIgnoredName(name, this.options.ignore) || this.ownNames.has(name)) return;
    this.tracked.set(name, {});
  }

  /** lstat one name and act: forget, report, restart its window, or offer it. */
  private async examine(name: string): Promise<void> {
    const entry = this.tracked.get(name);
    if (entry === undefined) return;
    const path = join(this.root, name);
    let st: Stats | null;
    let sidecar: Stats | null = null;
    try {
      st = await lstatOrNull(path);
      if (st !== null && st.isFile()) {
        const control = await lstatOrNull(path + CONTROL_SUFFIX);
        sidecar = control !== null && control.isFile() ? control : null;
        if (this.options.requireDoneMarker) entry.doneMarker = await this.hasVouchingMarker(name, st);
      }
    } catch (error) {
      this.tracked.delete(name);
      this.fail(
        new InboxError('INBOX_STAT_FAILED', `cannot examine ${name} in the inbox: ${errnoCode(error) ?? 'error'}`, { cause: error }),
      );
      return;
    }
    if (st === null) {
      this.tracked.delete(name);
      // Withdrawn by its sender (or moved): a marker it leaves behind must not stand beside the next upload of the name.
      this.watchMarker(name + DONE_SUFFIX);
      return;
    }
    if (!st.isFile()) {
      this.tracked.delete(name);
      await this.reject(name, path, st);
      return;
    }

    const now = this.options.clock.now();
    const observation = observe(entry.observation, fingerprintKey(st, sidecar), now);
    entry.observation = observation;
    if (this.options.requireDoneMarker && entry.doneMarker !== true) return;
    if (!stabilityVerdict(observation, now, this.options).stable) return;
    // The window has passed: now (once per fingerprint) whether the file ends with a line break.
    let relyOnMarker = false;
    try {
      if (entry.end?.key !== observation.key) {
        const terminated = await endsWithLineBreak(path, st.ino, st.size);
        if (terminated === null) return; // gone or replaced since the lstat: the next pass sees what is there
        entry.end = { key: observation.key, terminated };
      }
      if (!entry.end.terminated) {
        if (!this.options.requireDoneMarker) entry.doneMarker = await this.hasVouchingMarker(name, st);
        if (!stabilityVerdict(observation, now, this.options, this.knownEnd(entry)).stable) return;
        relyOnMarker = !stabilityVerdict(observation, now, this.options, { terminated: false, doneMarker: false }).stable;
      }
    } catch (error) {
      // Looked at again at the next listing (a chmod lets it be taken), not at every pass.
      this.tracked.delete(name);
      if (isPermissionDenied(error)) {
        await this.reportUnreadable(name, path, st);
        return;
      }
      this.fail(
        new InboxError('INBOX_STAT_FAILED', `cannot read the end of ${name} in the inbox: ${errnoCode(error) ?? 'error'}`, {
          cause: error,
        }),
      );
      return;
    }
    const key = observation.key;
    if (
      entry.offeredKey === key &&
      entry.offeredAt !== undefined &&
      now >= entry.offeredAt &&
      now - entry.offeredAt < this.options.rescanIntervalMs
    ) {
      return;
    }
    entry.offeredKey = key;
    entry.offeredAt = now;
    await this.offer(candidateOf(name, path, st, sidecar !== null, this.options.requireDoneMarker || relyOnMarker));
  }

  /** What is known of the end of the tracked file's current fingerprint, if it was read. */
  private knownEnd(entry: Tracked): FileEnd | undefined {
    if (entry.end === undefined || entry.end.key !== entry.observation?.key) return undefined;
    return { terminated: entry.end.terminated, doneMarker: entry.doneMarker === true };
  }

  /**
   * `<name>.done` exists (anything but a directory: the claim can remove it) and vouches for the file as lstat saw
   * it (`file`): it arrived after the file last changed. An older one is ignored, and told of once.
   */
  private async hasVouchingMarker(name: string, file: Stats): Promise<boolean> {
    const marker = await lstatOrNull(join(this.root, name) + DONE_SUFFIX);
    if (marker === null || marker.isDirectory()) return false;
    if (markerVouches(marker, file)) return true;
    this.noticeStaleMarker(name, marker, file);
    return false;
  }

  /** Tells once per marker (inode and ctime) that `<name>.done` is older than its file and is ignored. */
  private noticeStaleMarker(name: string, marker: Stats, file: Stats): void {
    const identity = `${marker.ino}:${marker.ctimeMs}`;
    if (this.staleNoticed.get(name) === identity) return;
    this.staleNoticed.set(name, identity);
    const markerPath = join(this.root, name) + DONE_SUFFIX;
    this.notifyMarker({ kind: 'older-than-file', name, markerPath, markerChangedMs: marker.ctimeMs, fileChangedMs: file.ctimeMs });
  }

  /** A marker name to look at at the next passes (kept as it is when already known). */
  private watchMarker(markerName: string): void {
    if (!this.markers.has(markerName)) this.markers.set(markerName, null);
  }

  /**
   * A marker with no file beside it: removed once alone (the same marker, by the clock) for longer than
   * stableForMs. Left, it would stand beside the next upload of that name; the ctime comparison already keeps
   * it from vouching for that upload, and its removal keeps the inbox free of markers that mean nothing.
   */
  private async examineMarker(markerName: string): Promise<void> {
    const seen = this.markers.get(markerName);
    if (seen === undefined) return;
    const markerPath = join(this.root, markerName);
    const name = markerName.slice(0, -DONE_SUFFIX.length);
    let marker: Stats | null;
    let file: Stats | null = null;
    try {
      marker = await lstatOrNull(markerPath);
      if (marker !== null && !marker.isDirectory()) file = await lstatOrNull(join(this.root, name));
    } catch (error) {
      this.markers.delete(markerName);
      this.fail(
        new InboxError('INBOX_STAT_FAILED', `cannot examine ${markerName} in the inbox: ${errnoCode(error) ?? 'error'}`, { cause: error }),
      );
      return;
    }
    // Gone, not a marker, or beside its file (whose claim consumes it).
    if (marker === null || marker.isDirectory() || file !== null) {
      this.markers.delete(markerName);
      return;
    }
    const identity = `${marker.ino}:${marker.ctimeMs}`;
    const now = this.options.clock.now();
    if (seen === null || seen.identity !== identity || now < seen.since) {
      this.markers.set(markerName, { identity, since: now });
      return;
    }
    const aloneForMs = now - seen.since;
    if (seen.removeFailed === true || aloneForMs <= this.options.stableForMs) return;
    try {
      await unlink(markerPath);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') {
        this.markers.delete(markerName);
        return;
      }
      // Tried once per marker: the next listing finds it again, and a changed marker is tried again.
      seen.removeFailed = true;
      this.fail(
        new InboxError(
          'INBOX_MARKER_REMOVE_FAILED',
          `cannot remove ${markerName} from the inbox (no file ${name} beside it): ${errnoCode(error) ?? 'error'}`,
          { cause: error },
        ),
      );
      return;
    }
    this.markers.delete(markerName);
    this.notifyMarker({ kind: 'removed-alone', name, markerPath, aloneForMs });
  }

  private notifyMarker(notice: MarkerNotice): void {
    try {
      this.callbacks.onMarkerNotice?.(notice);
    } catch (error) {
      this.fail(
        new InboxError('INBOX_CALLBACK_FAILED', `onMarkerNotice failed for ${notice.name}: ${describeError(error)}`, { cause: error }),
      );
    }
  }

  private async offer(candidate: InboxCandidate): Promise<void> {
    try {
      await this.callbacks.onCandidateReady(candidate);
    } catch (error) {
      this.fail(
        new InboxError('INBOX_CALLBACK_FAILED', `onCandidateReady failed for ${candidate.name}: ${describeError(error)}`, { cause: error }),
      );
    }
  }

  /** A non-regular entry: moved aside when it is not a directory (a rename never opens it), reported once either way. */
  private async reject(name: string, path: string, st: Stats): Promise<void> {
    const kind = entryKind(st);
    const identity = `${kind}:${st.dev}:${st.ino}`;
    if (this.reported.get(name) === identity) return;
    if (kind === 'directory') {
      await this.reportInPlace(name, identity, { name, path, kind });
      return;
    }
    const reason = rejectionReason(kind);
    try {
      const { storedPath } = await moveAside(path, this.rejectedDir, reason, { clock: this.options.clock });
      await this.notifyRejected({ name, path, kind, movedTo: storedPath }, reason);
    } catch (error) {
      if (error instanceof InboxError && error.code === 'INBOX_GONE') return;
      this.fail(
        error instanceof InboxError
          ? error
          : new InboxError('INBOX_MOVE_ASIDE_FAILED', `cannot move ${name} aside: ${describeError(error)}`),
      );
      await this.reportInPlace(name, identity, { name, path, kind });
    }
  }

  /**
   * A regular file payoutd may not open: left in place, reported once per name, size and mtime (its version: the
   * caller keeps its answer to a version across restarts); a chmod that still does not let payoutd read it is no news.
   */
  private async reportUnreadable(name: string, path: string, st: Stats): Promise<void> {
    const version = { size: st.size, mtimeMs: st.mtimeMs };
    const entry: RejectedEntry = { name, path, kind: 'unreadable', version };
    await this.reportInPlace(name, `unreadable:${st.size}:${st.mtimeMs}`, entry, unreadableReason(st, this.runAs));
  }

  private async reportInPlace(key: string, identity: string, entry: RejectedEntry, reason = rejectionReason(entry.kind)): Promise<void> {
    if (this.reported.get(key) === identity) return;
    this.reported.set(key, identity);
    await this.notifyRejected(entry, reason);
  }

  private async notifyRejected(entry: RejectedEntry, reason: string): Promise<void> {
    try {
      await this.callbacks.onRejected(entry, reason);
    } catch (error) {
      this.fail(new InboxError('INBOX_CALLBACK_FAILED', `onRejected failed for ${entry.name}: ${describeError(error)}`, { cause: error }));
    }
  }

  private async startChokidar(): Promise<void> {
    const root = this.root;
    const watcher = watch(root, {
      ignoreInitial: false,
      depth: 0,
      followSymlinks: false,
      // A file chokidar may not watch (EACCES) is not an error of the watch: our own open finds it and answers it once.
      ignorePermissionErrors: true,
      usePolling: this.options.usePolling,
      interval: INBOX_DEFAULTS.pollIntervalMs,
      binaryInterval: INBOX_DEFAULTS.pollIntervalMs,
      // Fewer watches on temp files and markers; our own listing and lstat decide anyway.
      ignored: (path: string) => path !== root && dirname(path) === root && isIgnoredName(basename(path), this.options.ignore),
    });
    const hint = (path: string): void => {
      if (dirname(path) === root) this.track(basename(path));
    };
    watcher.on('add', hint).on('change', hint).on('unlink', hint).on('addDir', hint);
    watcher.on('error', (error: unknown) => this.fail(watchError(error)));
    this.chokidar = watcher;
    await new Promise<void>((resolveReady) => watcher.once('ready', resolveReady));
  }

  /** Claims and moves aside are renames: a folder on another filesystem would fail every one of them, so fail at start instead. */
  private async checkSameFilesystem(): Promise<void> {
    const inbox = await stat(this.root);
    for (const dir of [this.claimedDir, this.rejectedDir]) {
      if ((await stat(dir)).dev !== inbox.dev) {
        throw new InboxError(
          'INBOX_CROSS_DEVICE',
          `${dir} is on another filesystem than the inbox ${this.root}: claims and moves aside must be renames`,
        );
      }
    }
  }

  private fail(error: InboxError): void {
    try {
      this.callbacks.onError(error);
    } catch {
      // The error sink itself failed; throwing here would kill the watch loop, which is worse than losing one report.
    }
  }
}

/** A `<name>.done` seen with no file beside it: since when (clock ms), as which marker (`ino:ctime`). */
interface LoneMarker {
  identity: string;
  since: number;
  removeFailed?: boolean;
}

/** `<name>.done` for some name: never a candidate, looked at for a file beside it. */
function isMarkerName(name: string): boolean {
  return name.endsWith(DONE_SUFFIX) && name.length > DONE_SUFFIX.length;
}

/** `markerRequired`: the claim must find `<name>.done` (markers are required, or the offer relied on one). */
function candidateOf(name: string, path: string, st: Stats, hasControl: boolean, markerRequired: boolean): InboxCandidate {
  const candidate: InboxCandidate = { name, path, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
  if (hasControl) candidate.controlPath = path + CONTROL_SUFFIX;
  if (markerRequired) candidate.doneMarkerPath = path + DONE_SUFFIX;
  return candidate;
}

function watchError(error: unknown): InboxError {
  if (errnoCode(error) === 'ENOSPC') {
    return new InboxError(
      'INBOX_WATCH_LIMIT',
      'the inotify watch limit is reached (ENOSPC from the file watcher): raise fs.inotify.max_user_watches or set usePolling; until then only the periodic rescan finds new files',
      { cause: error },
    );
  }
  return new InboxError('INBOX_WATCH_ERROR', `file watcher error: ${describeError(error)}`, { cause: error });
}

/** A single path segment: what a directory listing can return. */
function isPlainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes(sep) && !name.includes('\0');
}

/** First segments of our folders that live inside the inbox: never candidates nor rejected entries. */
function ownEntryNames(root: string, dirs: string[]): Set<string> {
  const names = new Set<string>();
  for (const dir of dirs) {
    const rel = relative(root, dir);
    const first = rel.split(sep)[0];
    if (rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && first !== undefined) names.add(first);
  }
  return names;
}

function wholeMs(option: string, value: number, min = 0): number {
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(
      'INBOX_BAD_OPTION',
      `Expected \`${option}\` to be a whole number of milliseconds from ${min} and up, got ${String(value)} (${typeof value})`,
    );
  }
  return value;
}

/**
 * Claiming a candidate: an atomic rename into `<storageDir>/claimed/`, a re-check of the moved inode, the
 * control sidecar moved along, and a streaming SHA-256. Also the later check that a claimed file did not
 * change (an SFTP server holding the inode open can write on after the move), and the file hash every later
 * look at a taken file compares with the claim's (orphans, continued uploads, approvals).
 */
import { createHash } from 'node:crypto';
import { constants, createReadStream, type Stats } from 'node:fs';
import { type FileHandle, link, lstat, mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Clock } from '../../domain/clock.js';
import { InboxError, errnoCode, isPermissionDenied } from './errors.js';
import { CONTROL_SUFFIX, DONE_SUFFIX, newClaimId, storedName } from './names.js';
import type { ClaimedFile, InboxCandidate } from './types.js';

export interface ClaimOptions {
  /** `<storageDir>/claimed`; must be on the inbox's filesystem. */
  claimedDir: string;
  clock: Clock;
  /** Refuse the claim when no `<name>.done` vouches for the file (see markerVouches). A marker present is consumed either way. */
  requireDoneMarker: boolean;
  /** Told of a `<name>.done` present at the claim but older than the file: ignored (and consumed if the file is taken). */
  onStaleMarker?: (marker: Stats, file: Stats) => void;
  /** Told the stored path just before the rename, so that the caller knows the file in claimed/ as its own. */
  beforeRename?: (storedPath: string) => void;
}

/**
 * Moves a candidate into storage and describes it; null when nothing was claimed (vanished, changed, or its
 * marker gone). A file payoutd may not open is refused before the rename (INBOX_FILE_UNREADABLE): taken, it
 * could be neither read nor put back (a hard link to another user's file is refused, fs.protected_hardlinks).
 */
export async function claimFile(candidate: InboxCandidate, options: ClaimOptions): Promise<ClaimedFile | null> {
  let before: Stats | null;
  try {
    before = await lstatOrNull(candidate.path);
  } catch (error) {
    throw cannotClaim(candidate.name, error);
  }
  // Only a regular file is opened: opening a device can act on it.
  if (before === null || !matches(before, candidate)) return null;
  const handle = await openCandidate(candidate);
  if (handle === null) return null;
  try {
    return await claimOpened(candidate, handle, options);
  } finally {
    await handle.close();
  }
}

/** The claim of a candidate opened as `handle` (the inode judged stable): the marker, the rename, then settleClaim. */
async function claimOpened(candidate: InboxCandidate, handle: FileHandle, options: ClaimOptions): Promise<ClaimedFile | null> {
  let doneMarker: boolean;
  try {
    // The inode about to be renamed, before the rename (which changes its ctime) and after any change the watcher saw.
    const file = await handle.stat();
    if (!matches(file, candidate)) return null;
    const marker = candidate.path + DONE_SUFFIX;
    const markerStat = await lstatOrNull(marker);
    const present = markerStat !== null && !markerStat.isDirectory();
    doneMarker = present && markerVouches(markerStat, file);
    if (present && !doneMarker) options.onStaleMarker?.(markerStat, file);
    if (!doneMarker && (options.requireDoneMarker || candidate.doneMarkerPath !== undefined)) return null;
    // Consumed before the rename: a marker that outlived its file would stand beside the next upload of that name.
    if (present) await unlinkIfPresent(marker);
    await mkdir(options.claimedDir, { recursive: true });
  } catch (error) {
    throw cannotClaim(candidate.name, error);
  }

  const claimId = newClaimId(options.clock.now());
  const storedPath = join(options.claimedDir, storedName(claimId, candidate.name));
  options.beforeRename?.(storedPath);
  try {
    await rename(candidate.path, storedPath);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return null;
    throw moveError(candidate.name, options.claimedDir, error);
  }
  return settleClaim(candidate, claimId, storedPath, doneMarker, handle);
}

/** Opens the candidate's path for reading; null when it is gone. O_NOFOLLOW and O_NONBLOCK: as settleClaim. */
async function openCandidate(candidate: InboxCandidate): Promise<FileHandle | null> {
  try {
    return await open(candidate.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT' || code === 'ELOOP') return null;
    if (isPermissionDenied(error)) {
      throw new InboxError('INBOX_FILE_UNREADABLE', `cannot claim ${candidate.name}: payoutd may not read it (${code})`, {
        cause: error,
      });
    }
    throw cannotClaim(candidate.name, error);
  }
}

function cannotClaim(name: string, error: unknown): InboxError {
  return new InboxError('INBOX_CLAIM_FAILED', `cannot claim ${name}: ${errnoCode(error) ?? 'error'}`, { cause: error });
}

/**
 * The part of a claim after the rename (verify the moved inode, move the sidecar, hash); separate so tests can
 * step between. `opened`: the candidate opened before the rename (left open); without it the stored path is opened.
 */
export async function settleClaim(
  candidate: InboxCandidate,
  claimId: string,
  storedPath: string,
  doneMarker = false,
  opened?: FileHandle,
): Promise<ClaimedFile | null> {
  let handle: FileHandle;
  if (opened !== undefined) handle = opened;
  else {
    try {
      // O_NOFOLLOW and O_NONBLOCK: whatever raced into the name, never follow a link nor block on a FIFO.
      handle = await open(storedPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (error) {
      return putBackOrThrow(candidate, storedPath, errnoCode(error) ?? 'open failed');
    }
  }
  try {
    const st = await handle.stat();
    if (!matches(st, candidate)) return await putBackOrThrow(candidate, storedPath, `now ${st.size} bytes`);
    // Opened before the rename: the name may have been replaced in between, and the rename took the newcomer.
    if (opened !== undefined && (await lstatOrNull(storedPath))?.ino !== st.ino) {
      return await putBackOrThrow(candidate, storedPath, 'replaced under its name');
    }
    const controlPath = await moveControl(candidate, storedPath);
    const sha256 = await sha256OfFile(handle, candidate.size);
    const claimed: ClaimedFile = {
      claimId,
      originalName: candidate.name,
      storedPath,
      size: candidate.size,
      mtimeMs: candidate.mtimeMs,
      sha256,
      doneMarker,
      seen: { nlink: st.nlink, mode: st.mode },
    };
    if (controlPath !== undefined) claimed.controlPath = controlPath;
    return claimed;
  } catch (error) {
    if (error instanceof InboxError) throw error;
    throw new InboxError(
      'INBOX_CLAIM_FAILED',
      `claimed ${candidate.name} as ${storedPath} but could not read it: ${errnoCode(error) ?? 'error'}`,
      {
        cause: error,
      },
    );
  } finally {
    if (opened === undefined) await handle.close();
  }
}

/** Re-stats a claimed file against its record: a change means its upload went on writing into the moved inode. */
export async function verifyUnchanged(
  claimed: Pick<ClaimedFile, 'storedPath' | 'size' | 'mtimeMs'>,
): Promise<{ changed: boolean; reason?: string }> {
  return takenFileChange(claimed, await lstatOrNull(claimed.storedPath));
}

/** How a claimed file as now seen (`st`, null: gone) differs from its record, in words; pure. */
export function takenFileChange(claimed: Pick<ClaimedFile, 'size' | 'mtimeMs'>, st: Stats | null): { changed: boolean; reason?: string } {
  if (st === null) return { changed: true, reason: 'the claimed file is gone' };
  if (!st.isFile()) return { changed: true, reason: 'the claimed path is no longer a regular file' };
  if (st.size !== claimed.size) {
    return { changed: true, reason: `size changed from ${claimed.size} to ${st.size} bytes after the claim: the upload went on` };
  }
  // Whole milliseconds: the database keeps mtime as an integer.
  if (Math.trunc(st.mtimeMs) !== Math.trunc(claimed.mtimeMs)) {
    return { changed: true, reason: 'modified after the claim (mtime changed): the upload went on' };
  }
  return { changed: false };
}

/**
 * Whether `<name>.done` vouches for the file beside it: it arrived after the file last changed. Status-change
 * times, which no client can set (SFTP `put -p` sets the mtime, to the sender's possibly old time): an upload
 * still being written, or stalled, has a later ctime than a marker left from an earlier upload of that name or
 * sent ahead of the file. A tie counts as after: timestamps are coarse, and a marker written right after a
 * small file often shares its tick.
 */
export function markerVouches(marker: Stats, file: Stats): boolean {
  return marker.ctimeMs >= file.ctimeMs;
}

function matches(st: Stats, candidate: InboxCandidate): boolean {
  return st.isFile() && st.ino === candidate.ino && st.size === candidate.size && st.mtimeMs === candidate.mtimeMs;
}

/**
 * The file changed between the stability check and the rename: its upload is going on. Hard-link it back
 * (a link never replaces a new upload that took the name) and let the watcher restart its window.
 */
async function putBackOrThrow(candidate: InboxCandidate, storedPath: string, what: string): Promise<null> {
  try {
    await link(storedPath, candidate.path);
    await unlink(storedPath);
    return null;
  } catch (error) {
    throw new InboxError(
      'INBOX_CLAIM_RACE',
      `${candidate.name} changed while being claimed (${what}) and could not be put back (${errnoCode(error) ?? 'error'}); it is at ${storedPath}`,
      { cause: error },
    );
  }
}

/** Moves `<name>.ctl` to `<storedPath>.ctl` when it is a regular file. */
async function moveControl(candidate: InboxCandidate, storedPath: string): Promise<string | undefined> {
  const source = candidate.path + CONTROL_SUFFIX;
  const st = await lstatOrNull(source);
  if (st === null || !st.isFile()) return undefined;
  const target = storedPath + CONTROL_SUFFIX;
  try {
    await rename(source, target);
    return target;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw new InboxError(
      'INBOX_CLAIM_FAILED',
      `claimed ${candidate.name} as ${storedPath} but could not move its control file ${basename(source)}: ${errnoCode(error) ?? 'error'}`,
      { cause: error },
    );
  }
}

/**
 * SHA-256 of a file, streamed (files can be large): of its first `size` bytes when given. Through an open handle
 * (left open) it is the inode opened that is hashed, whatever has taken its name since.
 */
export async function sha256OfFile(file: string | FileHandle, size?: number): Promise<string> {
  const hash = createHash('sha256');
  if (size !== 0) {
    const range = { start: 0, end: size === undefined ? Infinity : size - 1 };
    const bytes = typeof file === 'string' ? createReadStream(file, range) : file.createReadStream({ ...range, autoClose: false });
    for await (const chunk of bytes) hash.update(chunk as Uint8Array);
  }
  return hash.digest('hex');
}

function moveError(name: string, claimedDir: string, error: unknown): InboxError {
  const code = errnoCode(error);
  if (code === 'EXDEV') {
    return new InboxError(
      'INBOX_CROSS_DEVICE',
      `cannot claim ${name}: ${claimedDir} is on another filesystem than the inbox; a rename cannot be atomic`,
      {
        cause: error,
      },
    );
  }
  return new InboxError('INBOX_CLAIM_FAILED', `cannot move ${name} into ${claimedDir}: ${code ?? 'error'}`, { cause: error });
}

export async function lstatOrNull(path: string): Promise<Stats | null> {
  try {
    return await lstat(path);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return null;
    throw error;
  }
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}

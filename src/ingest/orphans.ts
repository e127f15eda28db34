/**
 * Claimed files with no batch record: the daemon stopped between the rename into claimed/ and the record (or,
 * over NFSv3, a rename answered as failed went through). Each is described as a claim would describe it, for the
 * caller to receive. One that cannot be examined never stops the search: a start that failed on it would fail
 * again at every restart, and nothing would be paid. An entry that is not a regular file (a claim only ever
 * renames one there) is never read through: it is set aside and answered, as the inbox does with one.
 */
import { constants } from 'node:fs';
import { lstat, open, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { type Database, recordedStoredPaths } from '../store/index.js';
import { describeError, errnoCode, isPermissionDenied } from './inbox/errors.js';
import { entryKind, processUser, rejectionReason, unreadableReason, type EntryKind } from './inbox/kinds.js';
import { moveAside, parseStoredName, sha256OfFile, type ClaimedFile, type RejectedEntry } from './inbox/index.js';

export interface OrphanSearch {
  /** With several instances, a claim younger than this may be another's between rename and record (ctime = the rename). */
  minAgeMs?: number;
  /** A stored path this process holds (being claimed or received, or to be received again): not an orphan. */
  held?: (storedPath: string) => boolean;
  /** A stored path left in claimed/ after an error (logged): the caller decides when to look at it again. */
  onLeft?: (storedPath: string) => void;
  /** A claimed entry payoutd does not take (not a regular file, or one it may not read), moved aside into the rejected folder: to be answered in the outbox. */
  onUnreadable?: (entry: RejectedEntry, reason: string) => void | Promise<void>;
}

export interface OrphanDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Where a claimed entry payoutd does not take is moved aside, with its reason file. */
  rejectedDir: string;
}

/** A claimed entry not taken: what it is and why, in the words of the inbox's answer. */
interface Refused {
  kind: EntryKind;
  reason: string;
}

export async function findOrphanClaims(deps: OrphanDeps, claimedDir: string, o: OrphanSearch = {}): Promise<ClaimedFile[]> {
  let names: string[];
  try {
    names = await readdir(claimedDir);
  } catch {
    return []; // no claimed/ yet: nothing was ever claimed
  }
  const paths = names
    .filter((name) => !name.endsWith('.ctl') && !name.startsWith('.'))
    .map((name) => join(claimedDir, name))
    .filter((path) => o.held?.(path) !== true);
  // A store error is not an entry's: without its database the daemon cannot run anyway.
  const recorded = await recordedStoredPaths(deps.db, paths);
  let runAs: string | undefined; // asked of the system once per search, when a file may not be read
  const orphans: ClaimedFile[] = [];
  for (const storedPath of paths) {
    if (recorded.has(storedPath)) continue;
    let found: ClaimedFile | Refused | null;
    try {
      found = await describeOrphan(storedPath, basename(storedPath), deps.clock.now() - (o.minAgeMs ?? 0));
    } catch (error) {
      if (!isPermissionDenied(error)) {
        deps.logger.error(
          { storedPath, err: describeError(error) },
          'a claimed file with no batch record cannot be examined: it stays in claimed/ and is looked at again later',
        );
        o.onLeft?.(storedPath);
        continue;
      }
      // Taken before claims opened the file first.
      const st = await lstat(storedPath).catch(() => null);
      found = { kind: 'unreadable', reason: unreadableReason(st, (runAs ??= processUser()), deps.rejectedDir) };
    }
    if (found === null) continue;
    if ('kind' in found) {
      if (!(await setAside(deps, storedPath, found, o.onUnreadable))) o.onLeft?.(storedPath);
      continue;
    }
    deps.logger.warn({ storedPath }, 'found a claimed file with no batch record (stopped mid-claim); receiving it now');
    orphans.push(found);
  }
  return orphans;
}

/**
 * The claimed entry at `storedPath` as its claim would have described it, or why it is not taken; null when gone,
 * a directory (left in place, as in the inbox), or claimed after `claimedBefore`.
 */
async function describeOrphan(storedPath: string, name: string, claimedBefore: number): Promise<ClaimedFile | Refused | null> {
  // Never through a link, even one put in place after this lstat (O_NOFOLLOW): the file it points at is no claim.
  const st = await lstat(storedPath).catch((error: unknown) => {
    if (errnoCode(error) === 'ENOENT') return null;
    throw error;
  });
  if (st === null || st.ctimeMs > claimedBefore) return null;
  const kind = entryKind(st);
  if (kind === 'directory') return null;
  if (kind !== 'file') return { kind, reason: rejectionReason(kind) };
  const handle = await open(storedPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const opened = await handle.stat();
    if (opened.ino !== st.ino) return null; // replaced since the lstat: looked at by a later search
    const parsed = parseStoredName(name);
    const controlPath = `${storedPath}.ctl`;
    const control = await lstat(controlPath).catch(() => null);
    return {
      // The original name is gone with the claim record; the stored (safe) form of it is the best there is.
      claimId: parsed?.claimId ?? name,
      originalName: parsed?.storedAs ?? name,
      storedPath,
      size: opened.size,
      mtimeMs: opened.mtimeMs,
      sha256: await sha256OfFile(handle, opened.size),
      controlPath: control?.isFile() === true ? controlPath : undefined,
      doneMarker: false,
    };
  } finally {
    await handle.close();
  }
}

/** A claimed entry not taken, moved aside with its reason and answered. False: it could not be moved, and is left. */
async function setAside(
  deps: OrphanDeps,
  storedPath: string,
  refused: Refused,
  onUnreadable: OrphanSearch['onUnreadable'],
): Promise<boolean> {
  const { logger, clock, rejectedDir } = deps;
  const name = parseStoredName(basename(storedPath))?.storedAs ?? basename(storedPath);
  let movedTo: string;
  try {
    movedTo = (await moveAside(storedPath, rejectedDir, refused.reason, { originalName: name, clock })).storedPath;
  } catch (moveError) {
    logger.error(
      { storedPath, kind: refused.kind, moveErr: describeError(moveError) },
      refused.kind === 'unreadable'
        ? 'a claimed file with no batch record may not be read by payoutd and cannot be moved aside: it stays in claimed/; make it readable, or move it out'
        : `a claimed entry with no batch record cannot be moved aside: it stays in claimed/, never read (${refused.reason}); move it out`,
    );
    return false;
  }
  logger.error({ storedPath, movedTo }, `a claimed file with no batch record set aside: ${refused.reason}`);
  await onUnreadable?.({ name, path: storedPath, kind: refused.kind, movedTo }, refused.reason);
  return true;
}

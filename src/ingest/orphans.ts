/**
 * Claimed files with no batch record: the daemon stopped between the rename into claimed/ and the record (or,
 * over NFSv3, a rename answered as failed went through). Each is described as a claim would describe it, for the
 * caller to receive. One that cannot be examined never stops the search: a start that failed on it would fail
 * again at every restart, and nothing would be paid.
 */
import { lstat, readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { type Database, recordedStoredPaths } from '../store/index.js';
import { describeError, errnoCode, isPermissionDenied } from './inbox/errors.js';
import { processUser, unreadableReason } from './inbox/kinds.js';
import { moveAside, parseStoredName, sha256OfFile, type ClaimedFile, type RejectedEntry } from './inbox/index.js';

export interface OrphanSearch {
  /** With several instances, a claim younger than this may be another's between rename and record (ctime = the rename). */
  minAgeMs?: number;
  /** A stored path this process holds (being claimed or received, or to be received again): not an orphan. */
  held?: (storedPath: string) => boolean;
  /** A stored path left in claimed/ after an error (logged): the caller decides when to look at it again. */
  onLeft?: (storedPath: string) => void;
  /** A claimed file payoutd may not read, moved aside into the rejected folder: to be answered in the outbox. */
  onUnreadable?: (entry: RejectedEntry, reason: string) => void | Promise<void>;
}

export interface OrphanDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  /** Where a claimed file payoutd may not read is moved aside, with its reason file. */
  rejectedDir: string;
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
  let user: string | undefined; // asked of the system once per search, when a file may not be read
  const runAs = (): string => (user ??= processUser());
  const orphans: ClaimedFile[] = [];
  for (const storedPath of paths) {
    if (recorded.has(storedPath)) continue;
    let orphan: ClaimedFile | null;
    try {
      orphan = await describeOrphan(storedPath, basename(storedPath), deps.clock.now() - (o.minAgeMs ?? 0));
    } catch (error) {
      if (!(await setAside(deps, storedPath, error, runAs, o.onUnreadable))) o.onLeft?.(storedPath);
      continue;
    }
    if (orphan === null) continue;
    deps.logger.warn({ storedPath }, 'found a claimed file with no batch record (stopped mid-claim); receiving it now');
    orphans.push(orphan);
  }
  return orphans;
}

/** The claimed file at `storedPath` as its claim would have described it; null when gone, not a file, or claimed after `claimedBefore`. */
async function describeOrphan(storedPath: string, name: string, claimedBefore: number): Promise<ClaimedFile | null> {
  const st = await stat(storedPath).catch((error: unknown) => {
    if (errnoCode(error) === 'ENOENT') return null;
    throw error;
  });
  if (st === null || !st.isFile() || st.ctimeMs > claimedBefore) return null;
  const parsed = parseStoredName(name);
  const controlPath = `${storedPath}.ctl`;
  const hasControl = await stat(controlPath).then(
    () => true,
    () => false,
  );
  return {
    // The original name is gone with the claim record; the stored (safe) form of it is the best there is.
    claimId: parsed?.claimId ?? name,
    originalName: parsed?.storedAs ?? name,
    storedPath,
    size: st.size,
    mtimeMs: st.mtimeMs,
    sha256: await sha256OfFile(storedPath),
    controlPath: hasControl ? controlPath : undefined,
    doneMarker: false,
  };
}

/**
 * A claimed file that could not be examined. One payoutd may not read (taken before claims opened the file
 * first) is moved aside and answered; any other error leaves it where it is, for a later search. False: left.
 */
async function setAside(
  deps: OrphanDeps,
  storedPath: string,
  error: unknown,
  runAs: () => string,
  onUnreadable: OrphanSearch['onUnreadable'],
): Promise<boolean> {
  const { logger, clock, rejectedDir } = deps;
  if (!isPermissionDenied(error)) {
    logger.error(
      { storedPath, err: describeError(error) },
      'a claimed file with no batch record cannot be examined: it stays in claimed/ and is looked at again later',
    );
    return false;
  }
  const st = await lstat(storedPath).catch(() => null);
  const name = parseStoredName(basename(storedPath))?.storedAs ?? basename(storedPath);
  const reason = unreadableReason(st, runAs(), rejectedDir);
  let movedTo: string;
  try {
    movedTo = (await moveAside(storedPath, rejectedDir, reason, { originalName: name, clock })).storedPath;
  } catch (moveError) {
    logger.error(
      { storedPath, err: describeError(error), moveErr: describeError(moveError) },
      'a claimed file with no batch record may not be read by payoutd and cannot be moved aside: it stays in claimed/; make it readable, or move it out',
    );
    return false;
  }
  logger.error({ storedPath, movedTo, err: describeError(error) }, `a claimed file with no batch record set aside: ${reason}`);
  await onUnreadable?.({ name, path: storedPath, kind: 'unreadable', movedTo }, reason);
  return true;
}

/**
 * Archive and retention of a state folder and outbox. A finished batch's
 * taken file (and its control file, and the reason file of a refused one)
 * moves to `<stateDir>/archive/YYYY/MM/DD/<batch id>_<name>`, by the day it
 * was received (UTC), once the watch of taken files is done with it
 * (`inbox.watchTakenForMs` after it was taken); the record then names it
 * there.
 *
 * With `retention.days`, what belongs to a batch finished longer ago goes:
 * its archived input, its outbox files (every name starting `<batch id>_`)
 * and its row details (src/store/retention.ts keeps each reference and its
 * payout id). Nothing of an unfinished batch is ever chosen.
 */
import { lstat, mkdir, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { intervalPassed, SteadyClock, type Clock } from '../domain/clock.js';
import { safeError } from '../log/index.js';
import {
  beginPrune,
  type BatchRecord,
  type Database,
  countBatchRows,
  listBatchesToArchive,
  listBatchesToPrune,
  markArchived,
  pruneBatchDetails,
} from '../store/index.js';
import { outboxName } from './outbox.js';

const DAY_MS = 86_400_000;

/** `<stateDir>/archive/YYYY/MM/DD`, the day a batch was received (UTC). */
export function archiveDayDir(stateDir: string, receivedAt: number): string {
  const iso = new Date(receivedAt).toISOString();
  return join(stateDir, 'archive', iso.slice(0, 4), iso.slice(5, 7), iso.slice(8, 10));
}

/** Where a batch's taken file is archived: its day's folder, named `<batch id>_<name>` (as its outbox files). */
export function archivePathOf(stateDir: string, batch: Pick<BatchRecord, 'id' | 'fileName' | 'receivedAt'>): string {
  return join(archiveDayDir(stateDir, batch.receivedAt), outboxName(batch));
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Moves `from` to `to` unless it is there already (a move that stopped before the record was updated). */
async function moveOnce(from: string, to: string): Promise<boolean> {
  if (await exists(from)) {
    await rename(from, to);
    return true;
  }
  return exists(to);
}

export interface RetentionDeps {
  db: Database;
  stateDir: string;
  outboxDir: string;
  /** `inbox.watchTakenForMs`: a taken file is archived only once no longer watched. */
  watchTakenForMs: number;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
}

/** Archives the taken files of finished batches; returns how many batches were archived. */
export async function archiveFinishedBatches(deps: RetentionDeps, now: number): Promise<number> {
  const { db, stateDir, logger } = deps;
  let n = 0;
  for (const batch of await listBatchesToArchive(db, stateDir, now - deps.watchTakenForMs)) {
    const target = archivePathOf(stateDir, batch);
    try {
      await mkdir(join(target, '..'), { recursive: true });
      const moved = await moveOnce(batch.storedPath, target);
      // A refused file's reason travels with it.
      await moveOnce(`${batch.storedPath}.reason.txt`, `${target}.reason.txt`);
      const controlPath = batch.controlPath && (await moveOnce(batch.controlPath, `${target}.ctl`)) ? `${target}.ctl` : batch.controlPath;
      if (!moved)
        logger.warn({ batchId: batch.id, file: batch.fileName }, 'the taken file of a finished batch is gone; nothing to archive');
      const marked = await markArchived(
        db,
        batch.id,
        { from: batch.storedPath, storedPath: moved ? target : batch.storedPath, controlPath },
        now,
      );
      if (marked) n++;
    } catch (err) {
      logger.error({ batchId: batch.id, err: safeError(err) }, 'cannot archive the taken file yet; will try again');
    }
  }
  return n;
}

/** What retention removes of one batch. */
export interface PruneItem {
  batch: BatchRecord;
  /** Its archived input (and control and reason files) and outbox files that exist. */
  files: string[];
  /** Rows whose details are cleared (reference and payout id stay). */
  rows: number;
}

/** What retention would remove now: finished batches finished more than `days` ago, with their files. */
export async function prunePlan(deps: RetentionDeps, days: number, now: number): Promise<PruneItem[]> {
  const { db, outboxDir } = deps;
  const batches = await listBatchesToPrune(db, now - days * DAY_MS);
  if (batches.length === 0) return [];
  let outboxNames: string[] = [];
  try {
    outboxNames = await readdir(outboxDir);
  } catch {
    // No outbox (yet): no outbox file to remove.
  }
  const items: PruneItem[] = [];
  for (const batch of batches) {
    const inputs = [batch.storedPath, `${batch.storedPath}.reason.txt`, batch.controlPath].filter((p): p is string => p !== null);
    const files: string[] = [];
    for (const p of inputs) if (await exists(p)) files.push(p);
    const prefix = `${batch.id}_`;
    files.push(...outboxNames.filter((name) => name.startsWith(prefix)).map((name) => join(outboxDir, name)));
    items.push({ batch, files, rows: await countBatchRows(db, batch.id) });
  }
  return items;
}

/** A batch retention could not prune now; the next prune chooses it again. */
export interface PruneFailure {
  item: PruneItem;
  /** The file that could not be removed, or null when the row details could not be cleared. */
  file: string | null;
  /** How many of its files were removed before it stopped. */
  filesRemoved: number;
  /** How many of its rows had their details cleared before it stopped (each range committed). */
  rowsCleared: number;
  /** Whether its pruning was recorded as begun: readers then note its details as being removed. */
  begun: boolean;
  /** The error's code (`EPERM`, `SQLITE_BUSY`, …), or its name when it has none. */
  code: string;
  /** The error in words, as it may be logged. */
  message: string;
}

export interface PruneOutcome {
  pruned: PruneItem[];
  failed: PruneFailure[];
}

/** Removes a file that may be gone already. unlink, not rm: rm reports a file it may not remove (immutable) as ENOTDIR. */
async function removeFile(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * Removes what the plan names: files first, then the row details (so a failed removal is tried again), after
 * recording that its pruning began.
 */
export async function prune(deps: RetentionDeps, items: readonly PruneItem[], now: number): Promise<PruneOutcome> {
  const { db, logger } = deps;
  const pruned: PruneItem[] = [];
  const failed: PruneFailure[] = [];
  for (const item of items) {
    // What was done of it so far, for a failure to say truly.
    const done = { file: null as string | null, filesRemoved: 0, rowsCleared: 0, begun: false };
    const fail = (code: string, message: string): void => void failed.push({ item, ...done, code, message });
    try {
      // Recorded before anything goes: a prune cut short leaves some gone, and readers must say so.
      done.begun = await beginPrune(db, item.batch.id, now);
      if (!done.begun) {
        fail('ROW_NOT_FINAL', 'a row of it is not final');
        continue;
      }
      for (done.file of item.files) {
        await removeFile(done.file);
        done.filesRemoved++;
      }
      done.file = null;
      if (await pruneBatchDetails(db, item.batch.id, now, (rows) => (done.rowsCleared += rows))) pruned.push(item);
      else fail('ROW_NOT_FINAL', 'a row of it is not final');
    } catch (err) {
      const safe = safeError(err) as { name?: string; code?: unknown; message?: string };
      fail(typeof safe.code === 'string' ? safe.code : (safe.name ?? 'Error'), safe.message ?? String(err));
    }
  }
  for (const f of failed) {
    logger.error(
      {
        batchId: f.item.batch.id,
        file: f.item.batch.fileName,
        path: f.file,
        filesRemoved: f.filesRemoved,
        rowsCleared: f.rowsCleared,
        begun: f.begun,
        err: { code: f.code, message: f.message },
      },
      'cannot prune a finished batch yet; will try again',
    );
  }
  if (pruned.length > 0) {
    // By name: an operator can tell which result files went, and which batches' details.
    const batches = pruned.map((i) => ({ batchId: i.batch.id, file: i.batch.fileName }));
    logger.info({ count: pruned.length, batches }, 'retention: files and row details of old finished batches removed');
  }
  return { pruned, failed };
}

export interface RetentionOptions {
  /** `retention.days`: unset keeps everything forever (taken files are still archived). */
  days?: number;
  /** `retention.pruneEveryMs`: how often the daemon prunes. */
  everyMs: number;
}

/**
 * The finish loop's share of it: archive at each pass, prune on its schedule. Both go by a SteadyClock: a system
 * clock that jumped ahead would make a batch finished seconds ago look old enough to delete.
 */
export class Retention {
  private readonly time: SteadyClock;
  private lastPruneAt: number | undefined;
  private warnedAhead = false;

  /** `monotonic`: milliseconds of a clock that never jumps (performance.now), for tests to move. */
  constructor(
    private readonly deps: RetentionDeps,
    private readonly o: RetentionOptions,
    clock: Clock,
    monotonic?: () => number,
  ) {
    this.time = new SteadyClock(clock, monotonic);
  }

  async pass(): Promise<void> {
    const now = this.steadyNow();
    await archiveFinishedBatches(this.deps, now);
    if (this.o.days === undefined) return;
    if (this.lastPruneAt !== undefined && !intervalPassed(now, this.lastPruneAt, this.o.everyMs)) return;
    this.lastPruneAt = now;
    try {
      await prune(this.deps, await prunePlan(this.deps, this.o.days, now), now);
    } catch (err) {
      this.deps.logger.error({ err: safeError(err) }, 'retention: cannot prune now; will try again');
    }
  }

  /** The steady time; a jump of the system clock ahead of it is told once, and its end too. */
  private steadyNow(): number {
    const now = this.time.now();
    const ahead = this.time.ahead;
    if (ahead && !this.warnedAhead) {
      this.deps.logger.warn(
        { systemClock: new Date(ahead.wall).toISOString(), countedTime: new Date(ahead.counted).toISOString() },
        'retention: the system clock jumped ahead of the time the daemon counts; archiving and pruning wait, ' +
          'going by the counted time, so nothing is deleted by the jumped clock. If the system clock is right ' +
          '(after a suspend or a restored VM), restart the daemon to go by it',
      );
    } else if (!ahead && this.warnedAhead) {
      this.deps.logger.info(
        { systemClock: new Date(now).toISOString() },
        'retention: the system clock is back in line with the counted time',
      );
    }
    this.warnedAhead = ahead !== undefined;
    return now;
  }
}

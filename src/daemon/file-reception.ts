/**
 * FileReception: the taking in of inbox files while the daemon runs. It owns the claim of a ready file (the
 * database decides, the rename carries it out), its intake, and the tries again of what failed: taken files whose
 * batch could not be recorded, claimed files left without a record (orphans), batches left half-read or whose
 * reading failed, refused at last when their reading keeps failing the same way. It answers refused inbox entries,
 * logs the inbox's notices about `.done` markers, and counts each file for payoutd_files_total.
 */
import type { Logger } from 'pino';
import { intervalPassed, type Clock } from '../domain/clock.js';
import type { ResolvedConfig } from '../config/index.js';
import {
  type Database,
  claimBatchLease,
  claimFileInDatabase,
  listBatchesInStates,
  releaseFileClaim,
  findBatchByStoredPath,
  takeReaderLease,
  countReadFailure,
  forgetReadFailures,
  BatchStateError,
  type BatchRecord,
} from '../store/index.js';
import type {
  BatchIntake,
  InboxWatcher,
  FileReadFailure,
  ClaimedFile,
  InboxCandidate,
  MarkerNotice,
  RejectedEntry,
} from '../ingest/index.js';
import { safeError } from '../log/index.js';
import type { BatchOutbox } from './outbox.js';
import { isPassingReadFailure, readFailureKind, ReadRetries } from './read-retries.js';
import { FileCounts, type BatchEvent } from './file-counts.js';

export interface ReceptionDeps {
  config: ResolvedConfig;
  db: Database;
  clock: Clock;
  logger: Logger;
  intake: BatchIntake;
  watcher: InboxWatcher;
  /** Answers refused entries; its stopping() is the daemon's stop, asked here as the finisher asks it. */
  outbox: BatchOutbox;
  onBatchEvent?: (event: BatchEvent) => void;
  /** A batch became ACTIVE: its rows are owed to the submitter now. */
  onActive: () => void;
}

export interface ReceptionOptions {
  instanceId: string;
  /** Several instances share the database (PostgreSQL): work is claimed with leases. */
  shared: boolean;
}

export class FileReception {
  /** Batches whose reading failed in this process: read again from the start on a later finish pass, after a wait. */
  private readonly failedReadings: ReadRetries;
  /** Taken files whose batch could not be recorded (they wait in claimed/), by stored path: received again likewise. */
  private readonly unrecordedClaims = new Map<string, ClaimedFile>();
  private readonly failedClaims: ReadRetries;
  /** Files this process renamed into claimed/ and has not recorded yet, by stored path: never taken for orphans. */
  private readonly claiming = new Set<string>();
  /** Claimed files without a record that could not be examined, looked at again after a wait. */
  private readonly leftOrphans: ReadRetries;
  private orphansSearchedAt = 0;
  /** payoutd_files_total: each file this process takes on, once, then once by the outcome of its intake. */
  private readonly fileCounts: FileCounts;

  constructor(
    private readonly deps: ReceptionDeps,
    private readonly o: ReceptionOptions,
  ) {
    this.failedReadings = new ReadRetries(deps.clock);
    this.failedClaims = new ReadRetries(deps.clock);
    this.leftOrphans = new ReadRetries(deps.clock);
    this.fileCounts = new FileCounts(deps.onBatchEvent);
  }

  /** At start: the claims the last stop left without a record, then the batches it left half-read. */
  async recover(): Promise<void> {
    await this.receiveOrphans();
    if (this.deps.outbox.stopping()) return;
    await this.resumeReading(true);
  }

  /** Each finish pass: intakes that failed here (a store error, a full disk) and readings other instances left. */
  async pass(): Promise<void> {
    await this.receiveUnrecordedClaims();
    await this.receiveLateOrphans();
    await this.resumeReading(false);
  }

  /**
   * Claimed files with no batch record, received as a claim would have been: at start, those the last stop left;
   * shared, only those older than a lease (ctime = the rename: a younger one may still be on its way to its record).
   */
  private async receiveOrphans(): Promise<void> {
    const { config, clock } = this.deps;
    this.orphansSearchedAt = clock.now();
    const orphans = await this.deps.intake.orphanClaims(this.deps.watcher.claimedDir, {
      minAgeMs: this.o.shared ? config.instance.leaseMs : 0,
      held: (path) => this.claiming.has(path) || this.unrecordedClaims.has(path) || !this.leftOrphans.due(path),
      onLeft: (path) => this.leftOrphans.failed(path),
      onUnreadable: (entry, reason) => this.onRejectedEntry(entry, reason),
    });
    for (const orphan of orphans) {
      if (this.deps.outbox.stopping()) return;
      this.leftOrphans.forget(orphan.storedPath);
      await this.takeIn(orphan);
    }
  }

  /**
   * Once per rescan interval: the orphans left since start (a claim whose file changed under it and could not be
   * put back in the inbox, another user's file that link() may not take back; over NFSv3, a rename answered as
   * failed that went through) and, shared, those too young at start (an instance restarted within a lease).
   */
  private async receiveLateOrphans(): Promise<void> {
    const now = this.deps.clock.now();
    if (!intervalPassed(now, this.orphansSearchedAt, this.deps.config.inbox.rescanIntervalMs)) return;
    await this.receiveOrphans();
  }

  /**
   * Batches left half-read: by this process before a crash (at start), by an instance whose lease ran out
   * (shared), or by a reading here that failed (read again once the wait after its failure is over).
   */
  private async resumeReading(atStart: boolean): Promise<void> {
    const { db, logger } = this.deps;
    const unread = await listBatchesInStates(db, ['RECEIVED', 'VALIDATING']);
    this.failedReadings.keepOnly(unread.map((b) => b.id));
    for (const b of unread) {
      if (this.deps.outbox.stopping()) return;
      // Being read by this process now (a file being received): a second reading would clear the rows the first writes.
      if (this.deps.intake.isReading(b.id) || !this.failedReadings.due(b.id)) continue;
      if (!(await this.takeReading(b.id))) continue;
      // Seen once by this process however many of its readings fail; a file claimed here was seen at its claim.
      this.fileCounts.seen(b.storedPath);
      // Its readings failed the same unexpected way often enough already (a refusal that failed, or before a restart).
      if ((b.readFailures ?? 0) >= this.deps.config.batch.readRetry.maxAttempts) {
        await this.refuseUnread(b, b.readFailures ?? 0);
        continue;
      }
      const why = atStart
        ? 'resuming the reading of a batch interrupted by a stop'
        : this.failedReadings.has(b.id)
          ? 'resuming the reading of a batch whose reading failed here: reading it again from the start'
          : 'resuming the reading of a batch its reader left half-read: reading it again from the start';
      logger.info({ batchId: b.id, file: b.fileName }, why);
      let batch: BatchRecord;
      try {
        batch = await this.deps.intake.process(b.id);
      } catch (err) {
        // Stopped mid-read: the batch stays VALIDATING and is read again from the start next time.
        if (this.deps.outbox.stopping()) return;
        await this.readingFailed(b, err);
        continue;
      }
      this.failedReadings.forget(b.id);
      this.fileCounts.ended(b.storedPath, batch.state);
      if (batch.state === 'ACTIVE') this.deps.onActive();
    }
  }

  /**
   * Makes this instance the batch's reader, every write of its reading being fenced by that lease. Shared, only
   * a lease that is free or ran out is taken; alone, the holder can only be an earlier process of this daemon.
   */
  private async takeReading(batchId: string): Promise<boolean> {
    const { db, clock, config } = this.deps;
    const lease = { batchId, instanceId: this.o.instanceId, leaseMs: config.instance.leaseMs };
    if (this.o.shared) return claimBatchLease(db, batchId, lease.instanceId, lease.leaseMs, clock.now(), ['RECEIVED', 'VALIDATING']);
    return takeReaderLease(db, lease, clock.now());
  }

  /**
   * A reading that failed: the batch stays VALIDATING, nothing of it can be sent, and a later pass reads it again;
   * unless reading its file failed batch.readRetry.maxAttempts times in a row the same way, which would never pass.
   */
  private async readingFailed(batch: Pick<BatchRecord, 'id' | 'storedPath'>, err: unknown): Promise<void> {
    const { db, clock, config, logger } = this.deps;
    const batchId = batch.id;
    if (isPassingReadFailure(err)) {
      // "In a row" ends here; best effort, as the database may be what failed. A lost lease is no failure of ours.
      if (!(err instanceof BatchStateError)) await forgetReadFailures(db, batchId, clock.now()).catch(() => undefined);
      const retryInMs = this.failedReadings.failed(batchId);
      logger.error(
        { batchId, err: safeError(err), retryInMs },
        'the reading of a batch failed: it stays VALIDATING, none of its rows can be sent, and it is read again from the start after a wait',
      );
      return;
    }
    // Only its name and code: the message of an error nobody foresaw may quote the file's cells.
    const error = readFailureKind(err as FileReadFailure);
    const attempts = await countReadFailure(db, batchId, error, clock.now()).catch(() => 0);
    const { maxAttempts } = config.batch.readRetry;
    if (attempts >= maxAttempts) {
      logger.error(
        { batchId, error, attempts },
        'the reading of a batch failed the same unexpected way each time: it is refused (READ_FAILED)',
      );
      await this.refuseUnread(batch, attempts);
      return;
    }
    const retryInMs = this.failedReadings.failed(batchId);
    logger.error(
      { batchId, error, attempts, maxAttempts, retryInMs },
      'the reading of a batch failed on an unexpected error: it stays VALIDATING, none of its rows can be sent, and it is read again from the start after a wait',
    );
  }

  /** Refuses a batch that cannot be read (READ_FAILED); one that cannot be refused now is refused on a later pass. */
  private async refuseUnread(batch: Pick<BatchRecord, 'id' | 'storedPath'>, attempts: number): Promise<void> {
    const batchId = batch.id;
    try {
      await this.deps.intake.refuseUnread(batchId, attempts);
      this.failedReadings.forget(batchId);
      this.fileCounts.ended(batch.storedPath, 'REJECTED');
    } catch (err) {
      if (this.deps.outbox.stopping()) return;
      const retryInMs = this.failedReadings.failed(batchId);
      this.deps.logger.error(
        { batchId, err: safeError(err), retryInMs },
        'a batch that cannot be read could not be refused now: it stays VALIDATING, none of its rows can be sent, and it is refused after a wait',
      );
    }
  }

  async onCandidate(c: InboxCandidate): Promise<void> {
    if (this.deps.outbox.stopping()) return;
    // The database decides which instance takes a file; the rename only carries it out.
    const fileKey = `${c.name}|${c.size}|${Math.trunc(c.mtimeMs)}|${c.ino}`;
    if (!(await claimFileInDatabase(this.deps.db, fileKey, this.o.instanceId, this.deps.clock.now()))) return;
    // Held from just before the rename until recorded (or kept to be received again): never an orphan meanwhile.
    let renamed: string | undefined;
    const hold = (storedPath: string): void => {
      renamed = storedPath;
      this.claiming.add(storedPath);
    };
    try {
      let claimed: ClaimedFile | null;
      try {
        claimed = await this.deps.watcher.claim(c, hold);
      } catch (err) {
        // A claim that failed (a refused rename, a full disk) must not hide the file until a restart: release it too.
        await releaseFileClaim(this.deps.db, fileKey);
        throw err;
      }
      if (!claimed) {
        // Not taken after all (changed or gone): let the next stable sighting be claimed again.
        await releaseFileClaim(this.deps.db, fileKey);
        return;
      }
      await this.takeIn(claimed);
    } finally {
      if (renamed !== undefined) this.claiming.delete(renamed);
    }
  }

  /** The intake of a taken file. A failure is logged and left to a later finish pass, never to the next restart. */
  private async takeIn(claimed: ClaimedFile): Promise<void> {
    // Once per file: taken again after its batch could not be recorded, it was seen already.
    this.fileCounts.seen(claimed.storedPath);
    let batch: BatchRecord;
    try {
      batch = await this.deps.intake.receive(claimed);
    } catch (err) {
      // Stopped mid-read: the next start reads the batch again (or receives the file again from claimed/).
      if (this.deps.outbox.stopping()) return;
      await this.receiveFailed(claimed, err);
      return;
    }
    this.unrecordedClaims.delete(claimed.storedPath);
    this.failedClaims.forget(claimed.storedPath);
    this.fileCounts.ended(claimed.storedPath, batch.state);
    if (batch.state === 'ACTIVE') this.deps.onActive();
  }

  /** What is tried again depends on whether the batch was recorded: its reading, or the whole intake of the file. */
  private async receiveFailed(claimed: ClaimedFile, err: unknown): Promise<void> {
    // A lookup that fails too counts as not recorded: the retry looks again before it receives the file.
    const batch = await findBatchByStoredPath(this.deps.db, claimed.storedPath).catch(() => undefined);
    if (batch) {
      await this.readingFailed(batch, err);
      return;
    }
    this.unrecordedClaims.set(claimed.storedPath, claimed);
    const retryInMs = this.failedClaims.failed(claimed.storedPath);
    this.deps.logger.error(
      { file: claimed.originalName, storedPath: claimed.storedPath, err: safeError(err), retryInMs },
      'a file taken from the inbox could not be recorded as a batch: it waits in claimed/, nothing of it is paid, and it is received again after a wait',
    );
  }

  /** Taken files whose batch could not be recorded, received again once the wait after their failure is over. */
  private async receiveUnrecordedClaims(): Promise<void> {
    for (const claimed of [...this.unrecordedClaims.values()]) {
      if (this.deps.outbox.stopping()) return;
      if (!this.failedClaims.due(claimed.storedPath)) continue;
      if (await findBatchByStoredPath(this.deps.db, claimed.storedPath)) {
        // Recorded after all (the failure came later): its reading is resumed with the other half-read batches.
        this.unrecordedClaims.delete(claimed.storedPath);
        this.failedClaims.forget(claimed.storedPath);
        continue;
      }
      this.deps.logger.info(
        { file: claimed.originalName, storedPath: claimed.storedPath },
        'receiving again a taken file whose batch could not be recorded',
      );
      await this.takeIn(claimed);
    }
  }

  /** An inbox entry that is not a file payoutd can read: logged, and answered in the outbox (the sender may not read logs). */
  async onRejectedEntry(entry: RejectedEntry, reason: string): Promise<void> {
    const { logger, clock } = this.deps;
    try {
      // Answered before this start: the sender has the answer; a second one would read as news.
      const answered = await this.deps.outbox.entryAnsweredAt(entry);
      if (answered !== null) {
        logger.info({ name: entry.name, kind: entry.kind, ack: answered }, `inbox entry still refused, answered before: ${reason}`);
        return;
      }
    } catch (err) {
      logger.warn({ name: entry.name, err: safeError(err) }, 'cannot tell whether an inbox entry was answered before; answering it');
    }
    logger.warn({ name: entry.name, kind: entry.kind, movedTo: entry.movedTo }, `inbox entry refused: ${reason}`);
    // Refused whether or not its answer can be written; one answered before is no new file.
    this.fileCounts.ended(entry.path, 'REJECTED');
    try {
      const ack = await this.deps.outbox.writeEntryRefusal(entry, reason, clock.now());
      logger.info({ name: entry.name, ack }, 'refusal of an inbox entry written to the outbox');
    } catch (err) {
      // A stop abandons the write: the entry is answered at the next start (no answer of its version is found).
      if (this.deps.outbox.stopping())
        logger.info({ name: entry.name }, 'stopping: the refusal of an inbox entry is written at the next start');
      else
        logger.error(
          { name: entry.name, movedTo: entry.movedTo, err: safeError(err) },
          'cannot write the refusal of an inbox entry to the outbox',
        );
    }
  }
}

/** What the inbox did about a `.done` marker, in the log: the sender's client may be sending markers too early. */
export function logMarkerNotice(logger: Logger, notice: MarkerNotice): void {
  const marker = `${notice.name}.done`;
  if (notice.kind === 'older-than-file') {
    logger.warn(
      {
        file: notice.name,
        marker,
        markerChangedAt: new Date(notice.markerChangedMs).toISOString(),
        fileChangedAt: new Date(notice.fileChangedMs).toISOString(),
      },
      `inbox: ${marker} is older than the file it names, so it is ignored and the file waits as if it had none: the marker must be uploaded after the file is complete`,
    );
    return;
  }
  logger.info(
    { file: notice.name, marker, aloneForMs: notice.aloneForMs },
    `inbox: ${marker} removed: no file of that name beside it, so it can vouch for none`,
  );
}

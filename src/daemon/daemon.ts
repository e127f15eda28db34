/**
 * PayoutDaemon: `payoutd run`. Wires the inbox watcher to the intake and runs the submitter, the poller and the
 * finisher as work loops. On start it recovers what a previous process left mid-way; on stop it takes no new
 * work, lets calls in flight finish within a grace period, and leaves the rest to be resolved by query.
 */
import { lstat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { intervalPassed, type Clock } from '../domain/clock.js';
import type { PayoutService } from '../domain/payout.js';
import type { ResolvedConfig } from '../config/index.js';
import {
  type Database,
  claimBatchLease,
  claimFileInDatabase,
  listBatchesInStates,
  releaseAllFileClaims,
  releaseFileClaim,
  releaseStaleFileClaims,
  isPostgres,
  markInterruptedCreatesUnknown,
  listFinishedActiveBatches,
  consoleUploaderOf,
  cancelReturnedRows,
  findBatchByStoredPath,
  takeReaderLease,
  countReadFailure,
  forgetReadFailures,
  BatchStateError,
  type BatchRecord,
} from '../store/index.js';
import {
  BatchIntake,
  InboxWatcher,
  type FileReadFailure,
  type ClaimedFile,
  type InboxCandidate,
  type MarkerNotice,
  type RejectedEntry,
} from '../ingest/index.js';
import { PayoutSubmitter } from '../submit/index.js';
import { BalanceGate, BatchHolds } from '../holds/index.js';
import {
  ApprovalFiles,
  approvalAtAcceptance,
  expireDueApprovals,
  othersMayWrite,
  PRIVATE_FILE_HOWTO,
  rulesWithRowLimits,
  SystemUsers,
  type ApprovalDeps,
} from '../approval/index.js';
import { approvalInUse } from '../config/index.js';
import { safeError } from '../log/index.js';
import { SettlementPoller } from '../poll/index.js';
import { NotificationDispatcher, ProgressEvents, type DeliveryOutcomeLabel } from '../notify/index.js';
import { BatchOutbox, outboxName, removeStaleTempFiles } from './outbox.js';
import { BatchFinisher } from './finisher.js';
import { Retention } from './retention.js';
import { PollPass } from './poll-pass.js';
import { WorkLoop } from './work-loop.js';
import { stateFolders } from './state-folders.js';
import { isPassingReadFailure, readFailureKind, ReadRetries } from './read-retries.js';
import type { FaultPoint } from './fault-points.js';
import { FileCounts, type BatchEvent } from './file-counts.js';

export interface DaemonDeps {
  config: ResolvedConfig;
  db: Database;
  service: PayoutService;
  clock: Clock;
  logger: Logger;
  onCreateOutcome?: (outcome: string) => void;
  onBatchEvent?: (event: BatchEvent) => void;
  onPolled?: (payouts: number, lagMs: number) => void;
  onNotification?: (channel: string, outcome: DeliveryOutcomeLabel) => void;
  /** Chaos testing only (PAYOUTD_FAULT_KILL_AT). */
  faultPoint?: FaultPoint;
}

export interface DaemonOptions {
  /** On stop, how long calls in flight may take before they are abandoned. */
  shutdownGraceMs: number;
  /** This process among the instances sharing the database. */
  instanceId: string;
  /** Run the watcher's timers (false in tests that drive it by hand). */
  watch: boolean;
}

export class PayoutDaemon {
  readonly outbox: BatchOutbox;
  readonly intake: BatchIntake;
  readonly holds: BatchHolds;
  private readonly watcher: InboxWatcher;
  private readonly submitter: PayoutSubmitter;
  private readonly poller: SettlementPoller;
  private readonly finisher: BatchFinisher;
  private readonly retention: Retention;
  /** Approval in use (approval.required, or limits): its decisions, and the approval files of paths.approvals. */
  private readonly approval: ApprovalDeps | null;
  private readonly approvalFiles: ApprovalFiles | null;
  private readonly notifications: NotificationDispatcher;
  private readonly progressEvents: ProgressEvents;
  private readonly stopWork = new AbortController();
  private readonly abortCalls = new AbortController();
  private readonly loops: WorkLoop[] = [];
  private submitLoop: WorkLoop | null = null;
  private pollLoop: WorkLoop | null = null;
  private started = false;
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

  /** Several instances share the database (PostgreSQL): work is claimed with leases. */
  private readonly shared: boolean;

  constructor(
    private readonly deps: DaemonDeps,
    private readonly o: DaemonOptions,
  ) {
    const { config, db, clock, logger, service } = deps;
    this.shared = isPostgres(db);
    this.failedReadings = new ReadRetries(clock);
    this.failedClaims = new ReadRetries(clock);
    this.leftOrphans = new ReadRetries(clock);
    this.fileCounts = new FileCounts(deps.onBatchEvent);
    const fault = deps.faultPoint;
    this.outbox = new BatchOutbox(db, config.paths.outbox, config.outbox.bom, fault ? () => fault('mid-result-file') : undefined, {
      xlsx: config.outbox.xlsx,
      retryFiles: config.outbox.retryFiles,
      minorUnits: config.batch.rules.minorUnits,
      timeZone: config.outbox.timeZone,
      onXlsxError: (batchId, kind, err) =>
        logger.error({ batchId, file: kind, err: safeError(err) }, 'the .xlsx beside an outbox CSV was not written (the CSV was)'),
      referenceMaxLength: config.batch.rules.merchantReferenceId.maxLength,
      signal: this.stopWork.signal,
    });
    const balanceCheck = config.batch.balanceCheck;
    this.holds = new BatchHolds(
      {
        db,
        clock,
        logger,
        balance: balanceCheck.enabled
          ? new BalanceGate(db, service, logger, { bufferPercent: balanceCheck.bufferPercent, feePerPayout: balanceCheck.feePerPayout })
          : undefined,
        serviceAvailable: () => service.available?.() !== false,
        signal: this.abortCalls.signal,
      },
      {
        balanceRecheckMs: balanceCheck.recheckMs,
        watchTakenForMs: config.inbox.watchTakenForMs,
        patience: config.inbox,
      },
    );
    const storageDir = config.paths.stateDir;
    const users = new SystemUsers();
    const limitsSet = Object.keys(config.limits.perCurrency).length > 0;
    this.approval =
      approvalInUse(config.approval, config.limits) || limitsSet
        ? {
            db,
            clock,
            logger,
            users,
            policy: { approval: config.approval, limits: config.limits },
            instanceId: o.instanceId,
          }
        : null;
    this.approvalFiles =
      this.approval && approvalInUse(config.approval, config.limits)
        ? new ApprovalFiles(this.approval, {
            dir: config.paths.approvals as string,
            takenDir: stateFolders(storageDir).approvalFiles,
            replyDir: config.paths.outbox,
            stableForMs: config.inbox.stableForMs,
            maxFileBytes: config.approval.maxFileBytes,
            bom: config.outbox.bom,
          })
        : null;
    const approval = this.approval;
    this.intake = new BatchIntake(
      {
        db,
        clock,
        logger,
        effects: {
          writeAck: (b, r) => this.outbox.writeAck(b, r),
          draftAck: (b) => this.outbox.draftAck(b),
          writeFileRejection: (b, r) => this.outbox.writeFileRejection(b, r),
          writeResult: (b) => this.outbox.writeResult(b),
        },
        holds: this.holds,
        approval: approval ? { atAcceptance: (b, ready) => approvalAtAcceptance(approval, b, ready) } : undefined,
        uploaderOf: async (claimed) => {
          const st = await lstat(claimed.storedPath, { bigint: true });
          // A file others could write (a second hard link, group or others' write access) may hold bytes its
          // owner never wrote. Recorded as the owner's, it would stop only the owner from approving, while another
          // user who rewrote it could approve his own bytes; with no uploader every approval of it is refused.
          // As the claim's handle saw it (a link taken away since leaves the bytes read then unproven), and as now.
          const why = (claimed.seen && othersMayWrite(claimed.seen)) ?? othersMayWrite(st);
          if (why !== null) {
            logger.warn(
              { file: claimed.originalName, uid: Number(st.uid) },
              `${claimed.originalName} ${why} when it was taken, so its owner need not be who wrote it: no uploader is ` +
                `recorded, and a batch of it that needs approval cannot be approved. To have it approved, reject it ` +
                `and send the rows again in a new file (the same bytes again are a duplicate) ${PRIVATE_FILE_HOWTO}`,
            );
            return { uid: null, name: null };
          }
          const uid = Number(st.uid);
          // A console upload's owner is payoutd itself: its uploader is the signed-in user recorded with this file's
          // inode, name and bytes. A file another user owns is theirs, whatever the console recorded.
          if (uid === process.getuid?.()) {
            const viaConsole = await consoleUploaderOf(db, {
              fileName: claimed.originalName,
              sha256: claimed.sha256,
              inode: st.ino.toString(),
              receivedAt: clock.now(),
            });
            // None recorded: no person is known to have uploaded it, and payoutd's account stands for none (its
            // approval is refused, src/approval/decide.ts), so a console user cannot approve her own upload.
            return { uid: null, name: viaConsole ?? null };
          }
          return { uid, name: await users.nameOfUid(uid) };
        },
        afterChunkStored: fault ? () => fault('mid-read') : undefined,
      },
      {
        format: config.batch.format,
        rules: rulesWithRowLimits(config.batch.rules, config.limits),
        onInvalidRows: config.batch.onInvalidRows,
        rejectedDir: stateFolders(storageDir).rejected,
        instanceId: o.instanceId,
        leaseMs: config.instance.leaseMs,
        signal: this.stopWork.signal,
      },
    );
    this.watcher = new InboxWatcher({
      inboxDir: config.paths.inbox,
      storageDir,
      stableForMs: config.inbox.stableForMs,
      maxStableForMs: config.inbox.maxStableForMs,
      unterminatedStableForMs: config.inbox.unterminatedStableForMs,
      rescanIntervalMs: config.inbox.rescanIntervalMs,
      requireDoneMarker: config.inbox.requireDoneMarker,
      usePolling: config.inbox.usePolling,
      ignore: config.inbox.ignore,
      clock,
      autoTick: o.watch,
      watchEvents: o.watch,
      onCandidateReady: (c) => this.onCandidate(c),
      onRejected: (entry, reason) => this.onRejectedEntry(entry, reason),
      onIgnored: (entry, reason) =>
        logger.warn({ name: entry.name, kind: entry.kind, unchangedForMs: entry.unchangedForMs }, `inbox entry ignored: ${reason}`),
      onMarkerNotice: (notice) => logMarkerNotice(logger, notice),
      onError: (err) => logger.error({ err: err.toLog() }, 'inbox watcher error'),
    });
    // Live options (src/config/live.ts) are read at each use, so a SIGHUP takes effect at the next pass.
    const { submit, poll } = config;
    this.submitter = new PayoutSubmitter(
      { db, service, clock, logger, holds: this.holds, onCreateOutcome: deps.onCreateOutcome, faultPoint: deps.faultPoint },
      {
        get concurrency() {
          return submit.concurrency;
        },
        retry: submit.retry,
        insufficientBalanceHoldMs: submit.insufficientBalanceHoldMs,
        notFoundGraceMs: submit.notFoundGraceMs,
        get firstPollDelayMs() {
          return poll.firstPollDelayMs;
        },
        reconcileBatchSize: submit.reconcileBatchSize,
        get reconcileEveryMs() {
          return poll.tickMs;
        },
        // Alone on SQLite too: each try of a create renews its row's lease and is sent only while it holds, and a
        // create whose answer could not be recorded is taken over once its lease runs out.
        claimant: { instanceId: o.instanceId, leaseMs: config.instance.leaseMs },
        reconcileLeaseMs: this.shared ? config.instance.leaseMs : 0,
      },
    );
    this.poller = new SettlementPoller(
      { db, service, clock, logger, onPolled: deps.onPolled, sending: () => this.submitter.sending },
      {
        queryMaxIds: config.api.queryMaxIds,
        get concurrency() {
          return poll.concurrency;
        },
        get maxCallsPerPass() {
          return poll.maxCallsPerPass;
        },
        get minIntervalMs() {
          return poll.minIntervalMs;
        },
        get maxIntervalMs() {
          return poll.maxIntervalMs;
        },
        get staleAfterMs() {
          return poll.staleAfterMs;
        },
        get deferWhileSendingMs() {
          return poll.deferWhileSendingMs;
        },
        settlementSweep: poll.settlementSweep,
        // Alone on its database (SQLite) the poller claims by a read and needs no lease; shared, the instances' lease.
        leaseMs: config.instance.leaseMs,
        exclusive: !this.shared,
      },
    );
    this.finisher = new BatchFinisher(
      {
        db,
        clock,
        logger,
        outbox: this.outbox,
        continued: {
          dir: config.paths.outbox,
          bom: config.outbox.bom,
          maxRecordBytes: config.batch.format.maxRecordBytes,
          encoding: config.batch.format.encoding,
        },
        onCompleted: () => deps.onBatchEvent?.('completed'),
        faultPoint: deps.faultPoint,
      },
      { instanceId: o.instanceId, leaseMs: config.instance.leaseMs, shared: this.shared },
    );
    this.retention = new Retention(
      { db, stateDir: config.paths.stateDir, outboxDir: config.paths.outbox, watchTakenForMs: config.inbox.watchTakenForMs, logger },
      { days: config.retention.days, everyMs: config.retention.pruneEveryMs },
      clock,
    );
    this.notifications = new NotificationDispatcher(
      { db, config, clock, logger, outboxName, onDelivery: deps.onNotification },
      { instanceId: o.instanceId, leaseMs: config.instance.leaseMs, alone: !this.shared },
    );
    this.progressEvents = new ProgressEvents({ db, config, clock, logger });
  }

  get claimedDir(): string {
    return this.watcher.claimedDir;
  }

  async start(startAbort?: AbortSignal): Promise<void> {
    const { logger } = this.deps;
    // A stop during start-up (a long re-read, say) aborts the reading; the batch is read again next time.
    if (startAbort) {
      if (startAbort.aborted) this.stopWork.abort(startAbort.reason);
      else startAbort.addEventListener('abort', () => this.stopWork.abort(startAbort.reason), { once: true });
    }
    await this.recover();
    if (this.stopWork.signal.aborted) {
      logger.info('stop requested during start-up: not starting the work loops');
      return;
    }
    const signal = this.stopWork.signal;
    this.submitLoop = new WorkLoop({
      name: 'submit',
      logger,
      idleMs: 1000,
      pass: async (s) => {
        await this.holds.reviewDue();
        const sent = await this.submitter.runOnce(s, this.abortCalls.signal);
        // Polls held back while creates were out are owed now, not at the poll loop's next tick.
        if (sent > 0) this.pollLoop?.wake();
        return sent;
      },
    });
    const poll = this.deps.config.poll;
    const finishLoop = new WorkLoop({ name: 'finish', logger, idleMs: 1000, pass: () => this.finishPass() });
    const pollPass = new PollPass({
      poller: this.poller,
      clock: this.deps.clock,
      get tickMs() {
        return poll.tickMs;
      },
      // A settled row may be the last of its batch: write the result file now, not after the finisher's idle wait.
      onSettled: async () => {
        if ((await listFinishedActiveBatches(this.deps.db)).length > 0) finishLoop.wake();
      },
    });
    this.pollLoop = new WorkLoop({
      name: 'poll',
      logger,
      get idleMs() {
        return poll.tickMs;
      },
      pass: (s) => pollPass.run(s),
    });
    // Notifications in a loop of their own: a receiver that is slow or down never holds up a payout.
    const notifyLoop = new WorkLoop({
      name: 'notify',
      logger,
      idleMs: 1000,
      pass: async (s) => (await this.progressEvents.pass()) + (await this.notifications.pass(s)),
    });
    this.loops.push(this.submitLoop, this.pollLoop, finishLoop, notifyLoop);
    // The watcher first: if it cannot start (inbox missing, storage on another filesystem) no loop is left running.
    await this.watcher.start();
    for (const loop of this.loops) loop.start(signal);
    this.started = true;
    logger.info(
      { inbox: this.deps.config.paths.inbox, outbox: this.deps.config.paths.outbox, stateDir: this.deps.config.paths.stateDir },
      'payoutd running',
    );
  }

  /** Start-up recovery is done and the loops run (/readyz). */
  isReady(): boolean {
    return this.started && !this.stopWork.signal.aborted;
  }

  /** A webhook said these payouts changed: query them now. */
  wakePoller(): void {
    this.pollLoop?.wake();
  }

  /** Drives the inbox once (tests and `--once` modes). */
  tickInbox(): Promise<void> {
    return this.watcher.tick();
  }

  async stop(): Promise<void> {
    const { logger } = this.deps;
    logger.info('stopping: no new files or creates; letting calls in flight finish');
    this.stopWork.abort(new Error('stopping'));
    const grace = setTimeout(() => {
      logger.warn('grace period over: abandoning calls in flight (their rows are resolved by query at the next start)');
      this.abortCalls.abort(new Error('grace period over'));
    }, this.o.shutdownGraceMs);
    grace.unref();
    try {
      await this.watcher.stop();
      await Promise.all(this.loops.map((l) => l.stopped()));
    } finally {
      clearTimeout(grace);
    }
    logger.info('stopped cleanly');
  }

  /** What a previous process left mid-way: interrupted creates, unrecorded claims, half-read batches, missing outbox files. */
  private async recover(): Promise<void> {
    const { db, clock, logger, config } = this.deps;
    // One instance (SQLite, locked): every create in flight was ours. Shared: only those whose lease ran out.
    const unknown = await markInterruptedCreatesUnknown(db, clock.now(), !this.shared);
    if (unknown > 0)
      logger.warn({ rows: unknown }, 'creates interrupted by the last stop: each will be resolved by querying its reference');
    await this.receiveOrphans();
    if (this.stopWork.signal.aborted) return;
    await this.resumeReading(true);
    if (this.stopWork.signal.aborted) return;
    if (!this.shared) {
      // Alone: claims of files never renamed (stopped in between) would hide them for ever.
      await releaseAllFileClaims(db);
      await removeStaleTempFiles(config.paths.outbox, logger);
    }
    // At start, alone, nothing else is writing: repair at once.
    try {
      await this.finisher.repairOutbox(this.shared ? 10_000 : 0);
      if (!this.shared) await this.finisher.repairTwins();
    } catch (err) {
      // A stop abandoned a file being written: it is written at the next start.
      if (!this.stopWork.signal.aborted) throw err;
    }
  }

  /** One pass of the finish loop: taken files that changed, then the finisher's work. */
  private async finishPass(): Promise<number> {
    const { db, clock, config } = this.deps;
    // Intakes that failed here (a store error, a full disk) and readings other instances left are tried again.
    await this.receiveUnrecordedClaims();
    await this.receiveLateOrphans();
    await this.resumeReading(false);
    if (this.shared) await releaseStaleFileClaims(db, clock.now() - config.instance.leaseMs);
    await this.finisher.answerTakenFiles(await this.holds.watchTakenFiles());
    if (this.approval) {
      await expireDueApprovals(this.approval);
      // An approval file may have let a batch go: its rows are owed to the submitter now.
      if (this.approvalFiles && (await this.approvalFiles.scan()) > 0) this.submitLoop?.wake();
    }
    // Rows of a cancelled batch whose create never reached the service end as the cancel said, so it can finish.
    const cancelled = await cancelReturnedRows(db, clock.now());
    if (cancelled > 0)
      this.deps.logger.info({ rows: cancelled }, 'rows of cancelled batches back in READY made NOT_SUBMITTED; none was sent');
    const finished = await this.finisher.pass();
    await this.retention.pass();
    return finished;
  }

  /**
   * Claimed files with no batch record, received as a claim would have been: at start, those the last stop left;
   * shared, only those older than a lease (ctime = the rename: a younger one may still be on its way to its record).
   */
  private async receiveOrphans(): Promise<void> {
    const { config, clock } = this.deps;
    this.orphansSearchedAt = clock.now();
    const orphans = await this.intake.orphanClaims(this.watcher.claimedDir, {
      minAgeMs: this.shared ? config.instance.leaseMs : 0,
      held: (path) => this.claiming.has(path) || this.unrecordedClaims.has(path) || !this.leftOrphans.due(path),
      onLeft: (path) => this.leftOrphans.failed(path),
      onUnreadable: (entry, reason) => this.onRejectedEntry(entry, reason),
    });
    for (const orphan of orphans) {
      if (this.stopWork.signal.aborted) return;
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
      if (this.stopWork.signal.aborted) return;
      // Being read by this process now (a file being received): a second reading would clear the rows the first writes.
      if (this.intake.isReading(b.id) || !this.failedReadings.due(b.id)) continue;
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
        batch = await this.intake.process(b.id);
      } catch (err) {
        // Stopped mid-read: the batch stays VALIDATING and is read again from the start next time.
        if (this.stopWork.signal.aborted) return;
        await this.readingFailed(b, err);
        continue;
      }
      this.failedReadings.forget(b.id);
      this.fileCounts.ended(b.storedPath, batch.state);
      if (batch.state === 'ACTIVE') this.submitLoop?.wake();
    }
  }

  /**
   * Makes this instance the batch's reader, every write of its reading being fenced by that lease. Shared, only
   * a lease that is free or ran out is taken; alone, the holder can only be an earlier process of this daemon.
   */
  private async takeReading(batchId: string): Promise<boolean> {
    const { db, clock, config } = this.deps;
    const lease = { batchId, instanceId: this.o.instanceId, leaseMs: config.instance.leaseMs };
    if (this.shared) return claimBatchLease(db, batchId, lease.instanceId, lease.leaseMs, clock.now(), ['RECEIVED', 'VALIDATING']);
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
      await this.intake.refuseUnread(batchId, attempts);
      this.failedReadings.forget(batchId);
      this.fileCounts.ended(batch.storedPath, 'REJECTED');
    } catch (err) {
      if (this.stopWork.signal.aborted) return;
      const retryInMs = this.failedReadings.failed(batchId);
      this.deps.logger.error(
        { batchId, err: safeError(err), retryInMs },
        'a batch that cannot be read could not be refused now: it stays VALIDATING, none of its rows can be sent, and it is refused after a wait',
      );
    }
  }

  private async onCandidate(c: InboxCandidate): Promise<void> {
    if (this.stopWork.signal.aborted) return;
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
        claimed = await this.watcher.claim(c, hold);
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
      batch = await this.intake.receive(claimed);
    } catch (err) {
      // Stopped mid-read: the next start reads the batch again (or receives the file again from claimed/).
      if (this.stopWork.signal.aborted) return;
      await this.receiveFailed(claimed, err);
      return;
    }
    this.unrecordedClaims.delete(claimed.storedPath);
    this.failedClaims.forget(claimed.storedPath);
    this.fileCounts.ended(claimed.storedPath, batch.state);
    if (batch.state === 'ACTIVE') this.submitLoop?.wake();
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
      if (this.stopWork.signal.aborted) return;
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
  private async onRejectedEntry(entry: RejectedEntry, reason: string): Promise<void> {
    const { logger, clock } = this.deps;
    try {
      // Answered before this start: the sender has the answer; a second one would read as news.
      const answered = await this.outbox.entryAnsweredAt(entry);
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
      const ack = await this.outbox.writeEntryRefusal(entry, reason, clock.now());
      logger.info({ name: entry.name, ack }, 'refusal of an inbox entry written to the outbox');
    } catch (err) {
      // A stop abandons the write: the entry is answered at the next start (no answer of its version is found).
      if (this.outbox.stopping()) logger.info({ name: entry.name }, 'stopping: the refusal of an inbox entry is written at the next start');
      else
        logger.error(
          { name: entry.name, movedTo: entry.movedTo, err: safeError(err) },
          'cannot write the refusal of an inbox entry to the outbox',
        );
    }
  }
}

/** What the inbox did about a `.done` marker, in the log: the sender's client may be sending markers too early. */
function logMarkerNotice(logger: Logger, notice: MarkerNotice): void {
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

/**
 * PayoutDaemon: `payoutd run`. Wires the inbox watcher to the file reception (file-reception.ts) and runs the
 * submitter, the poller and the finisher as work loops. On start it recovers what a previous process left mid-way;
 * on stop it takes no new work, lets calls in flight finish within a grace period, and leaves the rest to be
 * resolved by query.
 */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { PayoutService } from '../domain/payout.js';
import type { ResolvedConfig } from '../config/index.js';
import {
  type Database,
  releaseAllFileClaims,
  releaseStaleFileClaims,
  isPostgres,
  markInterruptedCreatesUnknown,
  listFinishedActiveBatches,
  cancelReturnedRows,
} from '../store/index.js';
import { BatchIntake, InboxWatcher } from '../ingest/index.js';
import { PayoutSubmitter } from '../submit/index.js';
import { BalanceGate, BatchHolds } from '../holds/index.js';
import {
  ApprovalFiles,
  approvalAtAcceptance,
  expireDueApprovals,
  rulesWithRowLimits,
  SystemUsers,
  type ApprovalDeps,
} from '../approval/index.js';
import { approvalInUse } from '../config/index.js';
import { safeError } from '../log/index.js';
import { SettlementPoller } from '../poll/index.js';
import { NotificationDispatcher, ProgressEvents, type DeliveryOutcomeLabel } from '../notify/index.js';
import { retryFileName } from '../report/index.js';
import { BatchOutbox, outboxName, removeStaleTempFiles } from './outbox.js';
import { BatchFinisher } from './finisher.js';
import { Retention } from './retention.js';
import { PollPass } from './poll-pass.js';
import { NotifyLanes } from './notify-lanes.js';
import { WorkLoop } from './work-loop.js';
import { stateFolders } from './state-folders.js';
import type { FaultPoint } from './fault-points.js';
import type { BatchEvent } from './file-counts.js';
import { FileReception, logMarkerNotice } from './file-reception.js';
import { uploaderLookup } from './uploader.js';

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
  /** The taking in of the watcher's files, and the tries again of those whose intake failed. */
  private readonly reception: FileReception;
  private readonly submitter: PayoutSubmitter;
  private readonly poller: SettlementPoller;
  private readonly finisher: BatchFinisher;
  private readonly retention: Retention;
  /** Approval in use (approval.required, or limits): its decisions, and the approval files of paths.approvals. */
  private readonly approval: ApprovalDeps | null;
  private readonly approvalFiles: ApprovalFiles | null;
  private readonly notifications: NotificationDispatcher;
  /** A work loop per notification channel, each delivering on its own. */
  private readonly notifyLanes: NotifyLanes;
  private readonly progressEvents: ProgressEvents;
  private readonly stopWork = new AbortController();
  private readonly abortCalls = new AbortController();
  private readonly loops: WorkLoop[] = [];
  private submitLoop: WorkLoop | null = null;
  private pollLoop: WorkLoop | null = null;
  private started = false;

  /** Several instances share the database (PostgreSQL): work is claimed with leases. */
  private readonly shared: boolean;

  constructor(
    private readonly deps: DaemonDeps,
    private readonly o: DaemonOptions,
  ) {
    const { config, db, clock, logger, service } = deps;
    this.shared = isPostgres(db);
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
        uploaderOf: uploaderLookup(db, clock, logger, users),
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
        retryFileOf: config.outbox.retryFiles ? (b) => retryFileName(outboxName(b), 0) : undefined,
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
      onCandidateReady: (c) => this.reception.onCandidate(c),
      onRejected: (entry, reason) => this.reception.onRejectedEntry(entry, reason),
      onIgnored: (entry, reason) =>
        logger.warn({ name: entry.name, kind: entry.kind, unchangedForMs: entry.unchangedForMs }, `inbox entry ignored: ${reason}`),
      onMarkerNotice: (notice) => logMarkerNotice(logger, notice),
      onError: (err) => logger.error({ err: err.toLog() }, 'inbox watcher error'),
    });
    this.reception = new FileReception(
      { ...deps, intake: this.intake, watcher: this.watcher, outbox: this.outbox, onActive: () => this.submitLoop?.wake() },
      { instanceId: o.instanceId, shared: this.shared },
    );
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
    this.notifyLanes = new NotifyLanes(this.notifications, logger, 1000);
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
    // Notifications in loops of their own, one per channel: a receiver that is slow or down never holds up a payout,
    // nor another channel. This one records progress events, follows SIGHUP and makes each channel's delivery records
    // of the events stored since its last pass; the lanes of the channels are woken when there are new ones.
    const notifyLoop = new WorkLoop({
      name: 'notify',
      logger,
      idleMs: 1000,
      pass: async (s) => {
        const progress = await this.progressEvents.pass();
        const recorded = await this.notifications.prepare();
        this.notifyLanes.sync(s);
        if (recorded > 0) this.notifyLanes.wake();
        return progress + recorded;
      },
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
      await this.notifyLanes.stopped();
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
    await this.reception.recover();
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
    await this.reception.pass();
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
}

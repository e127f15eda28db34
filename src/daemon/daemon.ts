/**
 * PayoutDaemon: `payoutd run`. Wires the inbox watcher to the intake, and
 * runs the submitter, the settlement poller and the batch finisher as work
 * loops. On start it first recovers what a previous process left mid-way
 * (creates in flight become UNKNOWN, half-read batches are read again,
 * claimed files without a record are received). On stop it takes no new
 * work, lets calls in flight finish within a grace period, then abandons the
 * rest safely (their rows are resolved by query at the next start).
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import type { PayoutService } from '../domain/payout.js';
import type { ResolvedConfig } from '../config/index.js';
import {
  type Database,
  claimBatchLease,
  claimFileInDatabase,
  getBatch,
  listBatchesInStates,
  releaseAllFileClaims,
  releaseFileClaim,
  releaseStaleFileClaims,
  updateBatch,
  type BatchRecord,
  isPostgres,
  listBalanceHoldsDue,
  listBatchesMissingFiles,
  markInterruptedCreatesUnknown,
  releaseBatchHold,
  holdBatch,
  listFinishedActiveBatches,
  stateCounts,
} from '../store/index.js';
import { BatchIntake, InboxWatcher, type InboxCandidate, type RejectedEntry } from '../ingest/index.js';
import { PayoutSubmitter } from '../submit/index.js';
import { verifyUnchanged } from '../ingest/inbox/index.js';
import { safeError } from '../log/index.js';
import { removeStaleTempFiles } from './outbox.js';
import { BalanceGate } from '../submit/balance-gate.js';
import { SettlementPoller } from '../poll/index.js';
import { BatchOutbox } from './outbox.js';
import { PayoutdError } from '../domain/errors.js';
import { WorkLoop } from './work-loop.js';
import { sleep } from '../domain/backoff.js';
import type { FaultPoint } from './fault-points.js';

export interface DaemonDeps {
  config: ResolvedConfig;
  db: Database;
  service: PayoutService;
  clock: Clock;
  logger: Logger;
  /** Metrics hooks (optional). */
  onCreateOutcome?: (outcome: string) => void;
  onBatchEvent?: (event: 'seen' | 'accepted' | 'rejected' | 'duplicate' | 'completed') => void;
  onPolled?: (payouts: number, lagMs: number) => void;
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
  private readonly watcher: InboxWatcher;
  private readonly submitter: PayoutSubmitter;
  private readonly poller: SettlementPoller;
  private readonly gate: BalanceGate;
  private readonly stopWork = new AbortController();
  private readonly abortCalls = new AbortController();
  private readonly loops: WorkLoop[] = [];
  private submitLoop: WorkLoop | null = null;
  private pollLoop: WorkLoop | null = null;
  private lastProgressLog = 0;
  /** The poll loop last slept until a payout fell due (see untilNextPoll). */
  private waitedForDue = false;
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
      referenceMaxLength: config.batch.rules.merchantReferenceId.maxLength,
    });
    this.gate = new BalanceGate(db, service, logger, { bufferPercent: config.batch.balanceCheck.bufferPercent });
    const storageDir = config.paths.stateDir;
    this.intake = new BatchIntake(
      {
        db,
        clock,
        logger,
        effects: {
          writeAck: (b, r) => this.outbox.writeAck(b, r),
          writeFileRejection: (b, r) => this.outbox.writeFileRejection(b, r),
          writeResult: (b) => this.outbox.writeResult(b),
          checkBalance: config.batch.balanceCheck.enabled ? (id) => this.gate.check(id, this.abortCalls.signal) : undefined,
          balanceRecheckMs: config.batch.balanceCheck.recheckMs,
        },
        afterChunkStored: fault ? () => fault('mid-read') : undefined,
      },
      {
        format: config.batch.format,
        rules: config.batch.rules,
        onInvalidRows: config.batch.onInvalidRows,
        rejectedDir: join(storageDir, 'rejected'),
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
      onError: (err) => logger.error({ err: err.toLog() }, 'inbox watcher error'),
    });
    // The live options (src/config/live.ts) are read from the configuration at each use: a SIGHUP's new value
    // takes effect at the next pass. The others are copied once.
    const { submit, poll } = config;
    this.submitter = new PayoutSubmitter(
      { db, service, clock, logger, onCreateOutcome: deps.onCreateOutcome, faultPoint: deps.faultPoint },
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
        // Alone on SQLite nobody else could take a row, and a lease would only delay work after a restart.
        claimant: { instanceId: o.instanceId, leaseMs: this.shared ? config.instance.leaseMs : 0 },
        takeOverExpired: this.shared,
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
  }

  get claimedDir(): string {
    return this.watcher.claimedDir;
  }

  async start(startAbort?: AbortSignal): Promise<void> {
    const { db, clock, logger } = this.deps;
    // A stop during start-up (a long re-read, say) aborts the reading; the batch is read again next time.
    if (startAbort) {
      if (startAbort.aborted) this.stopWork.abort(startAbort.reason);
      else startAbort.addEventListener('abort', () => this.stopWork.abort(startAbort.reason), { once: true });
    }
    // One instance (SQLite, locked): every create in flight was ours. Shared: only those whose lease ran out.
    const unknown = await markInterruptedCreatesUnknown(db, clock.now(), !this.shared);
    if (unknown > 0)
      logger.warn({ rows: unknown }, 'creates interrupted by the last stop: each will be resolved by querying its reference');
    await this.intake.recoverOrphanClaims(this.watcher.claimedDir, this.shared ? this.deps.config.instance.leaseMs : 0);
    await this.resumeReading(true);
    if (this.stopWork.signal.aborted) {
      logger.info('stop requested during start-up: not starting the work loops');
      return;
    }
    if (!this.shared) {
      // Alone: claims of files never renamed (stopped in between) would hide them for ever.
      await releaseAllFileClaims(db);
      await removeStaleTempFiles(this.deps.config.paths.outbox, logger);
    }
    // At start, alone, nothing else is writing: repair at once.
    await this.repairOutbox(this.shared ? 10_000 : 0);
    const signal = this.stopWork.signal;
    this.submitLoop = new WorkLoop({
      name: 'submit',
      logger,
      idleMs: 1000,
      pass: async (s) => {
        const sent = (await this.reviewHolds()) + (await this.submitter.runOnce(s, this.abortCalls.signal));
        // Polls held back while creates were out are owed now, not at the poll loop's next tick.
        if (sent > 0) this.pollLoop?.wake();
        return sent;
      },
    });
    const finishLoop = new WorkLoop({ name: 'finish', logger, idleMs: 1000, pass: () => this.finishBatches() });
    const poll = this.deps.config.poll;
    const pollLoop = new WorkLoop({
      name: 'poll',
      logger,
      get idleMs() {
        return poll.tickMs;
      },
      pass: async (s) => {
        const pass = await this.poller.runPass(s);
        // A settled row may be the last of its batch: write the result file now, not after the finisher's idle wait
        // (asked first, cheaply: a finisher's pass per poll call would cost more than the polling).
        if (pass.settled > 0 && (await listFinishedActiveBatches(this.deps.db)).length > 0) finishLoop.wake();
        // A pass that made calls may have stopped at maxCallsPerPass with more due: look again at once.
        if (pass.calls > 0) {
          this.waitedForDue = false;
          return pass.calls;
        }
        return (await this.untilNextPoll(s)) ? 1 : 0;
      },
    });
    this.pollLoop = pollLoop;
    this.loops.push(this.submitLoop, pollLoop, finishLoop);
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

  /**
   * Nothing is due now: when the next payout falls due before the poll loop's next tick, wait for exactly that
   * moment (true) so it is asked when its interval ends, not up to a tick later. False: let the loop idle.
   */
  private async untilNextPoll(signal: AbortSignal): Promise<boolean> {
    // Once per idle spell: if that wait found nothing to ask (taken meanwhile, or a clock that does not move), idle.
    if (this.waitedForDue) {
      this.waitedForDue = false;
      return false;
    }
    const due = await this.poller.nextDueAt();
    const wait = due === null ? Infinity : due - this.deps.clock.now();
    if (!(wait > 0 && wait < this.deps.config.poll.tickMs)) return false;
    // A timer may fire a millisecond before the clock reads the due time; then nothing would be due and the loop
    // would idle a whole tick. The extra 2 ms make the look after the wait find it.
    await sleep(wait + 2, signal).catch(() => undefined);
    this.waitedForDue = true;
    return !signal.aborted;
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

  /** Batches left half-read (by this process before a crash, or by an instance whose lease ran out). */
  private async resumeReading(atStart: boolean): Promise<void> {
    const { db, clock, logger } = this.deps;
    for (const b of await listBatchesInStates(db, ['RECEIVED', 'VALIDATING'])) {
      if (this.stopWork.signal.aborted) return;
      // A batch under our own lease is one this process is reading right now (unless we just started).
      if (!atStart && b.leaseOwner === this.o.instanceId) continue;
      const leaseMs = this.deps.config.instance.leaseMs;
      if (this.shared && !(await claimBatchLease(db, b.id, this.o.instanceId, leaseMs, clock.now(), ['RECEIVED', 'VALIDATING']))) continue;
      logger.info({ batchId: b.id }, 'resuming the reading of a batch interrupted by a stop');
      try {
        await this.intake.process(b.id);
      } catch (err) {
        // Stopped mid-read: the batch stays VALIDATING and is read again from the start next time.
        if (this.stopWork.signal.aborted) return;
        throw err;
      }
    }
  }

  private async onCandidate(c: InboxCandidate): Promise<void> {
    if (this.stopWork.signal.aborted) return;
    // The database decides which instance takes a file; the rename only carries it out.
    const fileKey = `${c.name}|${c.size}|${Math.trunc(c.mtimeMs)}|${c.ino}`;
    if (!(await claimFileInDatabase(this.deps.db, fileKey, this.o.instanceId, this.deps.clock.now()))) return;
    const claimed = await this.watcher.claim(c);
    if (!claimed) {
      // Not taken after all (changed or gone): let the next stable sighting be claimed again.
      await releaseFileClaim(this.deps.db, fileKey);
      return;
    }
    this.deps.onBatchEvent?.('seen');
    const batch = await this.intake.receive(claimed);
    this.deps.onBatchEvent?.(batch.state === 'ACTIVE' ? 'accepted' : batch.state === 'DUPLICATE' ? 'duplicate' : 'rejected');
    if (batch.state === 'ACTIVE') this.submitLoop?.wake();
  }

  /** An inbox entry that is not a file payoutd can read: logged, and answered in the outbox (the sender may not read logs). */
  private async onRejectedEntry(entry: RejectedEntry, reason: string): Promise<void> {
    const { logger, clock } = this.deps;
    logger.warn({ name: entry.name, kind: entry.kind, movedTo: entry.movedTo }, `inbox entry refused: ${reason}`);
    try {
      const ack = await this.outbox.writeEntryRefusal(entry, reason, clock.now());
      logger.info({ name: entry.name, ack }, 'refusal of an inbox entry written to the outbox');
    } catch (err) {
      logger.error(
        { name: entry.name, movedTo: entry.movedTo, err: safeError(err) },
        'cannot write the refusal of an inbox entry to the outbox',
      );
    }
  }

  /** Releases holds whose time has come (re-checking the balance when enabled). */
  private async reviewHolds(): Promise<number> {
    const { db, clock, logger, config } = this.deps;
    // The service unreachable: a balance check could not be made (and the hold would be let go unchecked).
    if (this.deps.service.available?.() === false) return 0;
    const now = clock.now();
    const held = await listBalanceHoldsDue(db, now);
    for (const id of held) {
      const verdict = config.batch.balanceCheck.enabled ? await this.gate.check(id, this.abortCalls.signal) : { ok: true, reason: null };
      if (verdict.ok) {
        await releaseBatchHold(db, id, clock.now());
        logger.info({ batchId: id }, 'balance hold released: resuming the batch');
      } else {
        await holdBatch(
          db,
          id,
          'INSUFFICIENT_BALANCE',
          verdict.reason ?? 'insufficient balance',
          now + config.batch.balanceCheck.recheckMs,
          now,
        );
        logger.error({ batchId: id }, `batch still held: ${verdict.reason}`);
      }
    }
    return 0;
  }

  /** The optional .xlsx and retry files; they never hold a batch open (`payoutd retry-file` / `report --batch` redo them). */
  private async writeExtras(batch: BatchRecord): Promise<void> {
    const { logger } = this.deps;
    try {
      const extra = await this.outbox.writeExtras(batch);
      if (extra.retry?.path) {
        logger.warn(
          { batchId: batch.id, retryFile: extra.retry.path, rows: extra.retry.rowCount, leftOut: extra.retry.skippedCount },
          'batch has CANCELLED rows: retry file written',
        );
      }
    } catch (err) {
      const safe =
        err instanceof PayoutdError
          ? err.toLog()
          : { name: (err as Error)?.name ?? 'Error', message: String((err as Error)?.message ?? err).slice(0, 300) };
      logger.error({ batchId: batch.id, err: safe }, 'optional outbox file not written');
    }
  }

  /** Writes result files of batches whose rows are all final, and logs progress of the others. */
  private async finishBatches(): Promise<number> {
    const { db, clock, logger } = this.deps;
    let n = 0;
    if (this.shared) {
      await this.resumeReading(false);
      await releaseStaleFileClaims(db, clock.now() - this.deps.config.instance.leaseMs);
    }
    await this.holdChangedUploads();
    await this.repairOutbox(5_000);
    for (const id of await listFinishedActiveBatches(db)) {
      // One writer per result file, even with several instances.
      if (this.shared && !(await claimBatchLease(db, id, this.o.instanceId, this.deps.config.instance.leaseMs, clock.now()))) continue;
      const batch = (await getBatch(db, id)) as BatchRecord;
      if (batch.state !== 'ACTIVE') continue;
      const files = await this.outbox.writeResult(batch);
      await this.writeExtras(batch);
      await updateBatch(
        db,
        id,
        { state: 'COMPLETE', resultWrittenAt: clock.now(), completedAt: clock.now(), leaseOwner: null, leaseExpiresAt: null },
        clock.now(),
      );
      this.deps.onBatchEvent?.('completed');
      logger.info(
        { batchId: id, file: batch.fileName, resultFile: files.resultPath, statusCounts: files.summary.statusCounts },
        'batch complete: result file written',
      );
      n++;
    }
    await this.logProgress();
    return n;
  }

  /**
   * An upload can resume after its batch was accepted (the sender's SFTP
   * session still holds the file we moved). Checked on every pass: such a
   * batch is held, loudly, before another row of it is sent.
   */
  private async holdChangedUploads(): Promise<void> {
    const { db, clock, logger } = this.deps;
    for (const b of await listBatchesInStates(db, ['ACTIVE'])) {
      if (b.holdCode === 'FILE_CHANGED') continue;
      const changed = await verifyUnchanged({
        claimId: '',
        originalName: b.fileName,
        storedPath: b.storedPath,
        size: b.size,
        mtimeMs: b.mtimeMs,
        sha256: b.sha256,
      });
      if (!changed.changed) continue;
      const reason = `${changed.reason ?? 'the file changed after it was taken'}; rows already sent are followed to their end, the others wait for an operator (payoutd release / payoutd cancel)`;
      await holdBatch(db, b.id, 'FILE_CHANGED', reason, null, clock.now());
      logger.error({ batchId: b.id, file: b.fileName }, `batch held: ${reason}`);
    }
  }

  /**
   * Writes every acknowledgement or result file that should exist and does
   * not (the outbox was unwritable, or the process stopped while writing).
   * A failure is logged and tried again on the next pass.
   */
  private async repairOutbox(minAgeMs: number): Promise<void> {
    const { db, clock, logger } = this.deps;
    // Batches the intake is busy with are left to it for a while (it writes their files itself).
    const settled = clock.now() - minAgeMs;
    const missing = await listBatchesMissingFiles(db, settled);
    for (const id of missing) {
      const b = (await getBatch(db, id)) as BatchRecord;
      try {
        if (b.ackWrittenAt === null) {
          if (b.state === 'DUPLICATE' || (b.state === 'REJECTED' && b.rowCount === 0))
            await this.outbox.writeFileRejection(b, b.rejectReason ?? 'refused');
          else await this.outbox.writeAck(b, b.state === 'REJECTED' ? (b.rejectReason ?? undefined) : undefined);
          await updateBatch(db, id, { ackWrittenAt: clock.now() }, clock.now());
        }
        if (b.state === 'REJECTED' && b.rowCount > 0 && b.resultWrittenAt === null) {
          await this.outbox.writeResult(b);
          await updateBatch(db, id, { resultWrittenAt: clock.now() }, clock.now());
        }
        logger.info({ batchId: id }, 'outbox file written late (the earlier attempt failed or was interrupted)');
      } catch (err) {
        logger.error({ batchId: id, err: safeError(err) }, 'cannot write an outbox file yet; will try again');
      }
    }
  }

  private async logProgress(): Promise<void> {
    const { db, clock, logger } = this.deps;
    const now = clock.now();
    if (now - this.lastProgressLog < 10_000) return;
    this.lastProgressLog = now;
    for (const b of await listBatchesInStates(db, ['ACTIVE'])) {
      const counts = await stateCounts(db, b.id);
      const total = Object.values(counts).reduce((a, x) => a + (x ?? 0), 0);
      const final =
        (counts.PAID ?? 0) +
        (counts.CANCELLED ?? 0) +
        (counts.REJECTED ?? 0) +
        (counts.INVALID ?? 0) +
        (counts.DUPLICATE ?? 0) +
        (counts.NOT_SUBMITTED ?? 0);
      const created = final + (counts.PENDING ?? 0);
      const elapsedS = Math.max(1, (now - (b.acceptedAt ?? b.receivedAt)) / 1000);
      const rate = created / elapsedS;
      const left = total - created;
      logger.info(
        {
          batchId: b.id,
          total,
          created,
          final,
          counts,
          createsPerSecond: Math.round(rate * 10) / 10,
          etaSeconds: rate > 0 ? Math.round(left / rate) : null,
          hold: b.holdCode,
        },
        'batch progress',
      );
    }
  }
}

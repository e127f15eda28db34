/**
 * BatchFinisher: the end of a batch and the outbox's completeness. A batch whose rows are all final gets its
 * result files and becomes COMPLETE; outbox files that should exist are written late; what the watch of taken
 * files found is answered in the outbox.
 */
import { basename } from 'node:path';
import type { Logger } from 'pino';
import { leftNotSubmitted, shownBatchState, type BatchEventData } from '../domain/batch-events.js';
import { shownOutcome, type Contradiction } from '../domain/service-check.js';
import { columnLetter } from '../ingest/rules/row-error.js';
import { CORRECTION_COLUMN, outcomeStatusOf, type ResultFiles, type RetryFile } from '../report/index.js';
import type { Clock } from '../domain/clock.js';
import { whileRenewing } from '../domain/lease.js';
import type { ContinuedUpload, TakenFileNews } from '../holds/index.js';
import { safeError } from '../log/index.js';
import {
  type BatchRecord,
  type Database,
  batchesToCorrect,
  claimBatchLease,
  completeBatch,
  contradictionsOf,
  getBatch,
  holdBatchLease,
  listBatchesMissingFiles,
  listFinishedActiveBatches,
  recordCorrection,
  recordCorrectionWritten,
  releaseBatchLease,
  updateBatch,
} from '../store/index.js';
import { writeUploadContinued, type ContinuedUploadContext } from './continued-upload.js';
import type { FaultPoint } from './fault-points.js';
import { identityOf, outboxName, type BatchOutbox, type NoteCorrected, type ResultCorrection, type RetryCorrection } from './outbox.js';
import { ProgressLog } from './progress.js';

export interface FinisherDeps {
  db: Database;
  clock: Clock;
  logger: Logger;
  outbox: BatchOutbox;
  /** Where and how the notices of uploads that went on are written. */
  continued: Omit<ContinuedUploadContext, 'db'>;
  onCompleted?: () => void;
  /** Chaos testing: a stop after a correction is recorded, and after its file is written. */
  faultPoint?: FaultPoint;
}

export interface FinisherOptions {
  /** This instance, and its lease on a batch while it writes the batch's files (several instances: `shared`). */
  instanceId: string;
  leaseMs: number;
  /** Several instances share the database: one writer per result file, by lease. */
  shared: boolean;
}

/**
 * What a `completed` event says: how the batch ended as status shows it (CANCELLED, with the cancel's reason, for one
 * an operator's cancel left rows NOT_SUBMITTED in), rows per status, payout and deduction totals per status and currency, the files written.
 */
export function completedEventData(files: ResultFiles, batch: Pick<BatchRecord, 'cancelledAt' | 'cancelReason'>): BatchEventData {
  const totals = (measure: 'payout_amount' | 'deduction_amount'): Record<string, Record<string, string>> => {
    const out: Record<string, Record<string, string>> = {};
    for (const r of files.summary.rows) {
      if (r.measure !== measure || r.status === 'ALL' || r.amount === null) continue;
      (out[r.status] ??= {})[r.currency] = r.amount;
    }
    return out;
  };
  // As cancelShown: a cancel that left no row unsent (every row it could stop was paid) ends a plain COMPLETE.
  const cancelled = batch.cancelledAt != null && leftNotSubmitted(files.summary.statusCounts);
  return {
    shownState: shownBatchState('COMPLETE', null, cancelled),
    ...(cancelled ? { reason: batch.cancelReason ?? 'cancelled by an operator' } : {}),
    rows: files.summary.rowCount,
    counts: { ...files.summary.statusCounts },
    payoutTotals: totals('payout_amount'),
    deductionTotals: totals('deduction_amount'),
    files: [basename(files.resultPath), basename(files.summaryPath)],
  };
}

/** Rows a `corrected` event lists (in line order): a mass reversal stays a notice; its file lists every row. */
export const CORRECTED_ROWS_TOLD = 100;

/** A correction's retry file that could not be written (the corrected result file was): its event says so. */
export const RETRY_FILE_NOT_WRITTEN = 'RETRY_FILE_NOT_WRITTEN';

/**
 * What a `corrected` event says: the correction's number and file, the file it supersedes, and each row it changed
 * (the first CORRECTED_ROWS_TOLD) with its status in the result files, its outcome as the superseded file and as
 * the corrected one tell it (shownOutcome, from `contradictions`: the rows' recorded ones), the other payouts the
 * service holds under its reference, its amounts and note; the letters of its reason and correction columns; the
 * retry file it wrote, when it changed what retry files offer, or RETRY_FILE_NOT_WRITTEN when its write failed.
 */
export function correctedEventData(
  files: ResultCorrection,
  retry: RetryCorrection | typeof RETRY_FILE_NOT_WRITTEN | null,
  contradictions: ReadonlyMap<number, readonly Contradiction[]>,
): BatchEventData {
  const rows = files.changes.slice(0, CORRECTED_ROWS_TOLD).map((c) => {
    const status = outcomeStatusOf(c.state);
    const known = contradictions.get(c.id) ?? [];
    const now = shownOutcome(status, c.note, known);
    return {
      line: c.line,
      merchantReferenceId: c.merchantReferenceId,
      payoutId: c.payoutId,
      status,
      oldOutcome: shownOutcome(status, c.superseded, known).outcome,
      newOutcome: now.outcome,
      otherPayouts: now.otherPayouts.map((o) => ({ ...o })),
      change: c.change,
      payoutAmount: c.payoutAmount,
      payoutCurrency: c.payoutCurrency,
      deductionAmount: c.deductionAmount,
      deductionCurrency: c.deductionCurrency,
      note: c.note,
    };
  });
  const letter = (header: string): string => columnLetter(files.columns.indexOf(header));
  // Earlier retry files stay in the outbox when this one failed: finance is told, not left to find one stale.
  const retryData =
    retry === RETRY_FILE_NOT_WRITTEN
      ? { retryFile: null, retryFileError: RETRY_FILE_NOT_WRITTEN }
      : retry !== null
        ? { retryFile: retry.extras.retry?.path ? basename(retry.extras.retry.path) : null }
        : {};
  return {
    correction: files.correction,
    correctionFile: basename(files.path),
    supersedes: files.previous,
    columns: { reason: letter('reason'), correction: letter(CORRECTION_COLUMN) },
    rowsChanged: files.changes.length,
    rows,
    ...retryData,
  };
}

/** The rows a corrected result file changes, in words for the log (the first few; the log's `rows` has them all). */
function changesText(changes: readonly NoteCorrected[]): string {
  const words = { added: 'note added', changed: 'note changed', withdrawn: 'note withdrawn, the payout service shows it as recorded' };
  const told = changes.slice(0, 5).map((c) => `line ${c.line} ${c.merchantReferenceId}: ${words[c.change]}`);
  return changes.length > told.length ? `${told.join('; ')}; and ${changes.length - told.length} more` : told.join('; ');
}

/** What a correction did to the batch's retry files, in words for the log. */
function retryText(retry: RetryCorrection): string {
  const rows = (cs: readonly NoteCorrected[]): string => cs.map((c) => `line ${c.line} ${c.merchantReferenceId}`).join(', ');
  const moved = [
    ...(retry.putBack.length > 0 ? [`puts back ${rows(retry.putBack)}`] : []),
    ...(retry.leftOut.length > 0 ? [`leaves out ${rows(retry.leftOut)}`] : []),
  ].join(' and ');
  const path = retry.extras.retry?.path;
  const before = retry.removed.filter((f) => f.endsWith('.csv')).map((f) => basename(f));
  const gone = before.length > 0 ? `; ${before.join(', ')} removed from the outbox: do not use a copy taken before` : '';
  return path
    ? `a new retry file ${basename(path)} was written: it ${moved}${gone}`
    : `no retry file is left: this correction ${moved}${gone}`;
}

/** How long the outbox repair leaves a batch to the intake writing its files itself. */
const INTAKE_WRITES_FOR_MS = 5_000;

export class BatchFinisher {
  private readonly progress: ProgressLog;

  constructor(
    private readonly deps: FinisherDeps,
    private readonly o: FinisherOptions,
  ) {
    this.progress = new ProgressLog(deps.db, deps.clock, deps.logger);
  }

  /** One pass of the finish loop: late outbox files, then finished batches, then the progress log. Returns batches finished. */
  async pass(): Promise<number> {
    await this.repairOutbox(INTAKE_WRITES_FOR_MS);
    const finished = await this.finishBatches();
    await this.writeCorrections();
    await this.progress.maybeLog();
    return finished;
  }

  /** The outbox's answer to what the watch of taken files found. */
  async answerTakenFiles(news: TakenFileNews): Promise<void> {
    const { db, clock, logger, outbox } = this.deps;
    for (const held of news.held) {
      const batch = (await getBatch(db, held.id)) as BatchRecord;
      try {
        // The hold marked the ack unwritten: if this write fails, the repair writes it later.
        await outbox.writeAck(batch);
        await updateBatch(db, batch.id, { ackWrittenAt: clock.now() }, clock.now());
      } catch (err) {
        if (outbox.stopping()) throw err;
        logger.error({ batchId: batch.id, err: safeError(err) }, 'cannot write the ack of a held batch yet; will try again');
      }
    }
    for (const continued of news.continued) await this.answerContinued(continued);
  }

  /** The notice and remainder of an upload that went on, recorded in the batch so it is written once per state of the file. */
  private async answerContinued({ batch, size, mtimeMs }: ContinuedUpload): Promise<void> {
    const { db, clock } = this.deps;
    await this.whileLeased(batch.id, async () => {
      await this.writeContinued(batch, size, mtimeMs);
      if (this.o.shared) await releaseBatchLease(db, batch.id, this.o.instanceId, clock.now());
      return true;
    });
  }

  /** Writes the notice and remainder and records them; a failure is logged and tried again at the next pass. */
  private async writeContinued(batch: BatchRecord, size: number, mtimeMs: number): Promise<void> {
    const { db, clock, logger } = this.deps;
    try {
      const files = await writeUploadContinued({ db, ...this.deps.continued }, batch, size, (kind, write) =>
        this.deps.outbox.writeTwin(identityOf(batch), kind, write),
      );
      await updateBatch(
        db,
        batch.id,
        { uploadContinuedAt: clock.now(), uploadContinuedSize: size, uploadContinuedMtimeMs: mtimeMs, uploadContinuedNote: files.note },
        clock.now(),
      );
      logger.warn(
        { batchId: batch.id, file: batch.fileName, state: batch.state, notice: files.noticePath, remainder: files.remainderPath },
        `the upload of a taken file went on: ${files.note}`,
      );
    } catch (err) {
      if (this.deps.outbox.stopping()) throw err;
      logger.error({ batchId: batch.id, err: safeError(err) }, 'cannot write the notice of an upload that went on yet; will try again');
    }
  }

  /** Writes result files of batches whose rows are all final, and marks them COMPLETE. */
  private async finishBatches(): Promise<number> {
    let n = 0;
    for (const id of await listFinishedActiveBatches(this.deps.db)) {
      // A stop takes no next batch; one being written was abandoned (thrown), so it stays ACTIVE and is written at the next start.
      if (this.deps.outbox.stopping()) break;
      // One writer per result file, even with several instances.
      if (await this.whileLeased(id, () => this.finish(id))) n++;
    }
    return n;
  }

  /** One batch's result files, then COMPLETE and its `completed` event, unless another instance took it over meanwhile. */
  private async finish(id: string): Promise<boolean> {
    const { db, clock, logger } = this.deps;
    const batch = (await getBatch(db, id)) as BatchRecord;
    if (batch.state !== 'ACTIVE') return false;
    const files = await this.deps.outbox.writeResult(batch);
    await this.writeExtras(batch);
    const now = clock.now();
    const owner = this.o.shared ? this.o.instanceId : undefined;
    if (
      !(await completeBatch(
        db,
        id,
        { resultWrittenAt: now, completedAt: now },
        now,
        { type: 'completed', data: completedEventData(files, batch) },
        owner,
      ))
    ) {
      // Its files are the same rows written again; the instance that holds it completes and announces it once.
      logger.warn(
        { batchId: id, file: batch.fileName },
        'result files written, but another instance took the batch over meanwhile: it completes it',
      );
      return false;
    }
    this.deps.onCompleted?.();
    logger.info(
      { batchId: id, file: batch.fileName, resultFile: files.resultPath, statusCounts: files.summary.statusCounts },
      'batch complete: result file written',
    );
    return true;
  }

  /**
   * Runs `work` on a batch under this instance's lease (several instances), renewed for as long as the work
   * takes: a large result file may take longer to write than a lease lasts. False when another instance holds it.
   */
  private async whileLeased(id: string, work: () => Promise<boolean>): Promise<boolean> {
    const { db, clock } = this.deps;
    const { shared, instanceId, leaseMs } = this.o;
    if (!shared) return work();
    if (!(await claimBatchLease(db, id, instanceId, leaseMs, clock.now()))) return false;
    // A lease taken over is not taken back (holdBatchLease); completeBatch then refuses.
    return whileRenewing(leaseMs, () => holdBatchLease(db, id, instanceId, leaseMs, clock.now()), work);
  }

  /** The optional .xlsx and retry files; they never hold a batch open (`payoutd retry-file` / `report --batch` redo them). */
  private async writeExtras(batch: BatchRecord): Promise<void> {
    try {
      this.tellRetry(batch, (await this.deps.outbox.writeExtras(batch)).retry);
    } catch (err) {
      // A stop is no failure of the file: the batch stays unfinished, and its files are written at the next start.
      if (this.deps.outbox.stopping()) throw err;
      this.deps.logger.error({ batchId: batch.id, err: safeError(err) }, 'optional outbox file not written');
    }
  }

  /** What became of a batch's retry file; its CANCELLED rows the payout service contradicts are named. */
  private tellRetry(batch: BatchRecord, retry: RetryFile | null): void {
    const { logger } = this.deps;
    if (retry?.path) {
      logger.warn(
        {
          batchId: batch.id,
          retryFile: retry.path,
          rows: retry.rowCount,
          leftOut: retry.skippedCount,
          ...(retry.withheldCount > 0 ? { leftOutForService: retry.withheldCount } : {}),
        },
        'batch has CANCELLED rows: retry file written',
      );
    }
    for (const w of retry?.withheld ?? []) {
      logger.error(
        { batchId: batch.id, line: w.line, merchantReferenceId: w.merchantReferenceId, reason: w.note },
        'a CANCELLED row is left out of the retry file: the payout service says otherwise of it',
      );
    }
  }

  /**
   * COMPLETE batches whose last result file shows a row's service note otherwise than it now is
   * (src/poll/checks.ts): a corrected result file, recorded before it is written (recordCorrection), so a stop
   * between the two writes the same file again rather than other content under its name. A failure is logged and
   * tried again at the next pass.
   */
  private async writeCorrections(): Promise<void> {
    const { db, clock, logger } = this.deps;
    for (const id of await batchesToCorrect(db)) {
      // Recorded and not written: the next start writes it.
      if (this.deps.outbox.stopping()) break;
      await this.whileLeased(id, async () => {
        let batch = await getBatch(db, id);
        if (batch?.state !== 'COMPLETE') return false;
        try {
          const recorded = batch.resultCorrections ?? 0;
          // Recorded before a stop (or a failure) and not yet in the outbox: written from what was recorded.
          if (recorded > (batch.resultCorrectionsWritten ?? 0)) {
            await this.writeRecordedCorrection(batch, recorded);
            batch = (await getBatch(db, id)) as BatchRecord;
          }
          const n = (batch.resultCorrections ?? 0) + 1;
          if (await recordCorrection(db, id, n, clock.now())) {
            this.deps.faultPoint?.('after-correction-intent');
            await this.writeRecordedCorrection(batch, n);
          }
        } catch (err) {
          if (this.deps.outbox.stopping()) throw err;
          logger.error(
            { batchId: id, err: safeError(err) },
            'cannot write the corrected result file of a finished batch yet; will try again',
          );
        }
        if (this.o.shared) await releaseBatchLease(db, id, this.o.instanceId, clock.now());
        return true;
      });
    }
  }

  /**
   * Recorded correction `n`'s files: the corrected result file (a failure is thrown: it is written again at the next
   * pass), then its .xlsx twin and retry file, which are logged when they fail and never hold the correction back.
   */
  private async writeRecordedCorrection(batch: BatchRecord, n: number): Promise<void> {
    const { db, clock, logger, outbox } = this.deps;
    const files = await outbox.writeCorrection(batch, n);
    this.deps.faultPoint?.('after-correction-file');
    try {
      await outbox.writeCorrectionTwin(batch, n);
    } catch (err) {
      if (outbox.stopping()) throw err;
      logger.error({ batchId: batch.id, err: safeError(err) }, 'the .xlsx beside a corrected result file was not written (the CSV was)');
    }
    const retry = await outbox.writeCorrectionRetry(batch, n, files.changes).catch((err: unknown): typeof RETRY_FILE_NOT_WRITTEN => {
      if (outbox.stopping()) throw err;
      logger.error(
        { batchId: batch.id, err: safeError(err) },
        'the retry file of a corrected result file was not written (the corrected result file was): ' +
          'write one with payoutd retry-file before retrying its CANCELLED rows',
      );
      return RETRY_FILE_NOT_WRITTEN;
    });
    const told = files.changes.slice(0, CORRECTED_ROWS_TOLD).map((c) => c.id);
    const data = correctedEventData(files, retry, await contradictionsOf(db, told));
    // Counted once with its event: written again after a stop, or seen by a later pass, it is not announced again.
    await recordCorrectionWritten(db, batch.id, n, clock.now(), data);
    const written = retry === RETRY_FILE_NOT_WRITTEN ? null : retry;
    if (written !== null) this.tellRetry(batch, written.extras.retry);
    logger.warn(
      {
        batchId: batch.id,
        file: batch.fileName,
        resultFile: files.path,
        supersedes: files.previous,
        rows: files.changes.map((c) => ({ line: c.line, merchantReferenceId: c.merchantReferenceId, note: c.change })),
        ...(written !== null ? { retryFile: written.extras.retry?.path ?? null, removed: written.removed } : {}),
      },
      `a finished batch's result file corrected: ${basename(files.path)} supersedes ${files.previous} (${changesText(files.changes)}); ` +
        'its statuses and amounts are unchanged: book it as a correction of that file, not as a new result (payoutd status --batch)' +
        (written !== null ? `; ${retryText(written)}` : ''),
    );
  }
  /** Writes every ack or result file that should exist and does not, except for batches the intake still owns. */
  async repairOutbox(minAgeMs: number): Promise<void> {
    const { db, clock, logger, outbox } = this.deps;
    const missing = await listBatchesMissingFiles(db, { now: clock.now(), minAgeMs });
    for (const id of missing) {
      if (outbox.stopping()) return;
      const b = (await getBatch(db, id)) as BatchRecord;
      const files: string[] = [];
      try {
        if (b.ackWrittenAt === null) {
          if (b.state === 'DUPLICATE' || (b.state === 'REJECTED' && b.rowCount === 0))
            files.push(await outbox.writeFileRejection(b, b.rejectReason ?? 'refused'));
          else files.push(await outbox.writeAck(b, b.state === 'REJECTED' ? (b.rejectReason ?? undefined) : undefined));
          await updateBatch(db, id, { ackWrittenAt: clock.now() }, clock.now());
        }
        if (b.state === 'REJECTED' && b.rowCount > 0 && b.resultWrittenAt === null) {
          const result = await outbox.writeResult(b);
          files.push(result.resultPath, result.summaryPath);
          await updateBatch(db, id, { resultWrittenAt: clock.now() }, clock.now());
        }
        logger.info(
          { batchId: id, files: files.map((f) => basename(f)) },
          `outbox file written late (the earlier attempt failed or was interrupted): ${files.map((f) => basename(f)).join(', ')}`,
        );
      } catch (err) {
        if (outbox.stopping()) throw err;
        logger.error({ batchId: id, err: safeError(err) }, 'cannot write an outbox file yet; will try again');
      }
    }
  }

  /**
   * At start, alone: the .xlsx twin of an ack, result or summary CSV recorded as written and still in the outbox,
   * when a stop or a failed write left it out (the CSV is the record: a twin never held its batch back). Batches
   * whose files retention took, and CSVs of no batch, are left alone.
   */
  async repairTwins(): Promise<void> {
    const { db, logger, outbox } = this.deps;
    for (const [id, missing] of await outbox.twinsMissing()) {
      if (outbox.stopping()) return;
      const b = await getBatch(db, id);
      if (!b || outboxName(b) !== missing.name || b.pruneStartedAt != null || b.prunedAt != null) continue;
      const ack = missing.ack && b.ackWrittenAt !== null;
      const result = missing.result && b.resultWrittenAt !== null && (b.state === 'COMPLETE' || b.state === 'REJECTED');
      if (!ack && !result) continue;
      try {
        const files = (await outbox.writeMissingTwins(b, { ack, result })).map((f) => basename(f));
        logger.info({ batchId: id, files }, `outbox .xlsx written late (the earlier write was interrupted or failed): ${files.join(', ')}`);
      } catch (err) {
        if (outbox.stopping()) throw err;
        logger.error(
          { batchId: id, err: safeError(err) },
          'cannot write the .xlsx beside an outbox CSV yet; will try again at the next start',
        );
      }
    }
  }
}

/**
 * Progress events: for each ACTIVE batch, a `progress` event at most every
 * `notify.progressEvery` — when a further `percent` of its rows is final, or
 * `ms` has passed and some rows moved. Decided from the batch's last
 * progress event as stored, so a restart neither repeats nor skips one, and
 * of several instances deciding at once one records it.
 */
import type { Logger } from 'pino';
import type { ResolvedConfig } from '../config/index.js';
import { estimateEnd, progressOf, progressOfCounts, shownStateOf, type BatchProgress } from '../domain/batch-events.js';
import type { Clock } from '../domain/clock.js';
import { latestBatchEvent, listBatchesInStates, recordBatchEventIfLatest, stateCounts, type Database } from '../store/index.js';

/** How often batches are looked at: progress is counted from the rows, so not on every pass of a loop. */
const LOOK_EVERY_MS = 5_000;

/** Whether a progress event is due: enough moved since the last one, or enough time with some movement. */
export function progressDue(
  now: BatchProgress,
  last: { final: number; percent: number; at: number },
  at: number,
  every: { ms: number; percent: number },
): boolean {
  // No share known (a batch being read or without rows): nothing to report progress of.
  if (now.percent === null || now.final <= last.final || now.final >= now.rows) return false;
  return now.percent - last.percent >= every.percent || at - last.at >= every.ms;
}

export class ProgressEvents {
  private lookedAt = 0;

  constructor(private readonly deps: { db: Database; config: ResolvedConfig; clock: Clock; logger: Logger }) {}

  /** Records the progress events due now; returns how many. */
  async pass(): Promise<number> {
    const { db, clock, config, logger } = this.deps;
    const now = clock.now();
    if (now - this.lookedAt < LOOK_EVERY_MS) return 0;
    this.lookedAt = now;
    let n = 0;
    for (const b of await listBatchesInStates(db, ['ACTIVE'])) {
      const counts = await stateCounts(db, b.id);
      const p = progressOfCounts(counts, b.state);
      const { rows, final } = p;
      const since = b.acceptedAt ?? b.receivedAt;
      const last = await latestBatchEvent(db, b.id, 'progress');
      const lastFinal = typeof last?.data['final'] === 'number' ? last.data['final'] : 0;
      const before = { final: lastFinal, percent: progressOf(rows, lastFinal, b.state).percent ?? 0, at: last?.createdAt ?? since };
      if (!progressDue(p, before, now, config.notify.progressEvery)) continue;
      const { perMinute, etaAt } = estimateEnd(p, since, now);
      const data = {
        rows,
        final,
        percent: p.percent,
        counts: { ...counts },
        rowsPerMinute: perMinute,
        eta: etaAt === null ? null : new Date(etaAt).toISOString(),
        // The word payoutd status shows: a cancelled batch still following its sent rows is not just ACTIVE.
        shownState: shownStateOf(b),
      };
      // Another instance may have decided the same event meanwhile: one of them records it.
      if (!(await recordBatchEventIfLatest(db, { batchId: b.id, type: 'progress', data, at: now }, last?.seq ?? null))) continue;
      logger.info({ batchId: b.id, file: b.fileName, ...data, hold: b.holdCode }, 'batch progress');
      n++;
    }
    return n;
  }
}

/** The debug log's progress line: per ACTIVE batch, at most every PROGRESS_EVERY_MS, rows per state, rate, time left. */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { progressOfCounts } from '../domain/batch-events.js';
import { type Database, listBatchesInStates, stateCounts } from '../store/index.js';

const PROGRESS_EVERY_MS = 10_000;

export class ProgressLog {
  private lastAt = 0;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** Logs the progress of every ACTIVE batch when the last lines are old enough. */
  async maybeLog(): Promise<void> {
    // Counting a batch's rows reads every one of them: not for a line the log level drops.
    if (!this.logger.isLevelEnabled('debug')) return;
    const now = this.clock.now();
    if (now - this.lastAt < PROGRESS_EVERY_MS) return;
    this.lastAt = now;
    for (const b of await listBatchesInStates(this.db, ['ACTIVE'])) {
      const counts = await stateCounts(this.db, b.id);
      const { rows: total, final } = progressOfCounts(counts, b.state);
      const created = final + (counts.PENDING ?? 0);
      const elapsedS = Math.max(1, (now - (b.acceptedAt ?? b.receivedAt)) / 1000);
      const rate = created / elapsedS;
      const left = total - created;
      this.logger.debug(
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

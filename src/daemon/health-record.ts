/**
 * ServiceHealthRecorder: this instance's row of service health, where `payoutd status` reads it: written at each
 * transition, refreshed while running, removed on stop. A failed write is logged and never stops the daemon.
 */
import type { Logger } from 'pino';
import type { ServiceBreaker } from '../api/index.js';
import type { Clock } from '../domain/clock.js';
import { PAYOUT_SERVICE } from '../domain/service-health.js';
import { safeError } from '../log/index.js';
import { forgetServiceHealth, recordServiceHealth, type Database } from '../store/index.js';

export interface HealthRecorderOptions {
  instanceId: string;
  /** Alone on its database (SQLite): rows left by earlier processes are removed at start. */
  alone: boolean;
  /** The row is refreshed this often while the instance runs. */
  refreshMs: number;
}

export class ServiceHealthRecorder {
  /** Writes in the order of the transitions, one at a time. */
  private writes: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopListening: (() => void) | null = null;

  constructor(
    private readonly db: Database,
    private readonly breaker: ServiceBreaker,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly o: HealthRecorderOptions,
  ) {}

  async start(): Promise<void> {
    if (this.o.alone) await forgetServiceHealth(this.db);
    this.stopListening = this.breaker.onChange(() => this.write());
    this.write();
    this.timer = setInterval(() => this.write(), this.o.refreshMs);
    this.timer.unref();
    await this.writes;
  }

  async stop(): Promise<void> {
    this.stopListening?.();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.writes;
    await forgetServiceHealth(this.db, this.o.instanceId).catch((err: unknown) => this.failed(err));
  }

  private write(): void {
    const health = this.breaker.health();
    this.writes = this.writes
      .then(() =>
        recordServiceHealth(this.db, { ...health, instanceId: this.o.instanceId, service: PAYOUT_SERVICE, updatedAt: this.clock.now() }),
      )
      .catch((err: unknown) => this.failed(err));
  }

  private failed(err: unknown): void {
    this.logger.warn({ err: safeError(err) }, 'could not record the payout service health for payoutd status');
  }
}

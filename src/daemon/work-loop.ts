/**
 * WorkLoop: runs one kind of work again and again: sleeps when idle, wakes early when told, backs off after an
 * error, never dies silently, and stops promptly on abort.
 */
import type { Logger } from 'pino';
import { backoffDelay } from '../domain/backoff.js';
import { safeError } from '../log/index.js';

export interface WorkLoopOptions {
  name: string;
  /** One pass; returns how much it did (0 = idle). */
  pass: (signal: AbortSignal) => Promise<number>;
  /** Sleep between passes when idle. */
  idleMs: number;
  logger: Logger;
}

export class WorkLoop {
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private running: Promise<void> | null = null;

  constructor(private readonly o: WorkLoopOptions) {}

  start(signal: AbortSignal): void {
    this.running = this.run(signal);
  }

  /** Run the next pass now instead of after the idle sleep. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Resolves when the loop has stopped (after the signal aborted). */
  async stopped(): Promise<void> {
    this.wake();
    await this.running;
  }

  private async run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    while (!signal.aborted) {
      this.woken = false;
      let did = 0;
      try {
        did = await this.o.pass(signal);
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        this.o.logger.error({ loop: this.o.name, err: safeError(err), failures }, 'work loop pass failed; backing off');
      }
      if (signal.aborted) break;
      if (did > 0 && failures === 0) continue;
      if (this.woken) continue;
      const wait = failures > 0 ? backoffDelay(failures, { baseMs: 500, maxMs: 30_000 }) : this.o.idleMs;
      await this.idle(wait, signal);
    }
  }

  private idle(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }
}

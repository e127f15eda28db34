/**
 * One work loop per notification channel, so each delivers on its own: a receiver that is slow or down holds back
 * no other channel. The set follows the dispatcher's channels: `sync` at each pass of the notify loop starts a loop
 * for a channel a SIGHUP added and stops the loop of one it removed.
 */
import type { Logger } from 'pino';
import type { NotificationDispatcher } from '../notify/index.js';
import { WorkLoop } from './work-loop.js';

interface Lane {
  loop: WorkLoop;
  stop: AbortController;
}

/** The channels to start a loop for and those whose loop ends, from the names configured and those running. */
function laneChanges(configured: readonly string[], running: readonly string[]): { start: string[]; end: string[] } {
  return { start: configured.filter((n) => !running.includes(n)), end: running.filter((n) => !configured.includes(n)) };
}

export class NotifyLanes {
  private readonly lanes = new Map<string, Lane>();
  /** Loops of channels removed, still finishing their delivery in flight. */
  private readonly ending: Promise<void>[] = [];

  constructor(
    private readonly dispatcher: NotificationDispatcher,
    private readonly logger: Logger,
    private readonly idleMs: number,
  ) {}

  /** Starts and stops lanes to match the channels configured now; each lane stops with `signal` too. */
  sync(signal: AbortSignal): void {
    if (signal.aborted) return;
    const { start, end } = laneChanges(this.dispatcher.channelNames(), [...this.lanes.keys()]);
    for (const name of end) {
      const lane = this.lanes.get(name);
      this.lanes.delete(name);
      if (!lane) continue;
      lane.stop.abort(new Error('channel removed'));
      this.ending.push(lane.loop.stopped());
    }
    for (const name of start) {
      const stop = new AbortController();
      const loop = new WorkLoop({
        name: `notify ${name}`,
        logger: this.logger,
        idleMs: this.idleMs,
        pass: (s) => this.dispatcher.lanePass(name, s),
      });
      this.lanes.set(name, { loop, stop });
      loop.start(AbortSignal.any([signal, stop.signal]));
    }
  }

  /** Runs each lane's next pass now: events were stored for them. */
  wake(): void {
    for (const lane of this.lanes.values()) lane.loop.wake();
  }

  /** Resolves when every lane has stopped (after the signal given to sync aborted). */
  async stopped(): Promise<void> {
    await Promise.all([...[...this.lanes.values()].map((l) => l.loop.stopped()), ...this.ending]);
  }
}

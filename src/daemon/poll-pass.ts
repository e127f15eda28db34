/** One pass of the poll loop and its timing: when nothing is due, wait for exactly the next due time if it comes before the tick. */
import type { Clock } from '../domain/clock.js';
import { sleep } from '../domain/backoff.js';
import type { SettlementPoller } from '../poll/index.js';

export interface PollPassDeps {
  poller: SettlementPoller;
  clock: Clock;
  /** The poll loop's idle time (config poll.tickMs). */
  tickMs: number;
  /** Payouts were settled: a batch may be finished now. */
  onSettled: () => Promise<void>;
}

export class PollPass {
  /** The last pass slept until a payout fell due (see untilNextDue). */
  private waitedForDue = false;

  constructor(private readonly deps: PollPassDeps) {}

  /** Returns the work done (calls made, or 1 after a wait for a due payout), 0 to let the loop idle. */
  async run(signal: AbortSignal): Promise<number> {
    const pass = await this.deps.poller.runPass(signal);
    if (pass.settled > 0) await this.deps.onSettled();
    // A pass that made calls may have stopped at maxCallsPerPass with more due: look again at once.
    if (pass.calls > 0) {
      this.waitedForDue = false;
      return pass.calls;
    }
    return (await this.untilNextDue(signal)) ? 1 : 0;
  }

  /** Waits for the next payout to fall due when that comes before the next tick (true); false: let the loop idle. */
  private async untilNextDue(signal: AbortSignal): Promise<boolean> {
    // Once per idle spell: if that wait found nothing to ask (taken meanwhile, or a clock that does not move), idle.
    if (this.waitedForDue) {
      this.waitedForDue = false;
      return false;
    }
    const due = await this.deps.poller.nextDueAt();
    const wait = due === null ? Infinity : due - this.deps.clock.now();
    if (!(wait > 0 && wait < this.deps.tickMs)) return false;
    // A timer may fire a millisecond before the clock reads the due time: 2 ms more make the next look find it.
    await sleep(wait + 2, signal).catch(() => undefined);
    this.waitedForDue = true;
    return !signal.aborted;
  }
}

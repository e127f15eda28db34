/** Timers the sandbox owns, in one place so close() clears all; unref()'d so a retry never keeps a process alive. */

export class TimerSet {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  /** Runs `fn` after `ms`; a no-op once closed. */
  after(ms: number, fn: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  /** Resolves after `ms`, or never once the set is closed (its socket is gone by then). */
  delay(ms: number): Promise<void> {
    return new Promise((resolve) => this.after(ms, resolve));
  }

  get size(): number {
    return this.timers.size;
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}

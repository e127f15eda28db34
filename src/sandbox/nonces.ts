/**
 * Replay protection: the nonces seen within the window. Memory stays
 * bounded because a Map iterates in insertion order, which is (nearly)
 * time order, so expired nonces are pruned from the front, amortised O(1)
 * per insertion; a hard capacity evicts the oldest if a flood outruns the
 * window.
 */

export class NonceStore {
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly capacity = 2_000_000,
  ) {}

  /** True when `key` was recorded within the window before `nowMs`. */
  has(key: string, nowMs: number): boolean {
    const at = this.seen.get(key);
    return at !== undefined && nowMs - at <= this.windowMs;
  }

  record(key: string, nowMs: number): void {
    this.prune(nowMs);
    this.seen.delete(key);
    this.seen.set(key, nowMs);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next();
      if (!oldest.done) this.seen.delete(oldest.value);
    }
  }

  get size(): number {
    return this.seen.size;
  }

  private prune(nowMs: number): void {
    for (const [key, at] of this.seen) {
      if (nowMs - at <= this.windowMs) break;
      this.seen.delete(key);
    }
  }
}

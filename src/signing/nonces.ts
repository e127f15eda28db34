/**
 * Replay protection: the nonces seen within the window, in memory, pruned from the front of an insertion-ordered
 * Map, with a hard capacity. Callers record only verified nonces.
 */

export class NonceWindow {
  private readonly seenAt = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly capacity: number,
  ) {}

  /** True when `nonce` was recorded within the window before `nowMs` (or at a later reading of a clock that stepped back). */
  has(nonce: string, nowMs: number): boolean {
    const at = this.seenAt.get(nonce);
    return at !== undefined && nowMs - at <= this.windowMs;
  }

  record(nonce: string, nowMs: number): void {
    this.prune(nowMs);
    this.seenAt.delete(nonce);
    this.seenAt.set(nonce, nowMs);
    if (this.seenAt.size > this.capacity) {
      const oldest = this.seenAt.keys().next();
      if (!oldest.done) this.seenAt.delete(oldest.value);
    }
  }

  get size(): number {
    return this.seenAt.size;
  }

  private prune(nowMs: number): void {
    for (const [nonce, at] of this.seenAt) {
      if (nowMs - at <= this.windowMs) break;
      this.seenAt.delete(nonce);
    }
  }
}

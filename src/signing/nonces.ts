/**
 * Replay protection of signed messages (the sandbox's API calls, the
 * receiver's webhook deliveries): the nonces seen within the window, in
 * memory. A Map iterates in insertion order, which is (nearly) time order,
 * so expired nonces are pruned from the front at O(1) amortised per
 * insertion; a hard capacity evicts the oldest if a flood outruns the
 * window. Callers record only verified nonces, so an attacker without the
 * key cannot fill it.
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

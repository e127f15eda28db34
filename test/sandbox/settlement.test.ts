import { describe, expect, it } from 'vitest';
import { SettlementQueue, type DueSettlement } from '../../src/sandbox/settlement.js';
import { NonceWindow } from '../../src/signing/nonces.js';
import { seededRandom } from '../../src/sandbox/random.js';

describe('settlement queue', () => {
  it('serves 10^5 pending payouts from one timer, in due order', async () => {
    const random = seededRandom(3);
    const fired: DueSettlement[] = [];
    const n = 100_000;
    let resolveAll: () => void = () => undefined;
    const all = new Promise<void>((resolve) => (resolveAll = resolve));
    // A hand-driven time source: due order is checked, not wall-clock speed.
    let now = 0;
    const queue = new SettlementQueue(
      (due) => {
        fired.push(due);
        if (fired.length === n) resolveAll();
      },
      () => undefined,
      () => now,
    );
    const dueAt = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const delay = random.int(0, 1000);
      dueAt.set(`P${i}`, delay * n + i);
      queue.schedule(`P${i}`, delay, i % 7 === 0 ? 'CANCELLED' : 'PAID');
    }
    expect(queue.size).toBe(n);
    now = 1000;
    await all;
    expect(queue.size).toBe(0);
    const order = fired.map((f) => dueAt.get(f.payoutId) ?? -1);
    expect(order.every((v, i) => i === 0 || v > (order[i - 1] ?? -1))).toBe(true);
    expect(fired.filter((f) => f.outcome === 'CANCELLED')).toHaveLength(Math.ceil(n / 7));
    queue.close();
  });

  it('keeps serving after a callback throws, and stops for good on close', async () => {
    const errors: string[] = [];
    const fired: string[] = [];
    let now = 0;
    const queue = new SettlementQueue(
      (due) => {
        if (due.payoutId === 'bad') throw new Error('boom');
        fired.push(due.payoutId);
      },
      (_err, due) => errors.push(due.payoutId),
      () => now,
    );
    queue.schedule('bad', 0, 'PAID');
    queue.schedule('good', 0, 'PAID');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect([errors, fired]).toEqual([['bad'], ['good']]);
    now = 0;
    queue.schedule('later', 5, 'PAID');
    queue.close();
    now = 100;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(fired).toEqual(['good']);
  });
});

describe('nonce store', () => {
  it('remembers a nonce for the window and prunes older ones', () => {
    const store = new NonceWindow(1000, 3);
    store.record('a', 0);
    expect(store.has('a', 1000)).toBe(true);
    expect(store.has('a', 1001)).toBe(false);
    store.record('b', 500);
    store.record('c', 1500);
    // 'a' is pruned once expired; size never passes the capacity.
    expect(store.size).toBe(2);
    store.record('d', 1600);
    store.record('e', 1700);
    expect(store.size).toBe(3);
    expect(store.has('c', 1700)).toBe(true);
  });
});

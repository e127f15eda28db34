/**
 * Settlement scheduling: a min-heap of payouts due to leave PENDING, served by one timer armed for the earliest,
 * due items handed out in slices so a burst never blocks the event loop. Stale entries are skipped by the callback.
 */
import { performance } from 'node:perf_hooks';

export interface DueSettlement {
  payoutId: string;
  outcome: 'PAID' | 'CANCELLED';
}

interface Item extends DueSettlement {
  due: number;
  seq: number;
}

/** Longest setTimeout delay Node accepts; longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** Settlements handled per timer callback before yielding to I/O. */
const SLICE = 2000;

function before(a: Item, b: Item): boolean {
  return a.due < b.due || (a.due === b.due && a.seq < b.seq);
}

export class SettlementQueue {
  private readonly heap: Item[] = [];
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private closed = false;

  constructor(
    private readonly onDue: (item: DueSettlement) => void,
    private readonly onError: (err: unknown, item: DueSettlement) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  schedule(payoutId: string, delayMs: number, outcome: 'PAID' | 'CANCELLED'): void {
    if (this.closed) return;
    const item: Item = { payoutId, outcome, due: this.now() + delayMs, seq: this.seq++ };
    this.push(item);
    if (item.due < this.armedFor) this.arm();
  }

  get size(): number {
    return this.heap.length;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.heap.length = 0;
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const first = this.heap[0];
    if (!first || this.closed) {
      this.armedFor = Infinity;
      return;
    }
    this.armedFor = first.due;
    const wait = Math.min(Math.max(0, first.due - this.now()), MAX_TIMER_MS);
    this.timer = setTimeout(() => this.fire(), wait);
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Infinity;
    const now = this.now();
    for (let handled = 0; handled < SLICE; handled++) {
      const first = this.heap[0];
      if (!first || first.due > now) break;
      this.pop();
      const due = { payoutId: first.payoutId, outcome: first.outcome };
      try {
        this.onDue(due);
      } catch (err) {
        // One bad settlement must not stop the queue: report it and go on.
        this.onError(err, due);
      }
      if (this.closed) return;
    }
    this.arm();
  }

  private push(item: Item): void {
    const heap = this.heap;
    heap.push(item);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as Item;
      if (!before(item, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = item;
  }

  private pop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && before(heap[right] as Item, heap[left] as Item) ? right : left;
      const c = heap[child] as Item;
      if (!before(c, last)) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = last;
  }
}

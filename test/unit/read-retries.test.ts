/**
 * ReadRetries (src/daemon/read-retries.ts): an intake that keeps failing is tried again after a wait that
 * doubles up to a cap, on the daemon's clock, so a lasting error does not have every finish pass read it.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { readFile } from 'node:fs/promises';
import { isPassingReadFailure, readFailureKind, ReadRetries } from '../../src/daemon/read-retries.js';
import { BatchStateError, DatabaseBusyError, openSqlite } from '../../src/store/index.js';

/** What `work` threw (each a real error of its kind, not one made up to look like it). */
async function thrown(work: () => unknown): Promise<unknown> {
  try {
    await work();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
}

describe('ReadRetries', () => {
  it('lets a key that never failed go at once, and one that failed only once its wait is over', () => {
    const clock = new ManualClock(0);
    const retries = new ReadRetries(clock, { baseMs: 1000, maxMs: 5000 });
    expect(retries.due('B1')).toBe(true);
    expect(retries.failed('B1')).toBe(1000);
    expect([retries.has('B1'), retries.due('B1'), retries.due('B2')]).toEqual([true, false, true]);
    clock.advance(999);
    expect(retries.due('B1')).toBe(false);
    clock.advance(1);
    expect(retries.due('B1')).toBe(true);
  });

  it('doubles the wait with each failure of the same key, up to the cap, and starts again once it went through', () => {
    const clock = new ManualClock(0);
    const retries = new ReadRetries(clock, { baseMs: 1000, maxMs: 5000 });
    expect([1, 2, 3, 4, 5].map(() => retries.failed('B1'))).toEqual([1000, 2000, 4000, 5000, 5000]);
    clock.advance(4999);
    expect(retries.due('B1')).toBe(false);
    retries.forget('B1');
    expect([retries.has('B1'), retries.due('B1'), retries.failed('B1')]).toEqual([false, true, 1000]);
  });

  it('forgets the keys no longer listed', () => {
    const retries = new ReadRetries(new ManualClock(0));
    retries.failed('B1');
    retries.failed('B2');
    retries.keepOnly(['B2', 'B3']);
    expect([retries.has('B1'), retries.has('B2'), retries.has('B3')]).toEqual([false, true, false]);
  });

  it('tells a failure that may pass (the store, the disk, a lost lease) from one that repeats on the same file', async () => {
    const sqlite = openSqlite(':memory:');
    const passing = [
      await thrown(() => sqlite.prepare('select * from no_such_table').all()),
      await thrown(() => readFile('/nonexistent/payoutd/file.csv')),
      new DatabaseBusyError('DATABASE_BUSY', 'locked'),
      new BatchStateError('BATCH_LEASE_LOST', 'taken over'),
    ];
    sqlite.close();
    const repeating = [
      await thrown(() => JSON.parse('{"a": 1,')),
      await thrown(() => (null as unknown as { x: number }).x),
      await thrown(() => Buffer.alloc(-1)),
      'not an error',
    ];
    expect(passing.map(isPassingReadFailure)).toEqual([true, true, true, true]);
    expect(repeating.map(isPassingReadFailure)).toEqual([false, false, false, false]);
    expect(repeating.map(readFailureKind)).toEqual(['SyntaxError', 'TypeError', 'RangeError:ERR_OUT_OF_RANGE', 'string']);
  });
});

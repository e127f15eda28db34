/**
 * ReadRetries (src/daemon/read-retries.ts): an intake that keeps failing is tried again after a wait that
 * doubles up to a cap, on the daemon's clock, so a lasting error does not have every finish pass read it.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { readFile } from 'node:fs/promises';
import { isPassingReadFailure, readFailureKind, ReadRetries } from '../../src/daemon/read-retries.js';
import { FileReadFailure } from '../../src/ingest/index.js';
import { DEFAULT_BATCH_FORMAT, readBatchFileOnThread } from '../../src/ingest/csv/index.js';
import type { ThreadReadOptions } from '../../src/ingest/csv/read-thread.js';
import { DEFAULT_VALIDATION_RULES as rules, type ValidationRules } from '../../src/ingest/rules/index.js';
import { BatchStateError, DatabaseBusyError, openSqlite } from '../../src/store/index.js';
import { HEADER, row, tempCsv } from '../ingest/helpers.js';

/** What `work` threw (each a real error of its kind where one can be had, not one made up to look like it). */
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

  it('lets a key go at once when the clock went back since it failed, not once the clock has caught up', () => {
    const clock = new ManualClock(Date.UTC(2026, 1, 1));
    const retries = new ReadRetries(clock, { baseMs: 1000, maxMs: 5000 });
    retries.failed('B1');
    // The failure was recorded by a clock two days ahead, now corrected.
    clock.advance(-2 * 86_400_000);
    expect(retries.due('B1')).toBe(true);
  });

  it('forgets the keys no longer listed', () => {
    const retries = new ReadRetries(new ManualClock(0));
    retries.failed('B1');
    retries.failed('B2');
    retries.keepOnly(['B2', 'B3']);
    expect([retries.has('B1'), retries.has('B2'), retries.has('B3')]).toEqual([false, true, false]);
  });

  it('counts only the reading of the file failing (not on the file system) as a failure that repeats', async () => {
    const path = await tempCsv(`${HEADER}\n${row('RF-1')}\n`);
    const read = (o: Partial<ThreadReadOptions>): Promise<unknown> =>
      thrown(() =>
        readBatchFileOnThread(path, 'batch.csv', { format: DEFAULT_BATCH_FORMAT, rules, batchId: 'B1', onRows: async () => {}, ...o }),
      );
    // A reader that throws as a bug would (its rules not what it expects), its error as it comes from its thread.
    const fromReader = await read({ rules: {} as ValidationRules });
    // The store failing under the reading with a plain Error, as pg does for a connection dropped mid-query.
    const fromStore = await read({
      onRows: async () => {
        throw new Error('insert into "payouts" ... - Connection terminated unexpectedly');
      },
    });
    const sqlite = openSqlite(':memory:');
    const passing = [
      fromStore,
      await thrown(() => sqlite.prepare('select * from no_such_table').all()),
      await thrown(() => readFile('/nonexistent/payoutd/file.csv')),
      new DatabaseBusyError('DATABASE_BUSY', 'locked'),
      new BatchStateError('BATCH_LEASE_LOST', 'taken over'),
      // What the reading thread's EIO becomes on this side.
      new FileReadFailure('EIO: i/o error, read', 'Error', 'EIO'),
      'not an error',
    ];
    sqlite.close();
    // What the reading thread's end for want of memory becomes (its limits are the reader's own).
    const repeating = [
      fromReader,
      new FileReadFailure('Worker terminated due to reaching memory limit: JS heap out of memory', 'Error', 'ERR_WORKER_OUT_OF_MEMORY'),
    ];
    expect(fromStore).toBeInstanceOf(Error);
    expect(fromStore).not.toBeInstanceOf(FileReadFailure);
    expect(passing.map(isPassingReadFailure)).toEqual(passing.map(() => true));
    expect(repeating.map(isPassingReadFailure)).toEqual([false, false]);
    expect(repeating.map((err) => readFailureKind(err as FileReadFailure))).toEqual(['TypeError', 'Error:ERR_WORKER_OUT_OF_MEMORY']);
  });
});

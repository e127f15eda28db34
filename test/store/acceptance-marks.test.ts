/**
 * The acceptance of a file sent again and of a large file refused, on a real SQLite file
 * (test/store/acceptance-marks.ts), and the thread served between their ranges of rows.
 */
import { describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import {
  checkFileSentAgain,
  checkLargeFileRefused,
  checkLargeFileSentAgain,
  LARGE_REFUSED,
  seedLargeFileSentAgain,
} from './acceptance-marks.js';

/** The statements updating rows of payouts, counted when a timer due at once fires and when `f` ends. */
async function updatesWhenTimerFires(db: Database, f: () => Promise<unknown>): Promise<{ due: number; all: number }> {
  let updates = 0;
  const count = (q: { sql: string }): void => {
    if (/update [`"]?payouts[`"]? set/i.test(q.sql)) updates++;
  };
  db.on('query', count);
  const work = f();
  let due = -1;
  setTimeout(() => (due = updates), 0);
  await work;
  db.off('query', count);
  return { due, all: updates };
}

describe('store: the acceptance of a file sent again', () => {
  const store = useTestDatabase('payoutd-accept-marks-');

  it('marks every row in a number of statements that does not grow with the rows', () => checkFileSentAgain(store.db));
  it('marks a large file sent again a range at a time, a reference twice in it a duplicate in the file', () =>
    checkLargeFileSentAgain(store.db));
  it('lets every valid row of a large refused file go, a range at a time', () => checkLargeFileRefused(store.db));

  it('serves timers and sockets between the ranges of a large file sent again', async () => {
    const { db } = store;
    await seedLargeFileSentAgain(db);
    const { due, all } = await updatesWhenTimerFires(db, () => acceptBatchRows(db, 'AGAIN', 'skip-rows', 6));
    // Due at once, the timer fired after the first range's marks and before the last's.
    expect(due).toBeGreaterThanOrEqual(1);
    expect(due).toBeLessThan(all);
  });

  it('serves timers and sockets between the ranges of a large refused file', async () => {
    const { db } = store;
    await addBatch(db, 'BIG', 'big.csv');
    await addRows(db, [
      ...Array.from({ length: LARGE_REFUSED }, (_, i) => ({ ...validRow('BIG', i + 2, request(`R-${i + 1}`)), state: 'READY' as const })),
      { ...validRow('BIG', LARGE_REFUSED + 2, request('R-BAD')), state: 'INVALID', reasonCode: 'AMOUNT', reason: 'bad amount' },
    ]);
    const { due, all } = await updatesWhenTimerFires(db, () => acceptBatchRows(db, 'BIG', 'reject-file', 6));
    expect(due).toBeGreaterThanOrEqual(1);
    expect(due).toBeLessThan(all);
  });
});

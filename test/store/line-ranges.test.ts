/**
 * Clearing and pruning a large batch a range of rows at a time, on a real SQLite file (test/store/line-ranges.ts),
 * and the thread served between the ranges: a timer due while a batch is cleared fires before the clearing ends.
 */
import { describe, expect, it } from 'vitest';
import { clearBatchContents } from '../../src/store/batches.js';
import { useTestDatabase } from '../support/database.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { checkClearInRanges, checkPruneInRanges, LARGE } from './line-ranges.js';

describe('store: changes to every row of a large batch', () => {
  const store = useTestDatabase('payoutd-line-ranges-');

  it('clears a batch for a new reading a range at a time, its history and errors too', () => checkClearInRanges(store.db));
  it('prunes a finished batch a range at a time, keeping references and payout ids', () => checkPruneInRanges(store.db));

  it('serves timers and sockets between the ranges', async () => {
    const { db } = store;
    await addBatch(db, 'LARGE', 'LARGE.csv');
    await addRows(
      db,
      Array.from({ length: LARGE }, (_, i) => validRow('LARGE', i + 2, request(`L-${i + 1}`))),
    );
    let deletes = 0;
    const count = (q: { sql: string }): void => {
      if (/^delete from [`"]payouts[`"]/i.test(q.sql)) deletes++;
    };
    db.on('query', count);
    const clearing = clearBatchContents(db, 'LARGE');
    let deletesWhenDue = -1;
    setTimeout(() => (deletesWhenDue = deletes), 0);
    await clearing;
    db.off('query', count);
    // Due at once, the timer fired after the first range and before the last, not only once all was done.
    expect(deletesWhenDue).toBeGreaterThanOrEqual(1);
    expect(deletesWhenDue).toBeLessThan(deletes);
  });
});

/**
 * Row counts kept by a batch that ended (src/store/counts.ts, migration 0009), on a real SQLite file: a
 * batch that ends with every row final keeps its counts, and status and the metrics gauge read them
 * instead of counting its rows again; a batch that ends with a row that may still move keeps none and is
 * counted; the counts over every batch equal a count of every row; batches that ended before 0009 get
 * theirs from the migration; a damaged record is refused, not shown as counts.
 */
import { describe, expect, it } from 'vitest';
import { getBatch, updateBatch } from '../../src/store/batches.js';
import { batchStateCounts, finalCountsJson, parseFinalCounts, stateCounts } from '../../src/store/counts.js';
import { useTestDatabase } from '../support/database.js';
import { batchWithRows, checkCountsOfEveryBatch, checkFinalCountsMigration } from './final-counts.js';

describe('store: the counts a batch keeps once it ended', () => {
  const store = useTestDatabase('payoutd-final-counts-');

  it('a batch completed with every row final keeps its counts, and they are what is read for it', async () => {
    const { db } = store;
    await batchWithRows(db, 'DONE', ['PAID', 'PAID', 'CANCELLED', 'REJECTED', 'INVALID']);
    await updateBatch(db, 'DONE', { state: 'COMPLETE' }, 5);
    const done = (await getBatch(db, 'DONE'))!;
    expect(done.finalCountsJson).toBe('{"INVALID":1,"PAID":2,"CANCELLED":1,"REJECTED":1}');
    expect(await batchStateCounts(db, done)).toEqual(await stateCounts(db, 'DONE'));
    // Read from the record, not counted: a record saying otherwise is what comes back.
    expect(await batchStateCounts(db, { id: 'DONE', finalCountsJson: '{"PAID":7}' })).toEqual({ PAID: 7 });
  });

  it('a batch that ends with a row not final keeps none, and its rows are counted', async () => {
    const { db } = store;
    await batchWithRows(db, 'ODD', ['NOT_SUBMITTED', 'READY']);
    await db('batches').where({ id: 'ODD' }).update({ state: 'VALIDATING' });
    await updateBatch(db, 'ODD', { state: 'REJECTED' }, 5);
    const odd = (await getBatch(db, 'ODD'))!;
    expect(odd.state).toBe('REJECTED');
    expect(odd.finalCountsJson).toBeNull();
    await db('payouts').where({ batch_id: 'ODD', state: 'READY' }).update({ state: 'NOT_SUBMITTED' });
    expect(await batchStateCounts(db, odd)).toEqual({ NOT_SUBMITTED: 2 });
  });

  it('a batch still running keeps none; a patch without a state leaves the counts as they are', async () => {
    const { db } = store;
    await batchWithRows(db, 'RUN', ['PAID', 'PENDING']);
    await updateBatch(db, 'RUN', { holdCode: null }, 5);
    expect((await getBatch(db, 'RUN'))?.finalCountsJson).toBeNull();
    await batchWithRows(db, 'END', ['PAID']);
    await updateBatch(db, 'END', { state: 'COMPLETE' }, 5);
    await updateBatch(db, 'END', { resultWrittenAt: 6 }, 6);
    expect((await getBatch(db, 'END'))?.finalCountsJson).toBe('{"PAID":1}');
  });

  it('the counts over every batch are a count of every row: kept counts and counted rows, each once', () =>
    checkCountsOfEveryBatch(store.db));

  it('the kept form: final states in lifecycle order, none for a row that may move, {} for no rows', () => {
    expect(finalCountsJson({ PAID: 3, INVALID: 1 })).toBe('{"INVALID":1,"PAID":3}');
    expect(finalCountsJson({ PAID: 3, PENDING: 1 })).toBeNull();
    expect(finalCountsJson({ PAID: 3, VALIDATED: 1 })).toBeNull();
    expect(finalCountsJson({ PAID: 3, READY: 0 })).toBe('{"PAID":3}');
    expect(finalCountsJson({})).toBe('{}');
  });

  it('a damaged record is refused with its batch named, never shown as counts', () => {
    for (const damaged of ['', 'null', '[1]', '{"PAID":"3"}', '{"PAID":-1}', '{"PAID":1.5}', '{"PENDING":1}', '{"paid":1}'])
      expect(() => parseFinalCounts('B-9', damaged), damaged).toThrow(
        expect.objectContaining({ code: 'FINAL_COUNTS_DAMAGED', message: expect.stringContaining('batch B-9') }),
      );
    expect(parseFinalCounts('B-9', '{"PAID":2,"CANCELLED":1}')).toEqual({ PAID: 2, CANCELLED: 1 });
  });
});

describe('store: migration 0009 counts the batches that ended before it', () => {
  const store = useTestDatabase('payoutd-final-counts-0009-');

  it('an ended batch with every row final gets its counts; one with a row not final, and a running one, get none', () =>
    checkFinalCountsMigration(store.db));
});

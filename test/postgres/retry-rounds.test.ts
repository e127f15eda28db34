/** PostgreSQL: the acceptance's guard on retry rounds; the checks are test/store's on SQLite. */
import { describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { checkHashedSpellings, checkHoldingStates, checkRetryOfPaidRound, checkRoundsReadTogether } from '../store/retry-rounds.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a retry of a payout another row pays or may pay', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('is refused when another batch paid another round of it, with where and what to do', () => checkRetryOfPaidRound(store.db));
  it('is refused while another round or the base itself may be paid, not once it is cancelled or never sent', () =>
    checkHoldingStates(store.db));
  it('is refused in the first of two files read together, and both rounds in one file', () => checkRoundsReadTogether(store.db));
  it('treats the plain and hashed spellings of a long base as one base', () => checkHashedSpellings(store.db));

  it('lets at most one of two retry files accepted at the same moment pay the cancellation', async () => {
    const { db } = store;
    await addBatch(db, 'FIRST', 'pay.csv');
    for (const [id, ref] of [
      ['X', 'T-1-R1'],
      ['Y', 'T-1-R2'],
    ] as const) {
      await addBatch(db, id, `${id}.csv`);
      await db('batches').where({ id }).update({ state: 'VALIDATING' });
      await addRows(db, [{ ...validRow(id, 2, request(ref)), state: 'READY' }]);
    }
    const verdicts = await Promise.all([acceptBatchRows(db, 'X', 'skip-rows', 5), acceptBatchRows(db, 'Y', 'skip-rows', 5)]);
    expect(verdicts.filter((v) => v.accepted).length).toBeLessThanOrEqual(1);
    const ready = (await db('payouts').whereIn('batch_id', ['X', 'Y']).where({ state: 'READY' }).count({ n: '*' })) as { n: string }[];
    expect(Number(ready[0]?.n)).toBeLessThanOrEqual(1);
  });
});

/** PostgreSQL: the acceptance's guard on retry rounds; the checks are test/store's on SQLite. */
import { describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { retryRoundChecks } from '../store/retry-rounds.js';
import { addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a retry of a payout another row pays or may pay', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  retryRoundChecks(store);

  it('lets at most one of two retry files accepted at the same moment pay the cancellation', async () => {
    const { db } = store;
    await addBatch(db, 'FIRST', 'pay.csv');
    // The cancelled original: without it T-1 is not known as a payout, and its rounds are payouts of their own.
    await addRows(db, [{ ...validRow('FIRST', 2, request('T-1')), state: 'READY' }]);
    await setRow(db, 'FIRST', 2, { state: 'CANCELLED' });
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

/** The balance check's learned fee and the once-logged balance refusal on PostgreSQL (checks in test/pipeline/balance-checks.ts). */
import { afterEach, describe, it } from 'vitest';
import { migrateToLatest } from '../../src/store/db.js';
import { checkLearnedFee, checkRefusedOnce } from '../pipeline/balance-checks.js';
import { closePipelines, startPipeline, type PipelineOptions } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: the balance check and balance refusals', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);
  const start = (o: PipelineOptions) =>
    startPipeline({
      ...o,
      database: async () => {
        const db = await openEmptySchema(schema);
        await migrateToLatest(db);
        return db;
      },
    });

  it('counts the largest fee of recent payouts in the coin', () => checkLearnedFee(start));
  it('creates refused together for the balance log the hold once', () => checkRefusedOnce(start));
});

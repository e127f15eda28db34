/**
 * Operator decisions on a held batch: cancel makes its unsent rows final as
 * NOT_SUBMITTED (nothing is sent, the batch can finish); release lets them go.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cancelReadyRows, claimReadyRows, holdBatch, releaseBatchHold } from '../../src/store/submission.js';
import { listFinishedActiveBatches } from '../../src/store/settlement.js';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('operator decisions', () => {
  it('cancel: unsent rows become NOT_SUBMITTED, nothing is sent, and the batch can finish', async () => {
    const p = await startPipeline();
    const batch = await p.receive('held.csv', csvFile([csvRow('OP-1'), csvRow('OP-2')]));
    await holdBatch(p.db, batch.id, 'FILE_CHANGED', 'changed after the claim', null, p.clock.now());
    expect(await claimReadyRows(p.db, 10, p.clock.now())).toEqual([]);

    expect(await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: test', p.clock.now())).toBe(2);
    expect(await p.states(batch.id)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(await listFinishedActiveBatches(p.db)).toEqual([batch.id]);
    await p.submit();
    expect(p.createRequests()).toBe(0);
  });

  it('release: a held batch is sent once the hold is lifted', async () => {
    const p = await startPipeline();
    const batch = await p.receive('held.csv', csvFile([csvRow('OR-1')]));
    await holdBatch(p.db, batch.id, 'FILE_CHANGED', 'changed after the claim', null, p.clock.now());
    await p.submit();
    expect(p.createRequests()).toBe(0);
    await releaseBatchHold(p.db, batch.id, p.clock.now());
    await p.submit();
    expect(p.createRequests()).toBe(1);
    expect(await p.states(batch.id)).toEqual(['PENDING']);
  });
});

/**
 * Operator decisions on a held batch: cancel makes its unsent rows final as
 * NOT_SUBMITTED (nothing is sent, the batch can finish); release lets them go.
 * A batch held FILE_CHANGED waits for one of them even when nothing is left
 * to send; a balance hold does not keep a batch from finishing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { claimReadyRows } from '../../src/store/claims.js';
import { cancelReadyRows, cancelReturnedRows } from '../../src/store/cancels.js';
import { holdBatch, releaseBatchHold } from '../../src/store/holds.js';
import { listFinishedActiveBatches } from '../../src/store/settlement.js';
import { cancelMessage, liftHoldAsRead } from '../../src/cli/commands/operator.js';
import { listBatchEvents } from '../../src/store/batch-events.js';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('operator decisions', () => {
  it('cancel: unsent rows become NOT_SUBMITTED, nothing is sent, and the batch can finish', async () => {
    const p = await startPipeline();
    const batch = await p.receive('held.csv', csvFile([csvRow('OP-1'), csvRow('OP-2')]));
    await holdBatch(p.db, batch.id, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, p.clock.now());
    expect(await claimReadyRows(p.db, 10, p.clock.now())).toEqual([]);

    expect(await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: test', p.clock.now())).toEqual({
      notSubmitted: 2,
      claimed: 0,
      unknown: 0,
    });
    expect(await p.states(batch.id)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(await listFinishedActiveBatches(p.db)).toEqual([batch.id]);
    await p.submit();
    expect(p.createRequests()).toBe(0);
  });

  it('cancel is for good: a row whose create never reached the service, back in READY later, is not sent but cancelled too', async () => {
    const p = await startPipeline({ submitter: { notFoundGraceMs: 60_000 } });
    const batch = await p.receive('cancelled.csv', csvFile([csvRow('OC-1'), csvRow('OC-2')]));
    // OC-1's create timed out before it reached the service: UNKNOWN, to be asked about.
    await p
      .db('payouts')
      .where({ batch_id: batch.id, line: 2 })
      .update({ state: 'UNKNOWN', unknown_since: p.clock.now(), next_attempt_at: p.clock.now() });
    // Its create may still have reached the service: the cancel counts it apart, as one that may yet be paid.
    const done = await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: wrong file', p.clock.now());
    expect(done).toEqual({ notSubmitted: 1, claimed: 0, unknown: 1 });
    expect((await listBatchEvents(p.db, batch.id)).at(-1)).toMatchObject({
      type: 'cancelled',
      data: { notSubmitted: 1, claimed: 0, unknown: 1 },
    });
    const said = cancelMessage(batch.id, done);
    expect(said).toContain('1 row(s) not yet sent are now NOT_SUBMITTED');
    expect(said).toContain("1 row(s) whose create's outcome is unknown are being resolved by a query of their reference");
    expect(said).not.toContain('claimed for sending');
    expect(await p.states(batch.id)).toEqual(['UNKNOWN', 'NOT_SUBMITTED']);

    // The service has no payout for it: past the grace (counted from the first query) it goes back to READY, and
    // is claimed no more.
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['UNKNOWN', 'NOT_SUBMITTED']);
    p.clock.advance(61_000);
    await p.submit();
    await p.submit();
    expect(p.createRequests()).toBe(0);
    expect(await p.states(batch.id)).toEqual(['READY', 'NOT_SUBMITTED']);
    expect(await listFinishedActiveBatches(p.db)).toEqual([]);

    // The finish pass ends it as the cancel said; the batch can finish.
    expect(await cancelReturnedRows(p.db, p.clock.now())).toBe(1);
    expect(await p.states(batch.id)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect((await p.db('payouts').where({ batch_id: batch.id, line: 2 }).first('reason_code', 'reason')) as unknown).toEqual({
      reason_code: 'CANCELLED_BY_OPERATOR',
      reason: 'cancelled by an operator: wrong file',
    });
    expect(await listFinishedActiveBatches(p.db)).toEqual([batch.id]);
    expect(p.ledgerCount('OC-1')).toBe(0);
  });

  it('a batch held FILE_CHANGED with every row final is not finished until an operator decides', async () => {
    // Every row of the accepted part was paid before the upload went on: nothing is left to send, but a
    // result file would call the batch COMPLETE with the rows written after the change never read.
    const p = await startPipeline();
    const released = await p.receive('paid-then-changed.csv', csvFile([csvRow('OF-1'), csvRow('OF-2')]));
    const cancelled = await p.receive('paid-then-changed-2.csv', csvFile([csvRow('OF-3')]));
    for (const batch of [released, cancelled]) {
      await p.db('payouts').where({ batch_id: batch.id }).update({ state: 'PAID' });
      await holdBatch(p.db, batch.id, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, p.clock.now());
    }
    expect(await listFinishedActiveBatches(p.db)).toEqual([]);

    // A timed balance hold is about sending, not about what the batch is: it does not stop the finish.
    await holdBatch(
      p.db,
      released.id,
      { code: 'INSUFFICIENT_BALANCE', reason: 'low balance', until: p.clock.now() + 60_000 },
      p.clock.now(),
    );
    expect((await p.batch(released.id)).holdCode).toBe('FILE_CHANGED');

    await releaseBatchHold(p.db, released.id, p.clock.now());
    expect(await listFinishedActiveBatches(p.db)).toEqual([released.id]);
    expect(await cancelReadyRows(p.db, cancelled.id, 'cancelled by an operator: test', p.clock.now())).toEqual({
      notSubmitted: 0,
      claimed: 0,
      unknown: 0,
    });
    expect((await p.batch(cancelled.id)).holdCode).toBeNull();
    expect((await listFinishedActiveBatches(p.db)).sort()).toEqual([released.id, cancelled.id].sort());
  });

  it('a batch held for its balance with every row final is finished', async () => {
    const p = await startPipeline();
    const batch = await p.receive('paid-low-balance.csv', csvFile([csvRow('OB-1')]));
    await p.db('payouts').where({ batch_id: batch.id }).update({ state: 'PAID' });
    await holdBatch(p.db, batch.id, { code: 'INSUFFICIENT_BALANCE', reason: 'low balance', until: p.clock.now() + 60_000 }, p.clock.now());
    expect(await listFinishedActiveBatches(p.db)).toEqual([batch.id]);
  });

  it('release: a held batch is sent once the hold is lifted', async () => {
    const p = await startPipeline();
    const batch = await p.receive('held.csv', csvFile([csvRow('OR-1')]));
    await holdBatch(p.db, batch.id, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, p.clock.now());
    await p.submit();
    expect(p.createRequests()).toBe(0);
    await releaseBatchHold(p.db, batch.id, p.clock.now());
    await p.submit();
    expect(p.createRequests()).toBe(1);
    expect(await p.states(batch.id)).toEqual(['PENDING']);
  });

  it('release lifts the hold the operator was shown, not one the daemon set meanwhile', async () => {
    const p = await startPipeline();
    const batch = await p.receive('short.csv', csvFile([csvRow('OR-2')]));
    await holdBatch(p.db, batch.id, { code: 'INSUFFICIENT_BALANCE', reason: 'low balance', until: null }, p.clock.now());
    const shown = (await p.batch(batch.id)).holdCode;
    // Between the command's read and its write, the daemon saw the file change.
    await holdBatch(p.db, batch.id, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, p.clock.now());
    await expect(liftHoldAsRead(p.db, batch.id, shown ?? 'INSUFFICIENT_BALANCE', p.clock.now())).rejects.toMatchObject({
      code: 'HOLD_CHANGED',
      message: expect.stringContaining('now FILE_CHANGED'),
    });
    // The command it suggests is one the CLI takes: status names a batch with --batch.
    await expect(liftHoldAsRead(p.db, batch.id, 'INSUFFICIENT_BALANCE', p.clock.now())).rejects.toMatchObject({
      message: expect.stringContaining(`(payoutd status --batch ${batch.id})`),
    });
    expect((await p.batch(batch.id)).holdCode).toBe('FILE_CHANGED');
    await p.submit();
    expect(p.createRequests()).toBe(0);
  });
});

/**
 * A payout.updated event naming a payout under the reference of a row without one whose create was tried: the
 * create on the wire when the process stopped landed after a reconcile found the reference absent (the row READY
 * again). The sandbox creates a second payout for a repeated reference (duplicatePolicy allow): the row is not
 * created again blindly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PATH, closeAll, startReceiver } from '../webhook/helpers.js';
import { closePipelines, startPipeline } from './harness.js';
import { adoptedNotCreatedAgain, interruptedCreate, lateCreateLands } from './event-while-ready.js';

describe('an event naming a payout under a row without one whose create was tried', () => {
  afterEach(async () => {
    await closeAll();
    await closePipelines();
  });

  it('READY again after a reconcile found the reference absent: asked, not created again', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    const request = await interruptedCreate(p, 'EW-1');
    await p.submitter.reconcileUnknown(p.signal);
    expect((await p.row('EW-1')).state).toBe('READY');
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    await adoptedNotCreatedAgain(p, 'EW-1', await lateCreateLands(p, h, 'EW-1', request));
  });
});

/**
 * A payout.updated event naming a payout under the reference of a row without one whose create was tried: the
 * create on the wire when the process stopped landed after a reconcile found the reference absent (the row READY
 * again), or lands while the row's next create is on the wire. The sandbox creates a second payout for a repeated
 * reference (duplicatePolicy allow): the row is not created again blindly, and a second payout is told of.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { deliver } from '../webhook/final-rows-world.js';
import { PATH, closeAll, startReceiver } from '../webhook/helpers.js';
import { closePipelines, serviceLike, startPipeline, submitterVia } from './harness.js';
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

  it('while the next create is on the wire: the row follows the first payout and the second is told of', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    const request = await interruptedCreate(p, 'EW-2');
    await p.submitter.reconcileUnknown(p.signal);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    let first = '';
    const svc = serviceLike(p.client, {
      createPayout: async (...a) => {
        // The earlier create lands first, then this one; the earlier one's event arrives before this answer.
        first = (await p.client.createPayout(request)).payoutId;
        const answer = await p.client.createPayout(...a);
        await deliver(h, { payoutId: first, merchantReferenceId: 'EW-2', status: 'PENDING' });
        return answer;
      },
    });
    await submitterVia(p, svc).runOnce(p.signal);
    expect(p.ledgerCount('EW-2')).toBe(2);
    await p.submit();
    expect((await p.row('EW-2')).payoutId).toBe(first);
    expect((await p.row('EW-2')).serviceCheck).toBe('REFERENCE');

    await p.poll();
    const row = await p.row('EW-2');
    expect(row.serviceCheck).toBeNull();
    expect(row.serviceNote).toMatch(/holds payout \S+ \(PENDING\) under this row's reference besides payout/);
  });
});

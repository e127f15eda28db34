/**
 * An event contradicting a final row whose reference also names an older row asked about by the event's follow-up
 * (a create of it tried, then NOT_SUBMITTED, the reference sent again in a new file). The older row is asked about
 * by reference; the row holding the payout still gets its own check, as without the older row (final-rows.test.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cancelReadyRows, cancelReturnedRows } from '../../src/store/index.js';
import { closePipelines, payoutRequest, startPipeline, waitFor } from '../pipeline/harness.js';
import { interruptedCreate } from '../pipeline/event-while-ready.js';
import { PATH, closeAll, startReceiver } from './helpers.js';
import { deliver, receiverLines } from './final-rows-world.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

interface CheckedRow {
  state: string;
  service_check: string | null;
  service_note: string | null;
}

describe('a final row beside an older row of its reference that had a create tried', () => {
  it('CANCELLED for a row recorded PAID: the PAID row is checked and its note says what the service says', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    // An earlier batch tried RV-2, was cancelled, and the create was found absent: NOT_SUBMITTED, no payout.
    await interruptedCreate(p, 'RV-2');
    await cancelReadyRows(p.db, (await p.row('RV-2')).batchId, 'operator cancel', p.clock.now(), 'op');
    await p.submitter.reconcileUnknown(p.signal);
    await cancelReturnedRows(p.db, p.clock.now());
    expect((await p.row('RV-2')).state).toBe('NOT_SUBMITTED');
    // Sent again in a new file: asked about first, found absent, created, paid.
    const batchId = await p.insertReadyBatch([payoutRequest('RV-2')]);
    for (let i = 0; i < 4 && (await p.states(batchId))[0] !== 'PENDING'; i++) {
      await p.submit();
      await p.submitter.reconcileUnknown(p.signal);
      p.clock.advance(5000);
    }
    expect(await p.states(batchId)).toEqual(['PENDING']);
    const paid = (await p.db('payouts').where({ batch_id: batchId }).first('id', 'payout_id')) as { id: number; payout_id: string };
    expect(p.sandbox.settle({ payoutId: paid.payout_id }, 'PAID')).toBe(1);
    p.clock.advance(5000);
    await p.poll();
    expect(await p.states(batchId)).toEqual(['PAID']);

    // The service reverses the payout and says so.
    expect(p.sandbox.reverse(paid.payout_id, 'CANCELLED')).toBe(true);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    await deliver(h, { payoutId: paid.payout_id, merchantReferenceId: 'RV-2', status: 'CANCELLED', eventId: 'EV-RV-2' });
    const checked = async (): Promise<CheckedRow> =>
      (await p.db('payouts').where({ id: paid.id }).first('state', 'service_check', 'service_note')) as CheckedRow;
    await waitFor(async () => (await checked()).service_check !== null, 'a check of the PAID row to be owed');
    const messages = (await receiverLines(h, 'RV-2')).map((l) => String(l['msg']));
    expect(messages.join('\n')).toContain('recorded NOT_SUBMITTED without a payout');
    expect(messages.join('\n')).toContain('reports CANCELLED for a payout recorded PAID');

    await p.poll();
    const after = await checked();
    expect(after.state).toBe('PAID');
    expect(after.service_check).toBeNull();
    expect(after.service_note).toContain('CANCELLED');
  });
});

/**
 * A second payout under a row's reference, made by a create that left after the row was taken over or while an
 * event named the reference, is told to finance by a query of the reference owed (src/poll/checks.ts); the
 * service allows duplicate references here, so nothing else stops it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { deliver } from '../webhook/final-rows-world.js';
import { PATH, closeAll, startReceiver } from '../webhook/helpers.js';
import { closePipelines, payoutRequest, serviceLike, startPipeline, submitterVia, type Pipeline } from './harness.js';
import { interruptedCreate } from './event-while-ready.js';
import {
  cancelReadyRows,
  cancelReturnedRows,
  claimReadyRows,
  markInterruptedCreatesUnknown,
  noteLateCreate,
} from '../../src/store/index.js';
import { historyOf } from '../../src/store/moves.js';
import { requestOfText } from '../../src/domain/request-values.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { ApiError } from '../../src/api/errors.js';

/** A batch whose row `ref` had a create tried that has not landed yet, READY again after reconciles found it absent. */
async function triedAndReadyAgain(p: Pipeline, ref: string): Promise<PayoutRequest> {
  await p.insertReadyBatch([payoutRequest('T-1'), payoutRequest(ref)]);
  const claimed = await claimReadyRows(p.db, 10, p.clock.now());
  expect(await markInterruptedCreatesUnknown(p.db, p.clock.now())).toBe(2);
  await p.submitter.reconcileUnknown(p.signal);
  await p.submitter.reconcileUnknown(p.signal);
  expect((await p.row(ref)).state).toBe('READY');
  return requestOfText(claimed.find((c) => c.merchantReferenceId === ref)?.requestValues ?? '');
}

/** The row's check, once asked, tells finance of both payouts under its reference. */
async function bothToldAfterPoll(p: Pipeline, ref: string, payouts: string[]): Promise<void> {
  await p.poll();
  const row = await p.row(ref);
  expect(row.serviceNote).toContain(`under this row's reference`);
  for (const id of payouts) expect(row.serviceNote).toContain(id);
  expect((await historyOf(p.db, row.id)).some((h) => h.event === 'service-contradicts')).toBe(true);
}

/**
 * Sends `ref`'s create through a submitter whose claim ends before the create reaches the service (past its fence):
 * another instance takes the row over and finds the reference absent, READY again. The create then makes a payout
 * and its answer comes back (`answered`) or is lost. Afterwards the row is asked about, and adopts that payout.
 */
async function lateCreateOfReadyRow(p: Pipeline, ref: string, answered: boolean): Promise<void> {
  await p.insertReadyBatch([payoutRequest(ref)]);
  const svc = serviceLike(p.client, {
    createPayout: async (...a) => {
      await markInterruptedCreatesUnknown(p.db, p.clock.now());
      await submitterVia(p, p.client).reconcileUnknown(p.signal);
      await submitterVia(p, p.client).reconcileUnknown(p.signal);
      expect((await p.row(ref)).state).toBe('READY');
      // Its fence already behind it (the trail left out): it reaches the service.
      const created = await p.client.createPayout(a[0], a[1], {});
      if (!answered) throw new Error('socket hang up');
      return created;
    },
  });
  await submitterVia(p, svc, { concurrency: 1 }).runOnce(p.signal);
  const row = await p.row(ref);
  expect(row.state).toBe('UNKNOWN');
  expect((await historyOf(p.db, row.id)).map((h) => h.event)).toContain(answered ? 'created-after-takeover' : 'lost-after-takeover');
  await p.submitter.runOnce(p.signal);
  const after = await p.row(ref);
  const made = p.sandbox.ledger().filter((e) => e.merchantReferenceId === ref);
  expect([after.state, after.payoutId, after.serviceCheck, made.length]).toEqual(['PENDING', made[0]?.payoutId, null, 1]);
}

/**
 * `ref`'s create was tried and its row found absent once its batch was cancelled (NOT_SUBMITTED, the reference free
 * again). Returns the pipeline and that earlier create's request, to land late.
 */
async function foundAbsent(ref: string): Promise<{ p: Pipeline; request: PayoutRequest }> {
  const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
  const request = await interruptedCreate(p, ref);
  await cancelReadyRows(p.db, (await p.row(ref)).batchId, 'operator cancel', p.clock.now(), 'op');
  await p.submitter.reconcileUnknown(p.signal);
  await cancelReturnedRows(p.db, p.clock.now());
  expect((await p.row(ref)).state).toBe('NOT_SUBMITTED');
  return { p, request };
}

/**
 * As foundAbsent, then finance sends `ref` again in a new batch of `requests`, whose row of `ref` was asked about at
 * its first claim and found absent: READY again, its `unknown_since` kept.
 */
async function foundAbsentAndSentAgain(ref: string, requests: PayoutRequest[]): Promise<{ p: Pipeline; request: PayoutRequest }> {
  const { p, request } = await foundAbsent(ref);
  await p.insertReadyBatch(requests);
  await p.db('payouts').where({ merchant_reference_id: ref, state: 'READY' }).update({ unknown_since: p.clock.now() });
  return { p, request };
}

/** The row sent again was not created again: asked about, it adopts the earlier row's late payout, the only one. */
async function againAdoptsTheLatePayout(p: Pipeline, ref: string): Promise<void> {
  expect(p.ledgerCount(ref)).toBe(1);
  await p.submitter.reconcileUnknown(p.signal);
  const again = (await p.db('payouts').where({ merchant_reference_id: ref }).orderBy('id').select('state', 'payout_id')) as {
    state: string;
    payout_id: string | null;
  }[];
  const late = p.sandbox.ledger().find((e) => e.merchantReferenceId === ref)?.payoutId;
  expect([again[1], p.ledgerCount(ref)]).toEqual([{ state: 'PENDING', payout_id: late }, 1]);
}

/**
 * `ref`, tried before and READY again, is claimed again behind T-1 (one slot). When its create comes up, the earlier
 * create lands and that payout's event makes the row UNKNOWN: after its fence (`pastFence`: the create is on its
 * way, sent without it) or before it. Returns the earlier payout.
 */
async function eventWhileCreating(ref: string, pastFence: boolean): Promise<{ p: Pipeline; first: string }> {
  const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
  const request = await triedAndReadyAgain(p, ref);
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
  let first = '';
  const svc = serviceLike(p.client, {
    createPayout: async (...a) => {
      if (a[0].merchantReferenceId !== ref) return p.client.createPayout(...a);
      if (pastFence) await a[2]?.beforeSend?.();
      first = (await p.client.createPayout(request)).payoutId;
      await deliver(h, { payoutId: first, merchantReferenceId: ref, status: 'PENDING' });
      expect((await p.row(ref)).state).toBe('UNKNOWN');
      return pastFence ? p.client.createPayout(a[0], a[1], {}) : p.client.createPayout(...a);
    },
  });
  await submitterVia(p, svc, { concurrency: 1 }).runOnce(p.signal);
  return { p, first };
}

describe('a create out while its row is taken over or named by an event', () => {
  afterEach(async () => {
    await closeAll();
    await closePipelines();
  });

  it('a create answered after a takeover adopted another payout owes a query of the reference', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    const request = await triedAndReadyAgain(p, 'TA-2');
    let first = '';
    const svc = serviceLike(p.client, {
      createPayout: async (...a) => {
        if (a[0].merchantReferenceId === 'TA-2') {
          // Past its fence (run here, then left out of the send): the earlier create lands, another instance takes
          // the row over and its reconcile adopts that payout.
          await a[2]?.beforeSend?.();
          first = (await p.client.createPayout(request)).payoutId;
          await markInterruptedCreatesUnknown(p.db, p.clock.now());
          await submitterVia(p, p.client).reconcileUnknown(p.signal);
          expect((await p.row('TA-2')).payoutId).toBe(first);
          return p.client.createPayout(a[0], a[1], {});
        }
        return p.client.createPayout(...a);
      },
    });
    await submitterVia(p, svc, { concurrency: 1 }).runOnce(p.signal);
    const row = await p.row('TA-2');
    expect([row.state, row.payoutId, row.serviceCheck]).toEqual(['PENDING', first, 'REFERENCE']);
    expect(p.ledgerCount('TA-2')).toBe(2);
    const second = (await historyOf(p.db, row.id)).find((h) => h.event === 'created-after-takeover')?.detail ?? '';
    await bothToldAfterPoll(p, 'TA-2', [first, /payoutId (\S+),/.exec(second)?.[1] ?? 'none']);
  });

  it('an event naming the reference of a CREATING row makes it UNKNOWN: its answer refused, the reference asked', async () => {
    const { p, first } = await eventWhileCreating('TE-2', true);
    // The create already on the wire made a second payout; its answer is not the row's, and the reference's query
    // finds both.
    expect((await p.row('TE-2')).state).toBe('UNKNOWN');
    await p.submitter.reconcileUnknown(p.signal);
    const row = await p.row('TE-2');
    expect([row.state, row.serviceCheck, p.ledgerCount('TE-2')]).toEqual(['PENDING', 'REFERENCE', 2]);
    const made = p.sandbox.ledger().filter((e) => e.merchantReferenceId === 'TE-2');
    expect(made.map((e) => e.payoutId)).toContain(first);
    await bothToldAfterPoll(
      p,
      'TE-2',
      made.map((e) => e.payoutId),
    );
  });

  it('an event naming the reference of a CREATING row still waiting to be sent: not sent, that payout adopted', async () => {
    // Waiting for its slot, its batch found sendable by T-1's fence a moment ago: the event comes before its fence.
    const { p, first } = await eventWhileCreating('TQ-2', false);
    expect(p.ledgerCount('TQ-2')).toBe(1);
    await p.submitter.reconcileUnknown(p.signal);
    const row = await p.row('TQ-2');
    expect([row.state, row.payoutId, row.serviceCheck, p.ledgerCount('TQ-2')]).toEqual(['PENDING', first, null, 1]);
  });

  it('a row sent again in a new file, named by the late payout of the row it repeats while waiting: not sent', async () => {
    const { p, request } = await foundAbsentAndSentAgain('TF-1', [payoutRequest('TF-0'), payoutRequest('TF-1')]);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const svc = serviceLike(p.client, {
      createPayout: async (...a) => {
        if (a[0].merchantReferenceId === 'TF-1') {
          // Waiting for its slot, its batch found sendable by TF-0's fence a moment ago: the earlier row's create
          // lands and its event comes before this create's fence.
          const late = (await p.client.createPayout(request)).payoutId;
          await deliver(h, { payoutId: late, merchantReferenceId: 'TF-1', status: 'PENDING' });
        }
        return p.client.createPayout(...a);
      },
    });
    await submitterVia(p, svc, { concurrency: 1 }).runOnce(p.signal);
    await againAdoptsTheLatePayout(p, 'TF-1');
  });

  it('a row sent again in a new file after the late payout of the row it repeats was named: asked, not sent', async () => {
    const { p, request } = await foundAbsent('TX-1');
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const late = (await p.client.createPayout(request)).payoutId;
    await deliver(h, { payoutId: late, merchantReferenceId: 'TX-1', status: 'PENDING' });
    await p.insertReadyBatch([payoutRequest('TX-1')]);
    await p.submitter.runOnce(p.signal);
    await againAdoptsTheLatePayout(p, 'TX-1');
  });

  it('rows sent again in one file: each is asked before its claim, none claimed past the rows looked at', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    for (const ref of ['TY-1', 'TY-2']) {
      await interruptedCreate(p, ref);
      await cancelReadyRows(p.db, (await p.row(ref)).batchId, 'operator cancel', p.clock.now(), 'op');
    }
    await p.submitter.reconcileUnknown(p.signal);
    await cancelReturnedRows(p.db, p.clock.now());
    await p.insertReadyBatch([payoutRequest('TY-1'), payoutRequest('TY-2')]);
    // A claim of one row asks TY-1 first; TY-2, not looked at, waits READY for the next claim, which asks it too.
    const states = async (): Promise<string[]> =>
      (await p.db('payouts').whereIn('state', ['READY', 'UNKNOWN', 'CREATING']).orderBy('line').pluck('state')) as string[];
    expect(await claimReadyRows(p.db, 1, p.clock.now())).toEqual([]);
    expect(await states()).toEqual(['UNKNOWN', 'READY']);
    expect(await claimReadyRows(p.db, 1, p.clock.now())).toEqual([]);
    expect(await states()).toEqual(['UNKNOWN', 'UNKNOWN']);
  });

  it('a row sent again in a new file, named by the late payout of the row it repeats before its claim: not sent', async () => {
    const { p, request } = await foundAbsentAndSentAgain('TG-1', [payoutRequest('TG-1')]);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const late = (await p.client.createPayout(request)).payoutId;
    await deliver(h, { payoutId: late, merchantReferenceId: 'TG-1', status: 'PENDING' });
    await p.submitter.runOnce(p.signal);
    await againAdoptsTheLatePayout(p, 'TG-1');
  });

  it("the row's own payout named before its answer is recorded: UNKNOWN, then that payout adopted, no second", async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await p.insertReadyBatch([payoutRequest('TB-1')]);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const svc = serviceLike(p.client, {
      createPayout: async (...a) => {
        const answer = await p.client.createPayout(...a);
        await deliver(h, { payoutId: answer.payoutId, merchantReferenceId: 'TB-1', status: 'PAID' });
        return answer;
      },
    });
    await submitterVia(p, svc).runOnce(p.signal);
    expect((await p.row('TB-1')).state).toBe('UNKNOWN');
    await p.submitter.reconcileUnknown(p.signal);
    const after = await p.row('TB-1');
    expect([after.state, after.serviceCheck, after.serviceNote, p.ledgerCount('TB-1')]).toEqual(['PENDING', null, null, 1]);
    expect(p.sandbox.ledger().find((e) => e.merchantReferenceId === 'TB-1')?.payoutId).toBe(after.payoutId);
  });

  it('a cancelled row paid by a create that landed late is asked about, not shown as not paid', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    const request = await interruptedCreate(p, 'TC-1');
    await cancelReadyRows(p.db, (await p.row('TC-1')).batchId, 'operator cancel', p.clock.now(), 'op');
    await p.submitter.reconcileUnknown(p.signal);
    await cancelReturnedRows(p.db, p.clock.now());
    expect((await p.row('TC-1')).state).toBe('NOT_SUBMITTED');
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const { payoutId } = await p.client.createPayout(request);
    await deliver(h, { payoutId, merchantReferenceId: 'TC-1', status: 'PAID' });
    expect(h.logs.lines.filter((l) => l.includes('NOT_SUBMITTED without a payout after a create'))[0]).toContain('"level":"error"');
    expect((await p.row('TC-1')).serviceCheck).toBe('REFERENCE');
    await bothToldAfterPoll(p, 'TC-1', [payoutId]);
  });

  it('a create answered after its row was found absent and made READY again: that payout adopted, not sent again', async () => {
    await lateCreateOfReadyRow(await startPipeline({ sandbox: { duplicatePolicy: 'allow' } }), 'TR-1', true);
  });

  it('a REJECTED row an event names a payout under is asked about, not shown as not paid', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await p.insertReadyBatch([payoutRequest('TJ-1')]);
    let request: PayoutRequest | undefined;
    const svc = serviceLike(p.client, {
      createPayout: async (req) => {
        request = 'requestValues' in req ? requestOfText(req.requestValues) : req;
        throw new ApiError({ endpoint: 'createPayout', code: '4001', msg: 'refused', status: 200, kind: 'rejected' });
      },
    });
    await submitterVia(p, svc).runOnce(p.signal);
    expect((await p.row('TJ-1')).state).toBe('REJECTED');
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const { payoutId } = await p.client.createPayout(request as PayoutRequest);
    await deliver(h, { payoutId, merchantReferenceId: 'TJ-1', status: 'PAID' });
    expect(h.logs.lines.filter((l) => l.includes('REJECTED without a payout after a create'))[0]).toContain('"level":"error"');
    expect((await p.row('TJ-1')).serviceCheck).toBe('REFERENCE');
    await bothToldAfterPoll(p, 'TJ-1', [payoutId]);
  });

  it('a create whose answer was lost after its row was found absent: the row asked about, not sent again', async () => {
    await lateCreateOfReadyRow(await startPipeline({ sandbox: { duplicatePolicy: 'allow' } }), 'TL-1', false);
  });

  it('a row refused REFERENCE_TAKEN is not asked about for events of the payout holding its reference', async () => {
    const p = await startPipeline();
    const x = (await p.client.createPayout(payoutRequest('TT-1', { payoutAmount: '999' }))).payoutId;
    await p.insertReadyBatch([payoutRequest('TT-1')]);
    await p.submitter.runOnce(p.signal);
    p.clock.advance(3_600_000);
    await p.poll();
    expect(await p.row('TT-1')).toMatchObject({ state: 'REJECTED', reasonCode: 'REFERENCE_TAKEN' });
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    await deliver(h, { payoutId: x, merchantReferenceId: 'TT-1', status: 'PAID' });
    expect((await p.row('TT-1')).serviceCheck).toBeNull();
    expect(h.logs.lines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it('a lost answer after the row followed another payout owes a query, not a note of two payouts', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await p.insertReadyBatch([payoutRequest('TP-1')]);
    const { id } = await p.row('TP-1');
    const { payoutId } = await p.client.createPayout(payoutRequest('TP-1'));
    await p.db('payouts').where({ id }).update({ state: 'PENDING', payout_id: payoutId, create_attempts: 1, next_poll_at: p.clock.now() });
    const entry = { event: 'lost-after-takeover', outcome: 'UNKNOWN', detail: 'lost' };
    expect(await noteLateCreate(p.db, id, null, () => entry, p.clock.now())).toBe('extra');
    const row = await p.row('TP-1');
    expect([row.state, row.payoutId, row.serviceCheck]).toEqual(['PENDING', payoutId, 'REFERENCE']);
    expect(row.serviceNote).toContain('a create of this row whose answer was lost ended after its claim on the row ended');
  });
});

/**
 * Events about a payout whose row is already final, and events naming another payout under one of our
 * references: rows made final through the real sandbox, then signed `payout.updated` deliveries saying something
 * else of them. The event never moves a row (spec 3 shows no move out of a final status); the payout, or the
 * reference, is queried (spec 6 rule 3) through the poller's client, and only the service's answer is told to
 * finance: a row the service contradicts is named in the result file and kept out of retry files, also while
 * the service cannot be asked.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closePipelines, payoutRequest, startPipeline, waitFor } from '../pipeline/harness.js';
import { PATH, closeAll, eventBody, send, signedHeaders, startReceiver } from './helpers.js';
import { batchFiles, checkOwed, deliver, finalRows, pipelineLines, receiverLines } from './final-rows-world.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

describe('a payout.updated event for a row already final', () => {
  it('CANCELLED for a row recorded PAID: an ERROR, the payout queried by its id; the service says PAID: nothing changes but the log', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-1': 'PAID' });
    const payoutId = payoutIds.get('FR-1') as string;
    const before = await p.events('FR-1');
    const queries = p.queryRequests();
    await deliver(h, { payoutId, merchantReferenceId: 'FR-1', status: 'CANCELLED', eventId: 'EV-FR-1' });
    const errors = (await receiverLines(h, 'FR-1')).filter((l) => l['level'] === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      batchId,
      line: 2,
      merchantReferenceId: 'FR-1',
      payoutId,
      eventId: 'EV-FR-1',
      recordedState: 'PAID',
      reportedStatus: 'CANCELLED',
    });
    await checkOwed(p, 'FR-1');
    // Asked by its payoutId, through the client the poller uses (the spy only watches the real call).
    const byId = vi.spyOn(p.client, 'queryByPayoutIds');
    await p.poll();
    expect(p.queryRequests()).toBe(queries + 1);
    expect(byId.mock.calls.map((c) => c[0])).toEqual([[payoutId]]);
    const row = await p.row('FR-1');
    expect(row).toMatchObject({ state: 'PAID', serviceCheck: null, serviceNote: null });
    expect(await p.events('FR-1')).toEqual(before);
    const told = pipelineLines(p, 'FR-1').filter((l) => String(l['msg']).includes('not confirmed'));
    expect(told).toHaveLength(1);
    // Nothing is created or moved: the poller does not follow a final row, nor ask again.
    p.clock.advance(120_000);
    await p.poll();
    expect(p.queryRequests()).toBe(queries + 1);
    expect(await p.states(batchId)).toEqual(['PAID']);
    expect(p.ledgerCount('FR-1')).toBe(1);
  });

  it('PAID for a row recorded PAID: nothing to do, said truthfully, no history entry, no query', async () => {
    const { p, h, payoutIds } = await finalRows({ 'FR-2': 'PAID' });
    const before = await p.events('FR-2');
    const queries = p.queryRequests();
    await deliver(h, { payoutId: payoutIds.get('FR-2') as string, merchantReferenceId: 'FR-2', status: 'PAID' });
    const lines = await receiverLines(h, 'FR-2');
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
    expect(lines.map((l) => l['msg'])).toContain('webhook accepted: the row is already final; nothing to do');
    expect(lines.map((l) => l['msg'])).not.toContain('webhook accepted: payout due for a query');
    await p.poll();
    expect(p.queryRequests()).toBe(queries);
    expect(await p.events('FR-2')).toEqual(before);
  });

  it('PAID for a row recorded CANCELLED that the service now reports PAID: told in the result file, left out of the retry file', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-4': 'CANCELLED', 'FR-5': 'CANCELLED' });
    const payoutId = payoutIds.get('FR-4') as string;
    // The service reverses its outcome (a sandbox control); its own event is the one delivered below.
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'FR-4', status: 'PAID', eventId: 'EV-FR-4' });
    await checkOwed(p, 'FR-4');
    await p.poll();
    const row = await p.row('FR-4');
    expect(row.state).toBe('CANCELLED');
    expect(row.serviceCheck).toBeNull();
    expect(row.serviceNote).toContain(`the payout service now reports PAID for payout ${payoutId}, recorded CANCELLED here`);
    expect(row.serviceNote).toContain('do not send this row again');
    expect(row.serviceNote).toContain('check it with the payout service before booking it');
    expect((await p.events('FR-4')).at(-1)).toBe('service-contradicts');
    const contradicted = pipelineLines(p, 'FR-4').filter((l) => l['level'] === 'error');
    expect(contradicted).toMatchObject([{ batchId, line: 2, payoutId, state: 'CANCELLED', reportedStatus: 'PAID' }]);

    const files = await batchFiles(p, batchId, 'outbox');
    expect(files.result.get('FR-4')?.status).toBe('CANCELLED');
    expect(files.result.get('FR-4')?.reason).toContain('the payout service now reports PAID');
    expect(files.result.get('FR-4')?.reason).toContain('do not send this row again');
    expect(files.retry).not.toBeNull();
    expect(files.retry).not.toContain('FR-4');
    expect(files.retry).toContain('FR-5-R1');
    expect(files.withheld).toEqual([{ line: 2, merchantReferenceId: 'FR-4', note: row.serviceNote }]);
  });

  it('while the service cannot be asked, the row stays out of the retry file and is asked again until it answers', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-6': 'CANCELLED' }, { proxy: true });
    const payoutId = payoutIds.get('FR-6') as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await p.proxy?.off();
    await deliver(h, { payoutId, merchantReferenceId: 'FR-6', status: 'PAID' });
    await checkOwed(p, 'FR-6');
    await p.poll();
    let row = await p.row('FR-6');
    expect(row.serviceCheck).toBe('PAYOUT');
    expect(row.serviceNote).toContain('payoutd is asking the payout service: do not send this row again');
    expect(pipelineLines(p, 'FR-6')).toEqual([]);
    expect(p.logLines.some((l) => l.includes('could not ask the payout service about rows a payout.updated event contradicted'))).toBe(
      true,
    );
    const meanwhile = await batchFiles(p, batchId, 'outbox-1');
    expect(meanwhile.retry).toBeNull();
    expect(meanwhile.withheld.map((w) => w.merchantReferenceId)).toEqual(['FR-6']);
    expect(meanwhile.result.get('FR-6')?.reason).toContain('a payout.updated event reported PAID');

    await p.proxy?.on();
    p.clock.advance(p.pollerOptions.minIntervalMs);
    await p.poll();
    row = await p.row('FR-6');
    expect(row.serviceCheck).toBeNull();
    expect(row.serviceNote).toContain('the payout service now reports PAID');
    expect((await batchFiles(p, batchId, 'outbox-2')).retry).toBeNull();
  });

  it('the service still says CANCELLED: the row goes back into the retry file, and nothing of it changed', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-7': 'CANCELLED' });
    const before = await p.events('FR-7');
    await deliver(h, { payoutId: payoutIds.get('FR-7') as string, merchantReferenceId: 'FR-7', status: 'PAID' });
    await checkOwed(p, 'FR-7');
    expect((await batchFiles(p, batchId, 'outbox-1')).retry).toBeNull();
    await p.poll();
    expect(await p.row('FR-7')).toMatchObject({ state: 'CANCELLED', serviceCheck: null, serviceNote: null });
    expect(await p.events('FR-7')).toEqual(before);
    expect((await batchFiles(p, batchId, 'outbox-2')).retry).toContain('FR-7-R1');
  });
});

/**
 * A CANCELLED row of `ref` whose reference the service also holds a second, PAID payout under (another system paid
 * under our reference), and the event about that second payout delivered.
 */
async function secondPayoutPaid(ref: string, eventId?: string) {
  const world = await finalRows({ [ref]: 'CANCELLED' }, { sandbox: { duplicatePolicy: 'allow' } });
  const { p, h, payoutIds } = world;
  const second = (await p.client.createPayout(payoutRequest(ref, { payoutAmount: '100.5' }))).payoutId;
  expect(p.sandbox.settle({ payoutId: second }, 'PAID')).toBe(1);
  await deliver(h, { payoutId: second, merchantReferenceId: ref, status: 'PAID', ...(eventId !== undefined ? { eventId } : {}) });
  return { ...world, own: payoutIds.get(ref) as string, second };
}

describe('an event naming another payout under one of our references', () => {
  it("another row's payout: an ERROR naming the reference and both payouts, the reference queried; it holds no other: nothing changes", async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-8': 'PAID', 'FR-9': 'CANCELLED' });
    const other = payoutIds.get('FR-8') as string;
    const own = payoutIds.get('FR-9') as string;
    const before = await p.events('FR-9');
    await deliver(h, { payoutId: other, merchantReferenceId: 'FR-9', status: 'PAID', eventId: 'EV-FR-9' });
    const errors = (await receiverLines(h, 'FR-9')).filter((l) => l['level'] === 'error');
    expect(errors).toMatchObject([
      { merchantReferenceId: 'FR-9', payoutId: other, rowPayoutId: own, eventId: 'EV-FR-9', batchId, line: 3 },
    ]);
    expect(errors[0]?.['msg']).toContain(`names payout ${other} under reference FR-9, whose row holds payout ${own}`);
    await checkOwed(p, 'FR-9');
    const byReference = vi.spyOn(p.client, 'queryByReferences');
    await p.poll();
    expect(byReference.mock.calls.map((c) => c[0])).toEqual([['FR-9']]);
    expect(await p.row('FR-9')).toMatchObject({ state: 'CANCELLED', serviceCheck: null, serviceNote: null });
    expect(await p.events('FR-9')).toEqual(before);
    expect((await batchFiles(p, batchId, 'outbox')).retry).toContain('FR-9-R1');
  });

  it('a second payout the service holds for a CANCELLED row, PAID: several payouts told, the row left out of the retry file', async () => {
    const { p, h, batchId, own, second } = await secondPayoutPaid('FR-10');
    const errors = (await receiverLines(h, 'FR-10')).filter((l) => l['level'] === 'error');
    expect(errors).toMatchObject([{ merchantReferenceId: 'FR-10', payoutId: second, rowPayoutId: own }]);
    await checkOwed(p, 'FR-10');
    await p.poll();
    const row = await p.row('FR-10');
    expect(row.serviceNote).toContain(`the payout service holds payout ${second} (PAID) under this row's reference besides payout ${own}`);
    expect(row.serviceNote).toContain('do not send this row again');
    expect(p.logLines.some((l) => l.includes('the service holds several payouts for one reference') && l.includes('FR-10'))).toBe(true);
    const files = await batchFiles(p, batchId, 'outbox');
    expect(files.retry).toBeNull();
    expect(files.withheld.map((w) => w.merchantReferenceId)).toEqual(['FR-10']);
    expect(files.result.get('FR-10')?.reason).toContain(`holds payout ${second} (PAID)`);
  });

  it("a later event about the row's own payout: asked by reference, so what the service said of the second stays", async () => {
    const { p, h, batchId, own, second } = await secondPayoutPaid('FR-11', 'EV-FR-11a');
    await checkOwed(p, 'FR-11');
    await p.poll();
    expect((await p.row('FR-11')).serviceNote).toContain(`holds payout ${second} (PAID)`);
    // An event saying PAID of the row's own payout, which the service has CANCELLED (out of order, or wrong).
    await deliver(h, { payoutId: own, merchantReferenceId: 'FR-11', status: 'PAID', eventId: 'EV-FR-11b' });
    await checkOwed(p, 'FR-11');
    expect((await p.row('FR-11')).serviceCheck).toBe('REFERENCE');
    await p.poll();
    const row = await p.row('FR-11');
    expect([row.state, row.serviceCheck]).toEqual(['CANCELLED', null]);
    expect(row.serviceNote).toContain(`holds payout ${second} (PAID)`);
    const files = await batchFiles(p, batchId, 'outbox');
    expect(files.retry).toBeNull();
    expect(files.result.get('FR-11')?.reason).toContain(`holds payout ${second} (PAID)`);
  });

  it("an event about the row's own payout while its reference is being asked: the check stays one of the reference", async () => {
    const { p, h, batchId, own, second } = await secondPayoutPaid('FR-12', 'EV-FR-12a');
    await checkOwed(p, 'FR-12');
    await deliver(h, { payoutId: own, merchantReferenceId: 'FR-12', status: 'PAID', eventId: 'EV-FR-12b' });
    await waitFor(async () => (await p.row('FR-12')).serviceCheckRound >= 2, "the second event's follow-up");
    expect((await p.row('FR-12')).serviceCheck).toBe('REFERENCE');
    await p.poll();
    const row = await p.row('FR-12');
    expect(row.serviceNote).toContain(`holds payout ${second} (PAID)`);
    expect((await batchFiles(p, batchId, 'outbox')).retry).toBeNull();
  });

  it('a follow-up that fails is answered 500 and leaves the event unrecorded: the redelivery makes the check owed', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'FR-11': 'CANCELLED' });
    const payoutId = payoutIds.get('FR-11') as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    // The database refuses the follow-up's write (making the check owed) and nothing else.
    await p.db.raw("CREATE TRIGGER refuse_check BEFORE UPDATE OF service_check ON payouts BEGIN SELECT RAISE(ABORT, 'check refused'); END");
    const body = eventBody({ payoutId, merchantReferenceId: 'FR-11', status: 'PAID', eventId: 'EV-FR-11' });
    expect((await send(h.url, { body, headers: signedHeaders(body, h.clock) })).status).toBe(500);
    expect(await p.db('webhook_events').where('event_id', 'EV-FR-11').count({ n: '*' })).toEqual([{ n: 0 }]);
    expect((await p.row('FR-11')).serviceCheck).toBeNull();

    // The sender retries the same event: it is new here, and its follow-up now runs.
    await p.db.raw('DROP TRIGGER refuse_check');
    expect((await send(h.url, { body, headers: signedHeaders(body, h.clock) })).status).toBe(200);
    expect(h.verdicts).toEqual(['error', 'accepted']);
    expect((await p.row('FR-11')).serviceCheck).toBe('PAYOUT');
    await p.poll();
    expect((await p.row('FR-11')).serviceNote).toContain('the payout service now reports PAID');
    const files = await batchFiles(p, batchId, 'outbox');
    expect(files.retry).toBeNull();
    expect(files.withheld.map((w) => w.merchantReferenceId)).toEqual(['FR-11']);
  });

  it('no row of the reference here: only told, nothing asked', async () => {
    const p = await startPipeline();
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    const queries = p.queryRequests();
    await deliver(h, { payoutId: 'PO-ELSEWHERE', merchantReferenceId: 'FR-NOT-OURS', status: 'PAID' });
    const lines = await receiverLines(h, 'FR-NOT-OURS');
    expect(lines.map((l) => l['msg'])).toContain('webhook accepted: no PENDING row of this payout here; nothing made due');
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
    await p.poll();
    expect(p.queryRequests()).toBe(queries);
  });
});

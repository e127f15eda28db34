/**
 * A reference the service already holds for another payout (a state database restored, another system on
 * the same merchant): the row is never reported paid by that payout, and never created a second time. Its
 * own payout, when the service holds that too, is the one adopted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { SettlementPoller } from '../../src/poll/index.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, payoutRequest, startPipeline, waitFor, type Pipeline } from './harness.js';

let mitm: Mitm | null = null;
afterEach(async () => {
  await closePipelines();
  await mitm?.close();
  mitm = null;
});

type Json = Record<string, unknown>;

/** Query answers through a proxy that rewrites each record as `edit` says (the records the spec leaves open). */
async function rewritingRecords(p: Pipeline, edit: (r: Json) => Json | null): Promise<{ client: PayoutApiClient; proxy: Mitm }> {
  const proxy = await startMitm(p.sandbox.url);
  mitm = proxy;
  proxy.rewriteAnswer = (path, text) => {
    if (path !== QUERY_PATH) return text;
    const env = parseLossless(text) as { code: string; msg: string; data: { payouts: Json[] } };
    const payouts = env.data.payouts.map(edit).filter((r): r is Json => r !== null);
    return canonicalStringify({ ...env, data: { payouts } });
  };
  return { client: new PayoutApiClient({ ...p.clientOptions, baseUrl: proxy.url }), proxy };
}

/** Another payout under FX-1: 5000 PHP to another account (the row asks 100.5 PHP to 1234567890). */
const OTHERS = payoutRequest('FX-1', {
  payoutAmount: '5000',
  beneficiary: { accountName: 'Someone Else', accountNumber: '5555555555', bankCode: 'BOPIPHMM' },
});

describe('a reference the service holds for another payout', () => {
  it('answered with it by a create (return-original): the row ends REJECTED, never PAID', async () => {
    const p = await startPipeline({ sandbox: { settlement: { minDelayMs: 10, maxDelayMs: 10 } } });
    const other = await p.client.createPayout(OTHERS);
    const batchId = await p.insertReadyBatch([payoutRequest('FX-1')]);
    await p.submit();
    expect((await p.row('FX-1')).payoutId).toBe(other.payoutId);
    await waitFor(() => p.sandbox.stats().pending === 0, 'settlement');
    p.clock.advance(5000);
    await p.poll();
    const row = await p.row('FX-1');
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    expect(row).toMatchObject({ payoutId: null, reasonCode: 'REFERENCE_TAKEN' });
    // None of the other payout's figures (written by the create's answer) stay to be read as this row's debit.
    expect(row).toMatchObject({
      serviceStatus: null,
      rate: null,
      deductionAmount: null,
      totalFee: null,
      feeCurrency: null,
      createdAtMs: null,
    });
    expect(row.reason).toBe(
      `the payout service holds payout ${other.payoutId} under this reference for 5000 PHP, not this row's 100.5 PHP, so payoutd does not count it as this row's payment; ` +
        `check payout ${other.payoutId} with the payout service before paying this row again, and if it is not this row's, pay the row under a new reference`,
    );
    expect(await p.events('FX-1')).toEqual(['intent', 'created', 'reference-taken']);
    expect(p.ledgerCount('FX-1')).toBe(1);
  });

  it('found by the query of an unknown create (reject): REJECTED after the grace, never created', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'reject' }, submitter: { notFoundGraceMs: 60_000 } });
    await p.client.createPayout(OTHERS);
    const batchId = await p.insertReadyBatch([payoutRequest('FX-1')]);
    await p.submit();
    // Its own create may still land within the grace: waited for.
    expect(await p.states(batchId)).toEqual(['UNKNOWN']);
    p.clock.advance(60_000);
    await p.submit();
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    expect((await p.row('FX-1')).reasonCode).toBe('REFERENCE_TAKEN');
    expect(p.ledgerCount('FX-1')).toBe(1);
    expect(p.createRequests(), "the other's create and the row's one try").toBe(2);
  });

  for (const [first, edit] of [
    ['could not be read (a status the spec leaves open)', (r: Json) => ({ ...r, status: 'PROCESSING' })],
    ['did not show the payout yet', () => null],
  ] as const) {
    it(`answered with it, its first poll ${first}: checked at the next one, REJECTED, never PAID`, async () => {
      const p = await startPipeline();
      const other = await p.client.createPayout(OTHERS);
      const batchId = await p.insertReadyBatch([payoutRequest('FX-1')]);
      await p.submit();
      const { client, proxy } = await rewritingRecords(p, edit);
      const poller = new SettlementPoller({ db: p.db, service: client, clock: p.clock, logger: p.logger }, p.pollerOptions);
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await poller.runPass(p.signal);
      expect(await p.states(batchId)).toEqual(['PENDING']);
      proxy.rewriteAnswer = null;
      p.sandbox.settle({ payoutId: other.payoutId }, 'PAID');
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await poller.runPass(p.signal);
      expect(await p.row('FX-1')).toMatchObject({ state: 'REJECTED', reasonCode: 'REFERENCE_TAKEN' });
    });
  }

  it("beside another's readable payout, the row's own in a status the spec leaves open: followed, not REJECTED", async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 60_000 } });
    await p.client.createPayout(OTHERS);
    const { client, proxy } = await rewritingRecords(p, (r) => (String(r.payoutAmount) === '100.5' ? { ...r, status: 'PROCESSING' } : r));
    const submitter = new PayoutSubmitter(
      { db: p.db, service: client, clock: p.clock, logger: p.logger, holds: p.holds, random: () => 0.5 },
      p.submitterOptions,
    );
    p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
    const batchId = await p.insertReadyBatch([payoutRequest('FX-1')]);
    await submitter.runOnce(p.signal);
    p.sandbox.setFaults({ commitThenDropRate: 0 });
    const own = p.sandbox.ledger().find((e) => e.merchantReferenceId === 'FX-1' && e.payoutAmount === '100.5');
    expect(await p.states(batchId)).toEqual(['PENDING']);
    expect((await p.row('FX-1')).payoutId).toBe(own?.payoutId);
    // Once its record reads, the poller finds it the row's own: followed to its end.
    proxy.rewriteAnswer = null;
    p.sandbox.settle({ payoutId: own?.payoutId as string }, 'PAID');
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await p.poll();
    expect(await p.row('FX-1')).toMatchObject({ state: 'PAID', reasonCode: null });
    expect(p.ledgerCount('FX-1')).toBe(2);
  });

  it('beside the row own payout (allow): its own is adopted, not the earlier other', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    await p.client.createPayout(OTHERS);
    p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
    await p.insertReadyBatch([payoutRequest('FX-1')]);
    await p.submit();
    const own = p.sandbox.ledger().find((e) => e.merchantReferenceId === 'FX-1' && e.payoutAmount === '100.5');
    expect(own).toBeDefined();
    expect(await p.row('FX-1')).toMatchObject({ state: 'PENDING', payoutId: own?.payoutId });
    expect(p.ledgerCount('FX-1')).toBe(2);
  });
});

/**
 * A reference the service already holds for another payout (a state database restored, another system on
 * the same merchant): the row is never reported paid by that payout, and never created a second time. Its
 * own payout, when the service holds that too, is the one adopted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { rowOutcome } from '../../src/daemon/outbox.js';
import type { RowOutcome } from '../../src/report/types.js';
import { SummaryAccumulator } from '../../src/report/summary.js';
import { payoutsCreatedBetween, resultRowPages } from '../../src/store/index.js';
import { payoutQueryShapeSchema } from '../../src/domain/wire-shapes.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { REFERENCE_TAKEN_WHILE_CHECKED_NOTE } from '../../src/domain/service-check.js';
import type { PayoutService } from '../../src/domain/payout.js';
import { SettlementPoller } from '../../src/poll/index.js';
import { followUpNamed } from '../../src/webhook/receiver.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import {
  CREATE_PATH,
  QUERY_PATH,
  closePipelines,
  gate,
  linesContaining,
  payoutRequest,
  heldReconciler,
  serviceLike,
  startPipeline,
  waitFor,
  type Pipeline,
} from './harness.js';

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

/** A poller of the pipeline's database asking through `client`. */
function pollerOf(p: Pipeline, client: PayoutService): SettlementPoller {
  return new SettlementPoller({ db: p.db, service: client, clock: p.clock, logger: p.logger }, p.pollerOptions);
}

/** A batch of one row whose create the service took in but whose answer was lost, sent by a submitter asking through `client`. */
async function unknownCreate(p: Pipeline, client: PayoutApiClient, ref: string): Promise<{ submitter: PayoutSubmitter; batchId: string }> {
  const submitter = new PayoutSubmitter(
    { db: p.db, service: client, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
    p.submitterOptions,
  );
  p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
  const batchId = await p.insertReadyBatch([payoutRequest(ref)]);
  await submitter.runOnce(p.signal);
  p.sandbox.setFaults({ commitThenDropRate: 0 });
  return { submitter, batchId };
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
        `check payout ${other.payoutId} with the payout service before paying this row again, and if it is not this row's, pay the row under a new reference; ` +
        `if the service shows it for 100.5 PHP, payoutd reads another field of its records: check api.payoutQuery.recordFields.payoutAmount`,
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
    const { batchId } = await unknownCreate(p, client, 'FX-1');
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

  it('a reconcile round that outlasted its claim neither rejects nor reports REFERENCE_TAKEN for a row another adopted', async () => {
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      submitter: { notFoundGraceMs: 60_000, reconcileLeaseMs: 120_000 },
    });
    const own = payoutRequest('FX-1');
    const batchId = await p.insertReadyBatch([own]);
    await p.client.createPayout(OTHERS);
    // The row's create timed out: UNKNOWN, past its grace, so an answer showing only the other payout rejects it.
    await p
      .db('payouts')
      .where({ batch_id: batchId })
      .update({ state: 'UNKNOWN', unknown_since: p.clock.now() - 61_000, next_attempt_at: p.clock.now() });

    // Instance A's reference query is answered, then held before A records it.
    const a = heldReconciler(p);
    const roundA = a.submitter.reconcileUnknown(p.signal);
    await waitFor(() => a.held(), 'the query of A answered');
    // A's claim runs out; the row's own create lands late at the service; another round finds and adopts it.
    p.clock.advance(121_000);
    await p.client.createPayout(own);
    await p.submitter.reconcileUnknown(p.signal);
    expect((await p.row('FX-1')).state).toBe('PENDING');

    a.release();
    expect(await roundA).toBe(0);
    expect(await p.row('FX-1')).toMatchObject({ state: 'PENDING', reasonCode: null });
    expect(p.logLines.filter((l) => l.includes('REFERENCE_TAKEN'))).toEqual([]);
  });
});

describe('a reference check a webhook made owed of a PENDING row its poll finds REFERENCE_TAKEN', () => {
  /** FX-8 answered with another's payout, and a webhook naming a second payout under FX-8: a check of the reference owed. */
  async function checkOwed(p: Pipeline): Promise<string> {
    await p.client.createPayout({ ...OTHERS, merchantReferenceId: 'FX-8' });
    const batchId = await p.insertReadyBatch([payoutRequest('FX-8')]);
    await p.submit();
    await followUpNamed(p.db, p.clock, p.logger, { payoutId: 'PO-NAMED-2', merchantReferenceId: 'FX-8', status: 'PAID' });
    expect(await p.row('FX-8')).toMatchObject({ state: 'PENDING', serviceCheck: 'REFERENCE' });
    return batchId;
  }

  /** The row ends REJECTED with no check left owed, and a note that payoutd no longer asks, keeping it out of retry files. */
  async function closed(p: Pipeline, poller: SettlementPoller, batchId: string): Promise<void> {
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    const row = await p.row('FX-8');
    expect(row).toMatchObject({ reasonCode: 'REFERENCE_TAKEN', payoutId: null, serviceCheck: null, serviceCheckAt: null });
    expect(row.serviceNote).toBe(REFERENCE_TAKEN_WHILE_CHECKED_NOTE);
    expect(row.serviceNote).not.toContain('payoutd is asking');
    expect(await poller.nextDueAt()).toBeNull();
  }

  it('its check not answered yet (the reference query failed): the check is closed, its note says payoutd no longer asks', async () => {
    const p = await startPipeline();
    const batchId = await checkOwed(p);
    const service = serviceLike(p.client, {
      queryByReferences: () => Promise.reject(new Error('reference query failed on purpose')),
    });
    const poller = pollerOf(p, service);
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await poller.runPass(p.signal);
    await closed(p, poller, batchId);
  });

  it('made owed while the poll was on the wire: that answer does not leave the check owed forever', async () => {
    const p = await startPipeline();
    await p.client.createPayout({ ...OTHERS, merchantReferenceId: 'FX-8' });
    const batchId = await p.insertReadyBatch([payoutRequest('FX-8')]);
    await p.submit();
    const held = gate();
    const service = serviceLike(p.client, {
      async queryByPayoutIds(ids, signal) {
        const answer = await p.client.queryByPayoutIds(ids, signal);
        await held.at();
        return answer;
      },
    });
    const poller = pollerOf(p, service);
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    const pass = poller.runPass(p.signal);
    await waitFor(() => held.reached(), 'the poll on the wire');
    await followUpNamed(p.db, p.clock, p.logger, { payoutId: 'PO-NAMED-2', merchantReferenceId: 'FX-8', status: 'PAID' });
    held.open();
    await pass;
    // The check made owed after the claim is asked, and the poll decides again once the claim has run out.
    p.clock.advance(p.pollerOptions.leaseMs);
    await pollerOf(p, p.client).runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    const row = await p.row('FX-8');
    expect(row).toMatchObject({ reasonCode: 'REFERENCE_TAKEN', payoutId: null, serviceCheck: null });
    expect(row.serviceNote ?? '').not.toContain('payoutd is asking');
  });
});

describe("a record of the row's payout showing another amount or currency", () => {
  /** Lines of the error logged for a row's own payout settled with other figures. */
  const differsLines = (p: Pipeline): string[] =>
    linesContaining(p.logLines, 'settled PAID with other figures').concat(
      linesContaining(p.logLines, 'settled CANCELLED with other figures'),
    );

  for (const [what, change, setting, exclusive, settled] of [
    ['amount', { payoutAmount: '1005' }, 'api.payoutQuery.recordFields.payoutAmount', false, 'PAID'],
    ['currency', { payoutCurrency: 'USD' }, 'api.payoutQuery.recordFields.payoutCurrency', false, 'PAID'],
    ['amount', { payoutAmount: '100.05' }, 'api.payoutQuery.recordFields.payoutAmount', true, 'PAID'],
    ['amount', { payoutAmount: '1005' }, 'api.payoutQuery.recordFields.payoutAmount', false, 'CANCELLED'],
  ] as const) {
    it(`once found the row's own, settled ${settled} for another ${what}${exclusive ? ' (alone on its database)' : ''}: ${settled} as the service says, the difference in its reason, never paid again`, async () => {
      const p = await startPipeline({ poller: { exclusive } });
      const batchId = await p.insertReadyBatch([payoutRequest('FX-2')]);
      await p.submit();
      const payoutId = (await p.row('FX-2')).payoutId as string;
      // Its first poll reads it as asked: 100.5 PHP.
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await p.poll();
      expect(await p.states(batchId)).toEqual(['PENDING']);
      const { client } = await rewritingRecords(p, (r) => ({ ...r, ...change }));
      p.sandbox.settle({ payoutId }, settled);
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await pollerOf(p, client).runPass(p.signal);
      const row = await p.row('FX-2');
      expect(row).toMatchObject({ state: settled, reasonCode: settled === 'PAID' ? null : 'CANCELLED', payoutId, serviceStatus: settled });
      const shown = `${'payoutAmount' in change ? change.payoutAmount : '100.5'} ${'payoutCurrency' in change ? change.payoutCurrency : 'PHP'}`;
      expect(row.reason).toContain(`the payout service's record of payout ${payoutId} shows ${shown} while this row asked 100.5 PHP`);
      expect(row.reason).toContain(`check payout ${payoutId} with the payout service before booking it`);
      expect(row.reason).toContain(`if the service shows it for 100.5 PHP, payoutd reads another field of its records: check ${setting}`);
      expect(row.reason).not.toContain('pay the row under a new reference');
      expect(await p.events('FX-2')).toEqual(['intent', 'created', 'polled', 'settled']);
      expect(linesContaining(p.logLines, 'REFERENCE_TAKEN')).toEqual([]);
      const logged = differsLines(p);
      expect(logged).toHaveLength(1);
      expect(logged[0]).toContain('"level":"error"');
      expect(logged[0]).toContain('"merchantReferenceId":"FX-2"');
      expect(logged[0]).toContain(`"service":"${shown}"`);
      expect(logged[0]).toContain(setting);
      // Settled: neither created again nor asked about again.
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await p.submit();
      await pollerOf(p, client).runPass(p.signal);
      expect(p.ledgerCount('FX-2')).toBe(1);
      expect(await p.states(batchId)).toEqual([settled]);
    });
  }

  it("once found the row's own, still PENDING with another amount: followed as PENDING, told once when it settles", async () => {
    const p = await startPipeline();
    const batchId = await p.insertReadyBatch([payoutRequest('FX-5')]);
    await p.submit();
    const payoutId = (await p.row('FX-5')).payoutId as string;
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await p.poll();
    const { client } = await rewritingRecords(p, (r) => ({ ...r, payoutAmount: '1005' }));
    const poller = pollerOf(p, client);
    for (let i = 0; i < 3; i++) {
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      await poller.runPass(p.signal);
    }
    expect(await p.row('FX-5')).toMatchObject({ state: 'PENDING', payoutId, reasonCode: null, reason: null });
    expect(differsLines(p)).toEqual([]);
    p.sandbox.settle({ payoutId }, 'PAID');
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID']);
    expect((await p.row('FX-5')).reason).toContain(`payout ${payoutId} shows 1005 PHP while this row asked 100.5 PHP`);
    expect(differsLines(p)).toHaveLength(1);
    expect(p.ledgerCount('FX-5')).toBe(1);
  });

  it("once found the row's own, settled PAID debited in another currency: checked before booking, its amount never shown under the row's currency", async () => {
    const p = await startPipeline();
    const batchId = await p.insertReadyBatch([payoutRequest('FX-7')]);
    await p.submit();
    const payoutId = (await p.row('FX-7')).payoutId as string;
    // Every record of it shows another debit currency: not evidence of another's payout, so still followed as the row's.
    const { client } = await rewritingRecords(p, (r) => ({ ...r, deductionCurrency: 'USDC' }));
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await pollerOf(p, client).runPass(p.signal);
    expect(await p.row('FX-7')).toMatchObject({ state: 'PENDING', payoutId, reasonCode: null, reason: null });
    expect((await p.row('FX-7')).payoutCheckedAt).not.toBeNull();
    p.sandbox.settle({ payoutId }, 'PAID');
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await pollerOf(p, client).runPass(p.signal);
    const row = await p.row('FX-7');
    expect(row).toMatchObject({ state: 'PAID', payoutId, reasonCode: null });
    expect(row.reason).toContain(
      `the payout service's record of payout ${payoutId} shows 100.5 PHP debited in USDC while this row asked 100.5 PHP debited in USDT`,
    );
    expect(row.reason).toContain(`check payout ${payoutId} with the payout service before booking it`);
    expect(row.reason).toContain('api.payoutQuery.recordFields.deductionCurrency');
    const logged = differsLines(p);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('"level":"error"');
    expect(logged[0]).toContain('"service":"100.5 PHP debited in USDC"');
    // The result file, its summary and the reconciliation report pair the service's amount with the service's currency.
    const shown: RowOutcome[] = [];
    for await (const page of resultRowPages(p.db, batchId)) shown.push(...page.map(rowOutcome));
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({ deductionCurrency: 'USDC', deductionAmount: row.deductionAmount, status: 'PAID' });
    const summary = new SummaryAccumulator();
    summary.add(shown[0] as RowOutcome);
    const booked = summary.rows().filter((r) => r.measure === 'deduction_amount');
    expect(booked.map((r) => r.currency)).toEqual(['USDC']);
    const reported = [];
    for await (const r of payoutsCreatedBetween(p.db, 0, p.clock.now() + 1)) reported.push(r);
    expect(reported.map((r) => r.deductionCurrency)).toEqual(['USDC']);
    expect(p.ledgerCount('FX-7')).toBe(1);
  });

  it('adopted by the query of an unknown create, settled for another amount: PAID, the difference in its reason', async () => {
    const p = await startPipeline({ submitter: { notFoundGraceMs: 5000 } });
    const { submitter, batchId } = await unknownCreate(p, p.client, 'FX-6');
    p.clock.advance(120_000);
    await submitter.runOnce(p.signal);
    const payoutId = (await p.row('FX-6')).payoutId as string;
    expect(await p.states(batchId)).toEqual(['PENDING']);
    const { client } = await rewritingRecords(p, (r) => ({ ...r, payoutAmount: '1005' }));
    p.sandbox.settle({ payoutId }, 'PAID');
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await pollerOf(p, client).runPass(p.signal);
    const row = await p.row('FX-6');
    expect(row).toMatchObject({ state: 'PAID', payoutId });
    expect(row.reason).toContain(`payout ${payoutId} shows 1005 PHP while this row asked 100.5 PHP`);
    expect(p.ledgerCount('FX-6')).toBe(1);
  });

  it('adopted settled by the query of an unknown create, debited in another currency: PAID, checked before booking', async () => {
    const p = await startPipeline({ submitter: { notFoundGraceMs: 5000 } });
    const { client, proxy } = await rewritingRecords(p, (r) => ({ ...r, deductionCurrency: 'USDC' }));
    // Its first reference query cannot be read: the payout settles before a reconcile finds it.
    const edit = proxy.rewriteAnswer;
    proxy.rewriteAnswer = (path, text) => (path === QUERY_PATH ? 'not an answer' : text);
    const { submitter, batchId } = await unknownCreate(p, client, 'FX-9');
    expect(await p.states(batchId)).toEqual(['UNKNOWN']);
    p.sandbox.settle({ merchantReferenceId: 'FX-9' }, 'PAID');
    proxy.rewriteAnswer = edit;
    p.clock.advance(120_000);
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID']);
    const row = await p.row('FX-9');
    expect(row.reason).toContain(`shows 100.5 PHP debited in USDC while this row asked 100.5 PHP debited in USDT`);
    expect(row.reason).toContain('before booking it');
    expect(differsLines(p)).toHaveLength(1);
    expect(p.ledgerCount('FX-9')).toBe(1);
  });

  it('its amount read from another field (recordFields.payoutAmount): the reason and the log name the setting', async () => {
    const shape = payoutQueryShapeSchema.parse({ recordFields: { payoutAmount: 'grossAmount' } });
    const p = await startPipeline({ client: { payoutQuery: shape } });
    // The service's records carry the debit beside the payout amount; the setting names the debit's field.
    const { client } = await rewritingRecords(p, (r) => ({ ...r, grossAmount: r.deductionAmount }));
    const batchId = await p.insertReadyBatch([payoutRequest('FX-3')]);
    await p.submit();
    const payoutId = (await p.row('FX-3')).payoutId as string;
    p.sandbox.settle({ payoutId }, 'PAID');
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await pollerOf(p, client).runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    const row = await p.row('FX-3');
    expect(row.reasonCode).toBe('REFERENCE_TAKEN');
    expect(row.reason).toContain("not this row's 100.5 PHP");
    expect(row.reason).toContain(
      'if the service shows it for 100.5 PHP, payoutd reads another field of its records: check api.payoutQuery.recordFields.payoutAmount',
    );
    const logged = linesContaining(p.logLines, 'REFERENCE_TAKEN').join();
    expect(logged).toContain('"asked":"100.5 PHP"');
    expect(logged).toContain('"settings":["api.payoutQuery.recordFields.payoutAmount"]');
  });

  it('its currency read from another field, found by the query of an unknown create: REJECTED naming the setting, never created again', async () => {
    const shape = payoutQueryShapeSchema.parse({ recordFields: { payoutCurrency: 'currency' } });
    const p = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      client: { payoutQuery: shape },
      submitter: { notFoundGraceMs: 5000 },
    });
    const { client } = await rewritingRecords(p, (r) => ({ ...r, currency: r.deductionCurrency }));
    const { submitter, batchId } = await unknownCreate(p, client, 'FX-4');
    p.clock.advance(120_000);
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['REJECTED']);
    const row = await p.row('FX-4');
    expect(row.reasonCode).toBe('REFERENCE_TAKEN');
    expect(row.reason).toContain("for 100.5 USDT, not this row's 100.5 PHP");
    expect(row.reason).toContain('check api.payoutQuery.recordFields.payoutCurrency');
    expect(linesContaining(p.logLines, 'REFERENCE_TAKEN').join()).toContain('"settings":["api.payoutQuery.recordFields.payoutCurrency"]');
    expect(p.ledgerCount('FX-4')).toBe(1);
  });
});

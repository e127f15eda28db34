/**
 * PostgreSQL: what the payout service answers is stored as it came, however long, and so is the instance id
 * a claim writes. A value longer than its column's declared length once failed, on PostgreSQL only, the whole
 * group commit of create answers (rows already debited left CREATING, then UNKNOWN for good) or every claim
 * of an instance whose host name is long (nothing ever sent). A NUL character, which PostgreSQL cannot store
 * in text at all, failed the same way.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { SettlementPoller } from '../../src/poll/index.js';
import { migrateToLatest, type Database } from '../../src/store/db.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, payoutRequest, startPipeline, type Pipeline } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

type Json = Record<string, unknown>;

let mitm: Mitm | null = null;
afterEach(async () => {
  await closePipelines();
  await mitm?.close();
  mitm = null;
});

/** The submitter and poller of `p`, their client reaching the sandbox through a proxy that rewrites `ref`'s payout as `edit` says. */
async function rewritingPayout(
  p: Pipeline,
  ref: string,
  edit: (payout: Json) => Json,
): Promise<{ submitter: PayoutSubmitter; poller: SettlementPoller }> {
  mitm = await startMitm(p.sandbox.url);
  const mine = (payout: Json): Json => (payout.merchantReferenceId === ref ? edit(payout) : payout);
  mitm.rewriteAnswer = (path, text) => {
    if (path !== CREATE_PATH && path !== QUERY_PATH) return text;
    const env = parseLossless(text) as { code: string; msg: string; data: Json };
    const data = path === CREATE_PATH ? mine(env.data) : { ...env.data, payouts: (env.data.payouts as Json[]).map(mine) };
    return canonicalStringify({ ...env, data });
  };
  const service = new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url });
  const { db, clock, monotonic, logger, holds } = p;
  return {
    submitter: new PayoutSubmitter({ db, service, clock, monotonic, logger, holds, random: () => 0.5 }, p.submitterOptions),
    poller: new SettlementPoller({ db, service, clock, logger }, p.pollerOptions),
  };
}

describe.skipIf(!pgReachable)('postgres: long values of the service and of the configuration', () => {
  const schema = useTestSchema();
  const database = async (): Promise<Database> => {
    const db = await openEmptySchema(schema);
    await migrateToLatest(db);
    return db;
  };

  it('a create answer whose feeCurrency is longer than 8 characters: every row of the commit goes PENDING, then PAID', async () => {
    const p = await startPipeline({ database });
    const { submitter, poller } = await rewritingPayout(p, 'SV-2', (payout) => ({ ...payout, feeCurrency: 'USDT-TRC20' }));
    const refs = ['SV-1', 'SV-2', 'SV-3'];
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    expect((await p.row('SV-2')).feeCurrency).toBe('USDT-TRC20');
    for (const ref of refs) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PAID', 'PAID']);
    expect(await p.row('SV-2')).toMatchObject({ feeCurrency: 'USDT-TRC20', serviceStatus: 'PAID' });
    for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);
  });

  it('a query record in a status longer than 16 characters is kept as read; the other payouts of the answer settle', async () => {
    const p = await startPipeline({ database });
    const status = 'AWAITING_COMPLIANCE_REVIEW';
    const { submitter, poller } = await rewritingPayout(p, 'SQ-2', (payout) =>
      payout.status === undefined ? payout : { ...payout, status },
    );
    const batchId = await p.insertReadyBatch(['SQ-1', 'SQ-2'].map((r) => payoutRequest(r)));
    await submitter.runOnce(p.signal);
    for (const ref of ['SQ-1', 'SQ-2']) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'PENDING']);
    expect((await p.row('SQ-2')).serviceStatus).toBe(status);
  });

  it('a failure reason holding a NUL character: the row is CANCELLED with the character shown as U+FFFD', async () => {
    const p = await startPipeline({ database });
    const { submitter, poller } = await rewritingPayout(p, 'SN-2', (payout) =>
      payout.status === 'CANCELLED' ? { ...payout, failureReason: 'bank\u0000rejected' } : payout,
    );
    const batchId = await p.insertReadyBatch(['SN-1', 'SN-2'].map((r) => payoutRequest(r)));
    await submitter.runOnce(p.signal);
    p.sandbox.settle({ merchantReferenceId: 'SN-1' }, 'PAID');
    p.sandbox.settle({ merchantReferenceId: 'SN-2' }, 'CANCELLED');
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await poller.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['PAID', 'CANCELLED']);
    expect((await p.row('SN-2')).reason).toContain('bank\uFFFDrejected');
  });

  it('an instance id of 72 characters (a long host name) claims its rows and sends them', async () => {
    const p = await startPipeline({ database });
    // As the daemon makes one by default: `${hostname()}:${pid}:${random}`.
    const instanceId = 'payoutd-prod-worker-01.payments.internal.example-corp.com:1234567:a1b2c3';
    expect(instanceId).toHaveLength(72);
    const submitter = new PayoutSubmitter(
      { db: p.db, service: p.client, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
      { ...p.submitterOptions, claimant: { instanceId, leaseMs: 120_000 } },
    );
    const batchId = await p.insertReadyBatch([payoutRequest('SI-1')]);
    await submitter.runOnce(p.signal);
    expect(await p.states(batchId)).toEqual(['PENDING']);
    expect(p.ledgerCount('SI-1')).toBe(1);
  });
});

/**
 * Two pollers on one PostgreSQL database asking about the same payout. B claims the row while its payout is
 * not yet proven the row's own, and B's query is slow; a webhook makes the row due again, A claims it, finds
 * the record as the row asked and writes payout_checked_at. B's answer then shows other figures (the service
 * changed them): B decided from the row as it claimed it, and must not reject a row A proved as REFERENCE_TAKEN,
 * nor log that it did.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { SettlementPoller } from '../../src/poll/index.js';
import { migrateToLatest } from '../../src/store/db.js';
import { followUpNamed } from '../../src/webhook/receiver.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { QUERY_PATH, closePipelines, payoutRequest, startPipeline } from '../pipeline/harness.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

type Json = Record<string, unknown>;
let proxy: Mitm | null = null;

describe.skipIf(!pgReachable)('two pollers answering for one row', () => {
  const schema = useTestSchema();
  afterEach(async () => {
    await closePipelines();
    await proxy?.close();
    proxy = null;
  });

  it('a payout one poller proved the row own is not rejected by the other from what it claimed before', async () => {
    const p = await startPipeline({
      database: async () => {
        const db = await openEmptySchema(schema);
        await migrateToLatest(db);
        return db;
      },
    });
    const batchId = await p.insertReadyBatch([payoutRequest('RACE-1')]);
    await p.submit();
    const payoutId = (await p.row('RACE-1')).payoutId as string;
    expect((await p.row('RACE-1')).payoutCheckedAt).toBeNull();

    // B's client: slow, and it reads other figures than the row asked (the service's by the time B's query lands).
    proxy = await startMitm(p.sandbox.url);
    let arrived!: () => void;
    const bAsked = new Promise<void>((r) => (arrived = r));
    proxy.holdMs = (path) => (path === QUERY_PATH ? (arrived(), 1500) : 0);
    proxy.rewriteAnswer = (path, text) => {
      if (path !== QUERY_PATH) return text;
      const env = parseLossless(text) as { data: { payouts: Json[] } };
      return canonicalStringify({ ...env, data: { payouts: env.data.payouts.map((r) => ({ ...r, payoutAmount: '1005' })) } });
    };
    const b = new SettlementPoller(
      { db: p.db, service: new PayoutApiClient({ ...p.clientOptions, baseUrl: proxy.url }), clock: p.clock, logger: p.logger },
      p.pollerOptions,
    );
    const a = new SettlementPoller(
      { db: p.db, service: new PayoutApiClient(p.clientOptions), clock: p.clock, logger: p.logger },
      p.pollerOptions,
    );

    p.clock.advance(p.pollerOptions.maxIntervalMs);
    const bPass = b.runPass(p.signal);
    await bAsked; // B has claimed the row (payout_checked_at NULL then) and its query is on the wire

    // A webhook names the payout: the row is due now (the receiver's own follow-up), and A asks about it.
    await followUpNamed(p.db, p.clock, p.logger, { payoutId, merchantReferenceId: 'RACE-1' });
    await a.runPass(p.signal);
    const afterA = await p.row('RACE-1');
    expect(afterA.state).toBe('PENDING');
    expect(afterA.payoutCheckedAt).not.toBeNull();

    await bPass;
    const row = await p.row('RACE-1');
    expect(await p.states(batchId)).toEqual(['PENDING']);
    expect(row.payoutId).toBe(payoutId);
    expect(row.reasonCode).toBeNull();
    expect(row.payoutCheckedAt).toBe(afterA.payoutCheckedAt);
    expect((await p.events('RACE-1')).filter((e) => e.includes('reference-taken'))).toEqual([]);
    // Nor is the operator told of a REFERENCE_TAKEN that B's move, refused by its guard, never recorded.
    expect(p.logLines.filter((l) => l.includes('REFERENCE_TAKEN'))).toEqual([]);
  });
});

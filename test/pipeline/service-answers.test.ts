/**
 * Answers the spec leaves open (its 2.6 and 4.5: "not shown"), sent by a real sandbox through a proxy that
 * rewrites them: an answer payoutd cannot read is never taken to mean "no such payout", so a reference the
 * service holds is never created again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { canonicalStringify, parseLossless } from '../../src/json/index.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, payoutRequest, startPipeline, type Pipeline } from './harness.js';

let mitm: Mitm | null = null;
afterEach(async () => {
  await closePipelines();
  await mitm?.close();
  mitm = null;
});

/** A submitter of the pipeline's database whose client reaches the sandbox through the rewriting proxy. */
async function throughProxy(p: Pipeline): Promise<{ submitter: PayoutSubmitter; mitm: Mitm }> {
  mitm = await startMitm(p.sandbox.url);
  const client = new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url });
  const submitter = new PayoutSubmitter(
    { db: p.db, service: client, clock: p.clock, logger: p.logger, holds: p.holds, random: () => 0.5 },
    p.submitterOptions,
  );
  return { submitter, mitm };
}

type Envelope = { code: string; msg: string; data: { payouts: unknown[] } };

describe('a query answer payoutd cannot read', () => {
  for (const [shape, data] of [
    ['data the list of records itself', (d: Envelope['data']) => d.payouts],
    ['data empty', () => ({})],
    ['data null', () => null],
    ['payouts not a list', (d: Envelope['data']) => ({ payouts: d.payouts[0] ?? {} })],
  ] as const) {
    it(`(${shape}) leaves the row UNKNOWN; the reference is never created again`, async () => {
      const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: 5000 } });
      const { submitter, mitm } = await throughProxy(p);
      mitm.rewriteAnswer = (path, text) => {
        if (path !== QUERY_PATH) return text;
        const env = parseLossless(text) as Envelope;
        return canonicalStringify({ code: env.code, msg: env.msg, data: data(env.data) });
      };
      p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
      const batchId = await p.insertReadyBatch([payoutRequest('QS-1')]);
      await submitter.runOnce(p.signal);
      p.sandbox.setFaults({ commitThenDropRate: 0 });
      for (let i = 0; i < 3; i++) {
        p.clock.advance(10_000);
        await submitter.runOnce(p.signal);
      }
      expect(p.ledgerCount('QS-1'), 'payouts the service holds for QS-1').toBe(1);
      expect(await p.states(batchId)).toEqual(['UNKNOWN']);
      expect(await p.events('QS-1')).not.toContain('reconciled-absent');
      // Once the service answers as agreed, the row is adopted.
      mitm.rewriteAnswer = null;
      p.clock.advance(120_000);
      await submitter.runOnce(p.signal);
      expect(await p.states(batchId)).toEqual(['PENDING']);
      expect(p.ledgerCount('QS-1')).toBe(1);
    });
  }
});

/**
 * Two instances reconciling the same UNKNOWN rows (src/submit/submitter.ts reconcileUnknown): a round that
 * outlasted its claim (many single-reference queries, a slow answer) must not apply a "safe to create" decided
 * from answers older than another instance's create of the row since. The sandbox creates a second payout for
 * a repeated reference (duplicatePolicy allow), so a stale decision would show in its ledger.
 */
import { afterEach, expect, it } from 'vitest';
import type { PayoutQueryAnswer } from '../../src/domain/payout.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { CREATE_PATH, closePipelines, heldReconciler, payoutRequest, serviceLike, startPipeline } from './harness.js';

afterEach(async () => {
  await closePipelines();
});

it('a round that outlasted its claim does not apply a stale "absent, create again"', async () => {
  const p = await startPipeline({
    sandbox: { duplicatePolicy: 'allow' },
    submitter: { notFoundGraceMs: 60_000, reconcileLeaseMs: 120_000 },
  });
  // Two rows whose creates never reached the service (500, nothing committed): UNKNOWN.
  p.sandbox.setFaults({ errorRate: 1, endpoints: [CREATE_PATH] });
  const batchId = await p.insertReadyBatch(['ST-1', 'ST-2'].map((r) => payoutRequest(r)));
  await p.submit();
  p.sandbox.setFaults({ errorRate: 0 });
  expect(await p.states(batchId)).toEqual(['UNKNOWN', 'UNKNOWN']);
  expect(p.ledgerCount('ST-1')).toBe(0);

  // Instance A: its answer about ST-2 alone comes back slowly (slow service / 429 Retry-After / a long list).
  const a = heldReconciler(p, (refs) => refs.length === 1 && refs[0] === 'ST-2');
  // The service is flaky for instance B: the create answers are lost, and after them the reference queries fail.
  let created = false;
  const flaky = serviceLike(p.client, {
    createPayout: (...a) => {
      created = true;
      return p.client.createPayout(...a);
    },
    async queryByReferences(refs, signal): Promise<PayoutQueryAnswer> {
      if (created) throw new Error('service unavailable');
      return p.client.queryByReferences(refs, signal);
    },
  });
  const b = new PayoutSubmitter(
    { db: p.db, service: flaky, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 },
    { ...p.submitterOptions, claimant: { instanceId: 'B', leaseMs: 120_000 } },
  );
  // Each instance also counts the grace from its own first look at a row: A and B have each asked about the rows
  // once (and were told to wait) before the round below.
  for (const instance of [a.submitter, b]) {
    p.clock.advance(60_000);
    await instance.reconcileUnknown(p.signal);
    expect(await p.states(batchId)).toEqual(['UNKNOWN', 'UNKNOWN']);
  }
  expect(p.ledgerCount('ST-1')).toBe(0);
  p.clock.advance(60_000);
  const roundA = a.submitter.reconcileUnknown(p.signal);
  while (!a.held()) await new Promise((r) => setTimeout(r, 5));
  // A has decided ST-1 "absent, safe to create" from an answer of now, and waits for ST-2's.

  // A's claim (lease 120 s) runs out; instance B reconciles the same rows, creates them, and the create
  // answers are lost (committed at the service, answer dropped): UNKNOWN again.
  p.clock.advance(121_000);
  p.sandbox.setFaults({ commitThenDropRate: 1, endpoints: [CREATE_PATH] });
  await b.runOnce(p.signal);
  p.sandbox.setFaults({ commitThenDropRate: 0 });
  expect(await p.states(batchId)).toEqual(['UNKNOWN', 'UNKNOWN']);
  expect(p.ledgerCount('ST-1')).toBe(1);

  // A's answer about ST-2 arrives; A applies its round's moves.
  a.release();
  await roundA;
  // Its moves were decided before B's creates: the rows stay as B left them, to be resolved by query.
  expect(await p.states(batchId)).toEqual(['UNKNOWN', 'UNKNOWN']);

  p.clock.advance(5_000);
  await p.submit();
  expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING']);
  expect(p.ledgerCount('ST-1')).toBe(1);
  expect(p.ledgerCount('ST-2')).toBe(1);
});

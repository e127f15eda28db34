/**
 * A final answer older than a webhook: the poll's query is answered PAID by the real sandbox, and while that answer
 * is still on its way back (held by a proxy) the service reverses the payout to CANCELLED and says so in a signed
 * payout.updated event, which the real receiver follows up (the row made due) and commits before answering 200.
 * The answer was read before the event: it must not settle the row. The row stays PENDING and due, and the next
 * pass records what the service says now. Run on SQLite and PostgreSQL.
 */
import { expect } from 'vitest';
import { PayoutApiClient } from '../../src/api/index.js';
import { SettlementPoller, type PollerOptions } from '../../src/poll/index.js';
import { startMitm } from '../api/mitm.js';
import { deliver } from '../webhook/final-rows-world.js';
import { PATH, startReceiver } from '../webhook/helpers.js';
import { QUERY_PATH, payoutRequest, type Pipeline } from './harness.js';

export async function finalAnswerBeforeWebhook(p: Pipeline, poller: Partial<PollerOptions>): Promise<void> {
  const batchId = await p.insertReadyBatch([payoutRequest('FA-1')]);
  await p.submit();
  const payoutId = (await p.row('FA-1')).payoutId as string;
  expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });

  // The poller's client reaches the sandbox through a proxy that holds the first query's answer on its way back.
  const proxy = await startMitm(p.sandbox.url);
  let answered!: (text: string) => void;
  const heldAnswer = new Promise<string>((r) => (answered = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  proxy.holdAnswer = (path, text) => {
    if (path !== QUERY_PATH) return null;
    proxy.holdAnswer = null;
    answered(text);
    return released;
  };
  try {
    const polling = new SettlementPoller(
      { db: p.db, service: new PayoutApiClient({ ...p.clientOptions, baseUrl: proxy.url }), clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, ...poller },
    );
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    const pass = polling.runPass(p.signal);
    expect(await heldAnswer).toContain('"status":"PAID"');

    // Meanwhile the service reverses the payout, and its event is recorded and followed up before the answer lands.
    expect(p.sandbox.reverse(payoutId, 'CANCELLED')).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'FA-1', status: 'CANCELLED' });
    release();
    await pass;

    // Read before the event, the answer settles nothing: the row stays PENDING, due for a query now.
    const row = await p.row('FA-1');
    expect(row.state).toBe('PENDING');
    expect(row.nextPollAt).toBeLessThanOrEqual(p.clock.now());
    expect(await p.events('FA-1')).not.toContain('settled');

    // The next pass asks again and records the service's latest word.
    await polling.runPass(p.signal);
    expect(await p.states(batchId)).toEqual(['CANCELLED']);
    expect(p.logLines.filter((l) => l.includes('was not recorded: the row changed while the query was out'))).toHaveLength(1);
  } finally {
    release();
    await proxy.close();
  }
}

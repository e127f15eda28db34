/**
 * A webhook that arrives while a query of its payout is on the wire: the answer, read by the service before the
 * payout settled, still says PENDING. The row must stay due now (the webhook's word), not be put back by that
 * older answer's backoff: the next pass asks again and finds it settled. Run on SQLite and PostgreSQL.
 */
import { expect } from 'vitest';
import { SettlementPoller } from '../../src/poll/index.js';
import { followUpNamed } from '../../src/webhook/receiver.js';
import { gate, payoutRequest, serviceLike, type Pipeline } from './harness.js';

export async function webhookDuringPoll(p: Pipeline): Promise<void> {
  const batchId = await p.insertReadyBatch([payoutRequest('WD-1')]);
  await p.submit();
  const payoutId = (await p.row('WD-1')).payoutId as string;
  // The service's answer (PENDING) is back, and held before the poller records it.
  const held = gate();
  let answered!: () => void;
  const back = new Promise<void>((r) => (answered = r));
  const service = serviceLike(p.client, {
    async queryByPayoutIds(ids, signal) {
      const answer = await p.client.queryByPayoutIds(ids, signal);
      answered();
      await held.at();
      return answer;
    },
  });
  const poller = new SettlementPoller({ db: p.db, service, clock: p.clock, logger: p.logger }, p.pollerOptions);
  p.clock.advance(p.pollerOptions.maxIntervalMs);
  const pass = poller.runPass(p.signal);
  await back;
  // Meanwhile the payout is paid and the webhook says so: the row is made due now.
  p.sandbox.settle({ payoutId }, 'PAID');
  p.clock.advance(1000);
  await followUpNamed(p.db, p.clock, p.logger, { payoutId, merchantReferenceId: 'WD-1', status: 'PAID' });
  const dueAt = p.clock.now();
  held.open();
  await pass;
  expect(await p.states(batchId)).toEqual(['PENDING']);
  expect((await p.row('WD-1')).nextPollAt).toBe(dueAt);
  // The next pass, without waiting for any backoff, finds it paid.
  await poller.runPass(p.signal);
  expect(await p.states(batchId)).toEqual(['PAID']);
}

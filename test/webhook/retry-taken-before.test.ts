/**
 * A retry file finance took before the payout service contradicted its cancelled row. The daemon as `payoutd run`
 * wires it, the webhook receiver waking its poller: a batch finishes with a CANCELLED row and its retry file is
 * written and downloaded; then the service reverses that payout to PAID and says so in a signed payout.updated
 * event, and the query confirms it. The downloaded retry file, dropped afterwards, is refused (the payout may
 * have been paid), saying why and what to do; once a later check finds the payout CANCELLED after all, the same
 * file pays the retry.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { dropDecided, firstAcceptedBatch, outboxFile, retryFileDaemon, stopPipelineDaemons } from '../pipeline/daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor } from '../pipeline/harness.js';
import { closeAll } from './helpers.js';
import { daemonReceiver, deliver } from './final-rows-world.js';

afterEach(async () => {
  await closeAll();
  await stopPipelineDaemons();
  await closePipelines();
});

it('a retry file taken before the service reported its cancelled row PAID is refused, and pays once the service agrees again', async () => {
  const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
  const { daemon, inbox, outbox } = await retryFileDaemon(p);
  // Accounts ending 0000 are cancelled by the sandbox.
  await writeFile(join(inbox, 'wh.csv'), csvFile([csvRow('WC-1'), csvRow('WC-2', { 'beneficiary.accountNumber': '2222220000' })]));
  await daemon.start();
  const h = await daemonReceiver(p, daemon);
  const batchId = (await firstAcceptedBatch(p, daemon)).id;
  await waitFor(async () => (await p.batch(batchId)).state === 'COMPLETE', 'the batch to complete', 15_000);
  expect(await p.states(batchId)).toEqual(['PAID', 'CANCELLED']);
  await waitFor(async () => (await outboxFile(outbox, batchId, '.retry.csv')) !== null, 'the retry file');
  // Finance downloads the retry file and corrects the account that made the payout fail.
  const taken = (await outboxFile(outbox, batchId, '.retry.csv')) as string;
  expect(taken).toContain('WC-2-R1');
  const retry = taken.replace('2222220000', '2222221234');

  // The service reverses WC-2 and a signed event says PAID; the query confirms it.
  const payoutId = (await p.row('WC-2')).payoutId as string;
  /** The service moves WC-2's payout to `status`, and an event reports it PAID: payoutd asks the service. */
  const reverseAndTell = async (status: 'PAID' | 'CANCELLED'): Promise<void> => {
    expect(p.sandbox.reverse(payoutId, status)).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'WC-2', status: 'PAID' });
  };
  await reverseAndTell('PAID');
  await waitFor(async () => (await p.row('WC-2')).serviceNote?.includes('now reports PAID') === true, 'the service to be asked', 10_000);

  // The retry file taken before is dropped: refused, nothing sent for it.
  const refused = await dropDecided(p, daemon, inbox, 'wh.retry.csv', retry);
  expect((await p.batch(refused)).state).toBe('REJECTED');
  expect((await p.rows(refused)).map((r) => [r.merchantReferenceId, r.state, r.reasonCode])).toEqual([
    ['WC-2-R1', 'DUPLICATE', 'RETRY_DUPLICATE'],
  ]);
  const message =
    `the reference WC-2-R1 retries WC-2, which line 3 of "wh.csv" (batch ${batchId}, received ` +
    `${new Date((await p.batch(batchId)).receivedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC) recorded CANCELLED as WC-2, ` +
    `but the payout service reports otherwise for payout ${payoutId}; this row is not paid: check payout ${payoutId} with the ` +
    `payout service before sending this retry again under any reference (payoutd status --batch ${batchId}, line 3, says what ` +
    `payoutd knows of it); if this row is another payout, not a retry, give it a reference not ending in -R1`;
  expect((await listBatchErrors(p.db, refused)).map((e) => [e.line, e.code, e.message])).toEqual([[2, 'RETRY_DUPLICATE', message]]);
  await waitFor(async () => (await outboxFile(outbox, refused, '.ack.csv')) !== null, 'the ack');
  expect(await outboxFile(outbox, refused, '.ack.csv')).toContain(
    `recorded CANCELLED as WC-2, but the payout service reports otherwise for payout ${payoutId}`,
  );
  expect(p.sandbox.ledger().filter((e) => e.merchantReferenceId === 'WC-2-R1')).toEqual([]);

  // The service reverses it back and a later event makes payoutd ask again: the check agrees with CANCELLED.
  await reverseAndTell('CANCELLED');
  await waitFor(
    () => p.logLines.some((l) => l.includes('the payout service shows this row as recorded (CANCELLED)')),
    'the check to agree',
    10_000,
  );
  expect(await p.row('WC-2')).toMatchObject({ state: 'CANCELLED', serviceCheck: null, serviceNote: null });

  // The same retry file dropped again pays WC-2 once.
  const paid = await dropDecided(p, daemon, inbox, 'wh.retry.csv', retry);
  await waitFor(async () => (await p.batch(paid)).state === 'COMPLETE', 'the retry to complete', 15_000);
  expect(await p.states(paid)).toEqual(['PAID']);
  await daemon.stop();
  expect(
    p.sandbox
      .ledger()
      .filter((e) => e.merchantReferenceId.startsWith('WC-2'))
      .map((e) => [e.merchantReferenceId, e.status]),
  ).toEqual([
    ['WC-2', 'CANCELLED'],
    ['WC-2-R1', 'PAID'],
  ]);
}, 60_000);

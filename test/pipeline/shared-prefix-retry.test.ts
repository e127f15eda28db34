/**
 * Originals whose references merely end like retry rounds (INV-R1, INV-R2; no row INV): the daemon's retry file
 * gives each its own round, and that file dropped back into the inbox is accepted whole, each row a retry of its
 * own original.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { dropDecided, firstAcceptedBatch, outboxFile, retryFileDaemon, stopPipelineDaemons } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

it('retries INV-R1 and INV-R2 as INV-R1-R1 and INV-R2-R1, and accepts that retry file', async () => {
  const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
  const { daemon, inbox, outbox } = await retryFileDaemon(p);
  // Accounts ending 0000 are cancelled by the sandbox.
  await writeFile(
    join(inbox, 'inv.csv'),
    csvFile([
      csvRow('INV-R1', { 'beneficiary.accountNumber': '1111110000' }),
      csvRow('INV-R2', { 'beneficiary.accountNumber': '2222220000' }),
      csvRow('INV-R3'),
    ]),
  );
  await daemon.start();
  const batchId = (await firstAcceptedBatch(p, daemon)).id;
  await waitFor(async () => (await p.batch(batchId)).state === 'COMPLETE', 'the batch to complete', 15_000);
  expect(await p.states(batchId)).toEqual(['CANCELLED', 'CANCELLED', 'PAID']);
  await waitFor(async () => (await outboxFile(outbox, batchId, '.retry.csv')) !== null, 'the retry file');
  const retry = (await outboxFile(outbox, batchId, '.retry.csv')) as string;
  expect(retry).toContain('INV-R1-R1');
  expect(retry).toContain('INV-R2-R1');

  const second = await dropDecided(p, daemon, inbox, 'retry.csv', retry);
  expect((await p.batch(second)).state).not.toBe('REJECTED');
  const rows = (await p.db('payouts').where({ batch_id: second }).orderBy('line').select('merchant_reference_id', 'reason_code')) as {
    merchant_reference_id: string;
    reason_code: string | null;
  }[];
  expect(rows.map((r) => r.merchant_reference_id)).toEqual(['INV-R1-R1', 'INV-R2-R1']);
  expect(rows.filter((r) => r.reason_code !== null && r.reason_code !== 'CANCELLED')).toEqual([]);
  await daemon.stop();
});

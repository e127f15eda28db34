/**
 * Originals whose references merely end like retry rounds (INV-R1, INV-R2; no row INV): the daemon's retry file
 * gives each its own round, and that file dropped back into the inbox is accepted whole, each row a retry of its
 * own original.
 */
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { dropDecided, firstAcceptedBatch, outboxFile, retryFileDaemon, stopPipelineDaemons } from './daemon-world.js';
import { writeRetryFileAt } from '../../src/report/retry.js';
import { batchRetrySource } from '../../src/store/reports.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

/**
 * Pays a file of INV-R1 and INV-R2 (both cancelled: accounts ending 0000 are cancelled by the sandbox), and `more`,
 * through a daemon writing retry files; returns the daemon, its batch and its retry file once written.
 */
async function cancelledOriginals(more: string[] = []) {
  const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
  const { daemon, inbox, outbox } = await retryFileDaemon(p);
  await writeFile(
    join(inbox, 'inv.csv'),
    csvFile([
      csvRow('INV-R1', { 'beneficiary.accountNumber': '1111110000' }),
      csvRow('INV-R2', { 'beneficiary.accountNumber': '2222220000' }),
      ...more.map((reference) => csvRow(reference)),
    ]),
  );
  await daemon.start();
  const batchId = (await firstAcceptedBatch(p, daemon)).id;
  await waitFor(async () => (await p.batch(batchId)).state === 'COMPLETE', 'the batch to complete', 15_000);
  await waitFor(async () => (await outboxFile(outbox, batchId, '.retry.csv')) !== null, 'the retry file');
  const retry = (await outboxFile(outbox, batchId, '.retry.csv')) as string;
  return { p, daemon, inbox, outbox, batchId, retry };
}

it('retries INV-R1 and INV-R2 as INV-R1-R1 and INV-R2-R1, and accepts that retry file', async () => {
  const { p, daemon, inbox, batchId, retry } = await cancelledOriginals(['INV-R3']);
  expect(await p.states(batchId)).toEqual(['CANCELLED', 'CANCELLED', 'PAID']);
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

it("once one supplier's own retry is paid, still offers the other its own round and never shows it retried", async () => {
  const { p, daemon, inbox, outbox, batchId: first, retry } = await cancelledOriginals();

  // Finance corrects supplier A's account only: A's retry is paid, B's is cancelled again.
  const second = await dropDecided(p, daemon, inbox, 'retry.csv', retry.replace('1111110000', '1111111111'));
  await waitFor(async () => (await p.batch(second)).state === 'COMPLETE', 'the retry batch to complete', 15_000);
  expect(await p.states(second)).toEqual(['PAID', 'CANCELLED']);

  // The retry file of the retry batch offers B its next own round.
  await waitFor(async () => (await outboxFile(outbox, second, '.retry.csv')) !== null, 'the second retry file');
  const again = (await outboxFile(outbox, second, '.retry.csv')) as string;
  expect(again).toContain('INV-R2-R2');
  expect(again).not.toContain('INV-R1-R');

  // The first file's retry file written again: A retried and paid, B still offered, not shown as retried.
  const dir = await mkdtemp(join(tmpdir(), 'shared-prefix-'));
  const corrected = await writeRetryFileAt(join(dir, 'corrected.csv'), batchRetrySource(p.db, first));
  expect(corrected.skipped).toEqual([{ line: 2, merchantReferenceId: 'INV-R1', retriedAs: 'INV-R1-R1', state: 'PAID' }]);
  expect(corrected.rowCount).toBe(1);
  expect(await readFile(join(dir, 'corrected.csv'), 'utf8')).toContain('INV-R2-R2');
  await daemon.stop();
});

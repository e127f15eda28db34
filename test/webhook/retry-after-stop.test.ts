/**
 * A stop between a batch's retry file and its COMPLETE (the finisher writes the result file, the retry file, then
 * completes the batch): it is finished again at the next start. When by then the service contradicts its CANCELLED
 * row (now PAID), no row is left to retry, and the retry file the first finish wrote must not stay in the outbox.
 */
import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { closePipelines } from '../pipeline/harness.js';
import { closeAll } from './helpers.js';
import { checkOwed, deliver, finalRows, stoppingFinisher } from './final-rows-world.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

describe('a batch finished again after a stop', () => {
  it('leaves no retry file offering a CANCELLED row the service now reports PAID', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'RS-1': 'CANCELLED', 'RS-2': 'PAID' });
    const dir = join(p.dir, 'outbox');
    await mkdir(dir, { recursive: true });
    const extras = { xlsx: true, retryFiles: true };
    // The first finish writes the result file and the retry file (and their twins), then the process stops.
    const outbox = new BatchOutbox(p.db, dir, false, undefined, extras);
    const batch = await p.batch(batchId);
    await outbox.writeResult(batch);
    expect((await outbox.writeExtras(batch)).retry?.rowCount).toBe(1);
    const retries = async (): Promise<string[]> => (await readdir(dir)).filter((f) => f.includes('.retry.')).sort();
    expect((await retries()).map((f) => f.slice(f.indexOf('.retry.')))).toEqual(['.retry.csv', '.retry.xlsx']);

    // While it is stopped the service reverses the payout to PAID and says so; the check is answered.
    const payoutId = payoutIds.get('RS-1') as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'RS-1', status: 'PAID', eventId: 'EV-RS-1' });
    await checkOwed(p, 'RS-1');
    await p.poll();
    expect((await p.row('RS-1')).serviceNote).toContain('now reports PAID');

    // The restarted daemon finishes the batch: its result file tells of the service's word, and no retry file offers the row.
    expect(await stoppingFinisher(p, dir, undefined, extras).pass()).toBe(1);
    expect((await p.batch(batchId)).state).toBe('COMPLETE');
    const files = await readdir(dir);
    const result = await readFile(join(dir, files.find((f) => f.endsWith('.result.csv')) as string), 'utf8');
    expect(result).toContain('now reports PAID');
    expect(await retries()).toEqual([]);
  });
});

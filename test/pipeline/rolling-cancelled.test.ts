/**
 * The 24-hour total the approval limits compare a batch with counts what the batches let go. A batch an operator
 * cancelled before any of its rows was sent let nothing go: counted, it held or refused the next legitimate batch.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rollingTotals } from '../../src/store/approvals.js';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { claimReadyRows } from '../../src/store/claims.js';
import { getBatch, insertBatch, receivedBatch } from '../../src/store/index.js';
import { closePipelines, csvFile, csvRow, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

const DAY_MS = 24 * 3600_000;

/** A file read and accepted after an operator cancelled it while it was queued: none of its rows is ever sent. */
async function cancelledWhileQueued(p: Pipeline, id: string, name: string, refs: string[]): Promise<void> {
  const claimed = await p.claim(name, csvFile(refs.map((r) => csvRow(r))));
  const { storedPath, sha256, size, mtimeMs, doneMarker } = claimed;
  const file = { id, fileName: claimed.originalName, storedPath, controlPath: null, sha256, size, mtimeMs, doneMarker };
  await insertBatch(p.db, receivedBatch(file, p.clock.now()));
  await cancelReadyRows(p.db, id, 'cancelled by an operator: queued by mistake', p.clock.now(), 'ops');
  await p.intake.process(id);
  await p.submit();
}

describe('the 24-hour total of the approval limits', () => {
  it('leaves out a batch cancelled before any of its rows was sent', async () => {
    const p = await startPipeline();
    await cancelledWhileQueued(p, 'B-QUEUED', 'queued.csv', ['CQ-1', 'CQ-2']);
    expect((await getBatch(p.db, 'B-QUEUED'))?.cancelledAt).not.toBeNull();
    expect(await p.states('B-QUEUED')).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(await rollingTotals(p.db, p.clock.now() - DAY_MS, 'NEXT')).toEqual({});
  });

  it('still counts a cancelled batch a row of which was sent', async () => {
    const p = await startPipeline();
    const batch = await p.intake.receive(await p.claim('sent.csv', csvFile([csvRow('CS-1'), csvRow('CS-2')])));
    const before = await rollingTotals(p.db, p.clock.now() - DAY_MS, 'NEXT');
    expect(Object.keys(before)).not.toHaveLength(0);
    // One row is claimed for its create (it may reach the payout service) before the operator's cancel.
    expect(await claimReadyRows(p.db, 1, p.clock.now())).toHaveLength(1);
    expect((await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: too late', p.clock.now(), 'ops')).claimed).toBe(1);
    expect(await rollingTotals(p.db, p.clock.now() - DAY_MS, 'NEXT')).toEqual(before);
  });
});

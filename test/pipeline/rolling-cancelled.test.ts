/**
 * The 24-hour total the approval limits compare a batch with counts what the batches let go. A batch an operator
 * cancelled counts only the rows it sent or may have sent: its rows left NOT_SUBMITTED will never be paid, and
 * counted they held or refused the next legitimate batch.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { claimReadyRows } from '../../src/store/claims.js';
import { getBatch, insertBatch, receivedBatch } from '../../src/store/index.js';
import { useStore } from '../finance/helpers.js';
import { checkCancelledBatchCountsWhatMayHaveBeenSent, checkDecisionReadsNoRowsUnderLock, totalsFrom } from '../store/rolling-states.js';
import { pipelineDaemon, stopPipelineDaemons } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

const DAY_MS = 24 * 3600_000;
const store = useStore();

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
    expect(await totalsFrom(p.db, p.clock.now() - DAY_MS)).toEqual({});
  });

  it('counts of a cancelled batch the row claimed for its create, not the row left unsent', async () => {
    const p = await startPipeline();
    const batch = await p.intake.receive(await p.claim('sent.csv', csvFile([csvRow('CS-1'), csvRow('CS-2', { payoutAmount: '7' })])));
    expect(await totalsFrom(p.db, p.clock.now() - DAY_MS)).toEqual({ PHP: '107.5' });
    // One row is claimed for its create (it may reach the payout service) before the operator's cancel.
    expect(await claimReadyRows(p.db, 1, p.clock.now())).toHaveLength(1);
    expect((await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: too late', p.clock.now(), 'ops')).claimed).toBe(1);
    expect(await p.states(batch.id)).toEqual(['CREATING', 'NOT_SUBMITTED']);
    expect(await totalsFrom(p.db, p.clock.now() - DAY_MS)).toEqual({ PHP: '100.5' });
  });

  it('counts the rows of a cancelled batch that were or may have been sent, by state', async () => {
    await checkCancelledBatchCountsWhatMayHaveBeenSent((await store()).db);
  });

  it('reads the rows of a cancelled batch before the decision takes its lock, and only with a 24-hour limit', async () => {
    await checkDecisionReadsNoRowsUnderLock((await store()).db);
  });

  it('lets the next batch go when it fits beside what a batch cancelled midway sent', async () => {
    // One slot and a slow service: the first row is on the wire when the operator cancels, the others are not sent.
    const p = await startPipeline({ startMs: Date.now(), sandbox: { faults: { latencyMs: 400 } } });
    const { daemon, inbox } = await pipelineDaemon(p, {
      inbox: { stableForMs: 20, rescanIntervalMs: 50 },
      batch: { balanceCheck: { enabled: false } },
      submit: { concurrency: 1 },
      limits: { onExceeded: 'refuse', perCurrency: { PHP: { max24h: '3500' } } },
    });
    await daemon.start();
    const decided = async (name: string, refs: string[]): Promise<string> => {
      await writeFile(join(inbox, name), csvFile(refs.map((r) => csvRow(r, { payoutAmount: '1000' }))));
      let id: string | undefined;
      await waitFor(async () => {
        await daemon.tickInbox();
        const b = (await p.db('batches').where({ file_name: name }).first('id', 'state')) as { id: string; state: string } | undefined;
        id = b && b.state !== 'RECEIVED' && b.state !== 'VALIDATING' ? b.id : undefined;
        return id !== undefined;
      }, `${name} to be accepted or refused`);
      return id as string;
    };

    const first = await decided('first.csv', ['CM-1', 'CM-2', 'CM-3']);
    await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');
    await cancelReadyRows(p.db, first, 'cancelled by an operator: wrong file', Date.now(), 'ops');
    const unsent = ['PENDING', 'NOT_SUBMITTED', 'NOT_SUBMITTED'];
    await waitFor(async () => (await p.states(first)).join() === unsent.join(), 'the rows not sent to end NOT_SUBMITTED');
    expect(p.createRequests()).toBe(1);

    // 1000 PHP sent and 2000 PHP more is within 3500 PHP; the 2000 PHP never sent must not count.
    const second = await decided('second.csv', ['CN-1', 'CN-2']);
    expect(await getBatch(p.db, second)).toMatchObject({ state: 'ACTIVE', rejectCode: null, approvalState: 'NONE' });
  });
});

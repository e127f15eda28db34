/**
 * Events about a payout whose row is already final: a row paid through the real sandbox, then a signed
 * `payout.updated` delivery saying something else of it. The row stays as recorded (spec 3 shows no move out
 * of a final status, and the event proves nothing by itself); a person is told, and its history says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closePipelines, payoutRequest, startPipeline, waitFor, type Pipeline } from '../pipeline/harness.js';
import { PATH, closeAll, eventBody, parsedLines, send, signedHeaders, startReceiver, type Harness } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

/** A row paid and recorded PAID by the poller, and a receiver on the same database with the default follow-up. */
async function paidRow(ref: string): Promise<{ p: Pipeline; h: Harness; batchId: string; payoutId: string }> {
  const p = await startPipeline({ sandbox: { settlement: { minDelayMs: 10, maxDelayMs: 10 } } });
  const batchId = await p.insertReadyBatch([payoutRequest(ref)]);
  await p.submit();
  await waitFor(() => p.sandbox.stats().pending === 0, 'settlement');
  p.clock.advance(5000);
  await p.poll();
  expect(await p.states(batchId)).toEqual(['PAID']);
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
  return { p, h, batchId, payoutId: (await p.row(ref)).payoutId as string };
}

async function deliver(h: Harness, event: Parameters<typeof eventBody>[0]): Promise<void> {
  const body = eventBody(event);
  expect((await send(h.url, { body, headers: signedHeaders(body, h.clock) })).status).toBe(200);
}

/** The receiver's log lines about a reference, once its follow-up wrote one. */
async function linesAbout(h: Harness, ref: string): Promise<Record<string, unknown>[]> {
  const about = (): Record<string, unknown>[] => parsedLines(h.logs).filter((l) => l['merchantReferenceId'] === ref);
  await waitFor(() => about().some((l) => l['level'] !== 'debug'), 'the follow-up');
  return about();
}

describe('a payout.updated event for a row already final', () => {
  it('CANCELLED for a row recorded PAID: an ERROR naming the row, a history entry, the row stays PAID', async () => {
    const { p, h, batchId, payoutId } = await paidRow('FR-1');
    await deliver(h, { payoutId, merchantReferenceId: 'FR-1', status: 'CANCELLED', eventId: 'EV-FR-1' });
    const lines = await linesAbout(h, 'FR-1');
    const errors = lines.filter((l) => l['level'] === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      batchId,
      line: 2,
      merchantReferenceId: 'FR-1',
      payoutId,
      eventId: 'EV-FR-1',
      recordedState: 'PAID',
      reportedStatus: 'CANCELLED',
    });
    expect(errors[0]?.['msg']).toContain('check this payout with the payout service');
    expect(lines.map((l) => l['msg'])).not.toContain('webhook accepted: payout due for a query');
    expect(await p.states(batchId)).toEqual(['PAID']);
    const history = await p.events('FR-1');
    expect(history.at(-1)).toBe('webhook-contradicted');
    // Nothing is created or moved: the poller does not follow a final row.
    p.clock.advance(120_000);
    await p.poll();
    expect(await p.states(batchId)).toEqual(['PAID']);
    expect(p.ledgerCount('FR-1')).toBe(1);
  });

  it('PAID for a row recorded PAID: nothing to do, said truthfully, no history entry', async () => {
    const { p, h, payoutId } = await paidRow('FR-2');
    const before = await p.events('FR-2');
    await deliver(h, { payoutId, merchantReferenceId: 'FR-2', status: 'PAID' });
    const lines = await linesAbout(h, 'FR-2');
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
    expect(lines.map((l) => l['msg'])).toContain('webhook accepted: the row is already final; nothing to do');
    expect(lines.map((l) => l['msg'])).not.toContain('webhook accepted: payout due for a query');
    expect(await p.events('FR-2')).toEqual(before);
  });

  it('an event naming another payout under the reference touches nothing of the row', async () => {
    const { p, h, batchId } = await paidRow('FR-3');
    const before = await p.events('FR-3');
    await deliver(h, { payoutId: 'PO-NOT-THIS-ROWS', merchantReferenceId: 'FR-3', status: 'CANCELLED' });
    const lines = await linesAbout(h, 'FR-3');
    expect(lines.map((l) => l['msg'])).toContain('webhook accepted: no PENDING row of this payout here; nothing made due');
    expect(lines.filter((l) => l['level'] === 'warn' || l['level'] === 'error')).toEqual([]);
    expect(await p.events('FR-3')).toEqual(before);
    expect(await p.states(batchId)).toEqual(['PAID']);
  });
});

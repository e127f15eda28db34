/**
 * Unknown outcomes are resolved beside the sending: in one long pass of
 * thousands of creates at low concurrency, with some creates committed and
 * then cut off (UNKNOWN), each UNKNOWN row is queried and adopted while the
 * pass still sends, a few creates later, not after the pass. And credentials
 * the service refuses as expired (1009) are renewed once for all the creates
 * they failed, each refusal written in its row's history.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, payoutRequest, startPipeline } from './harness.js';

afterEach(closePipelines);

interface Entry {
  id: number;
  payout_row_id: number;
  event: string;
}

describe('pipeline: unknown outcomes resolved beside the sending', () => {
  it('UNKNOWN rows met in a pass of 2000 creates are queried and adopted while the pass still sends', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { concurrency: 2 } });
    p.sandbox.setFaults({ commitThenDropRate: 0.01, endpoints: [CREATE_PATH] });
    const refs = Array.from({ length: 2000 }, (_, i) => `LP-${i + 1}`);
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));

    await p.submit(); // one pass

    const history = (await p.db('payout_history').orderBy('id').select('id', 'payout_row_id', 'event')) as Entry[];
    const unknown = history.filter((h) => h.event === 'create-unknown');
    expect(unknown.length, 'creates were cut after their commit').toBeGreaterThan(5);
    expect(unknown.length).toBe(p.sandbox.stats().faults.commitThenDrop);
    const created = history.filter((h) => h.event === 'created').map((h) => h.id);
    expect(created.length).toBe(refs.length - unknown.length);
    for (const u of unknown) {
      const found = history.find((h) => h.payout_row_id === u.payout_row_id && h.event === 'reconciled-found');
      expect(found, `row ${u.payout_row_id} adopted within the pass`).toBeDefined();
      // Resolved a few creates after its outcome became unknown, not after the rest of the pass.
      const createdMeanwhile = created.filter((id) => id > u.id && id < (found as Entry).id).length;
      expect(createdMeanwhile, `creates recorded while row ${u.payout_row_id} waited`).toBeLessThanOrEqual(100);
    }
    expect(new Set(await p.states(batchId))).toEqual(new Set(['PENDING']));
    // Each reference created once: an unknown outcome was resolved by a query, never by a second create.
    expect(p.sandbox.stats().creates).toBe(refs.length);
    expect(p.createRequests()).toBe(refs.length);
    expect(p.queryRequests()).toBeGreaterThan(0);
    expect(p.queryRequests()).toBeLessThanOrEqual(unknown.length);
    expect(p.calls.filter((c) => c.endpoint === QUERY_PATH && c.outcome !== 'ok')).toEqual([]);
  });
});

describe('pipeline: credentials refused as expired (1009)', () => {
  it('renewed once for all the creates they failed; each refusal is in its row history, each row created once', async () => {
    const refused: string[] = [];
    // The client's clock stands still: only the service sees the credentials expire.
    const p = await startPipeline({
      sandbox: { accessTokenTtlSeconds: 1 },
      submitter: { concurrency: 4 },
      client: { clock: new ManualClock(Date.now()), onCredentialsRefused: (code) => refused.push(code) },
    });
    await p.client.balances();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const refs = ['EX-1', 'EX-2', 'EX-3', 'EX-4'];
    const batchId = await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));

    await p.submit();

    expect(await p.states(batchId)).toEqual(refs.map(() => 'PENDING'));
    for (const ref of refs) expect(p.ledgerCount(ref)).toBe(1);
    expect(p.sandbox.stats().authFailures['1009']).toBeGreaterThan(0);
    // One renewal, and one word of it, however many creates it answered.
    expect(refused).toEqual(['1009']);
    expect(p.sandbox.stats().refreshesIssued + p.sandbox.stats().accessTokensIssued).toBe(2);
    const refusedRows = [];
    for (const ref of refs) {
      const events = await p.events(ref);
      if (events.includes('create-refused')) {
        refusedRows.push(ref);
        expect(events).toEqual(['intent', 'create-refused', 'created']);
      } else expect(events).toEqual(['intent', 'created']);
    }
    expect(refusedRows.length).toBe((p.sandbox.stats().authFailures['1009'] ?? 0) + (p.sandbox.stats().authFailures['1004'] ?? 0));
  });
});

/**
 * The settlement poller against the sandbox: queries in chunks of the
 * service's max ids, a bounded number of calls per pass, each payout on its
 * own backoff schedule, and a payout pending too long flagged but never
 * dropped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { nextPollDelay } from '../../src/poll/index.js';
import { listDueForPoll } from '../../src/store/settlement.js';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

function refs(n: number, prefix: string): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(4, '0')}`);
}

describe('pipeline: settlement poller', () => {
  it('queries 250 pending payouts in 3 calls of at most 100 ids per pass', async () => {
    const p = await startPipeline({ submitter: { concurrency: 8 } });
    const all = refs(250, 'CH');
    const batch = await p.receive('chunks.csv', csvFile(all.map((r) => csvRow(r))));
    await p.submit();
    expect(p.sandbox.stats().creates).toBe(250);
    expect(p.queryRequests()).toBe(0);

    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    expect(await listDueForPoll(p.db, p.clock.now(), 1000)).toHaveLength(250);
    expect(await p.poll()).toBe(0); // all still PENDING at the service
    expect(p.queryRequests()).toBe(3);
    const rows = await p.rows(batch.id);
    expect(rows.every((r) => r.pollCount === 1 && r.lastPolledAt === p.clock.now())).toBe(true);
    expect(rows.every((r) => r.nextPollAt === p.clock.now() + p.pollerOptions.minIntervalMs)).toBe(true);

    // Nothing due: no call at all.
    expect(await p.poll()).toBe(0);
    expect(p.queryRequests()).toBe(3);
  });

  it('bounds a pass by maxCallsPerPass; the rest are polled on the next pass', async () => {
    const p = await startPipeline({ poller: { queryMaxIds: 10, maxCallsPerPass: 2 } });
    const batch = await p.receive('bounded.csv', csvFile(refs(25, 'MX').map((r) => csvRow(r))));
    await p.submit();
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await p.poll();
    expect(p.queryRequests()).toBe(2);
    expect((await p.rows(batch.id)).filter((r) => r.pollCount === 1)).toHaveLength(20);
    await p.poll();
    expect(p.queryRequests()).toBe(3);
    expect((await p.rows(batch.id)).filter((r) => r.pollCount === 1)).toHaveLength(25);
  });

  it('re-polls a held PENDING payout on its backoff schedule, flags it stale, never drops it, and adopts its settlement', async () => {
    const staleAfterMs = 30_000;
    const p = await startPipeline({ poller: { minIntervalMs: 2000, maxIntervalMs: 16_000, staleAfterMs } });
    const batch = await p.receive('held.csv', csvFile([csvRow('PH-1', { 'beneficiary.accountNumber': '1234569999' })]));
    const createdAt = p.clock.now();
    await p.submit();
    const created = await p.row('PH-1');
    expect(created.state).toBe('PENDING');
    expect(created.createdAtMs).toBe(createdAt);
    expect(created.nextPollAt).toBe(createdAt + p.submitterOptions.firstPollDelayMs);

    // Walk the schedule: each poll is exactly when due, never before.
    let due = created.nextPollAt as number;
    const polledAt: number[] = [];
    for (let count = 1; count <= 6; count++) {
      p.clock.set(due - 1);
      const before = p.queryRequests();
      await p.poll();
      expect(p.queryRequests()).toBe(before); // one ms early: not asked
      p.clock.set(due);
      await p.poll();
      expect(p.queryRequests()).toBe(before + 1);
      polledAt.push(due);
      const row = await p.row('PH-1');
      expect(row.state).toBe('PENDING');
      expect(row.pollCount).toBe(count);
      expect(row.nextPollAt).toBe(due + nextPollDelay(count, p.pollerOptions));
      due = row.nextPollAt as number;
    }
    // 2 s, 4 s, 8 s, 16 s, then capped at maxIntervalMs.
    expect(polledAt.slice(1).map((t, i) => t - (polledAt[i] as number))).toEqual([2000, 4000, 8000, 16_000, 16_000]);

    // Stale once older than staleAfterMs, flagged once, and still followed.
    const flagged = await p.row('PH-1');
    expect(p.clock.now() - createdAt).toBeGreaterThan(staleAfterMs);
    expect(flagged.staleFlaggedAt).not.toBeNull();
    expect(flagged.staleFlaggedAt).toBeGreaterThan(createdAt + staleAfterMs);
    expect(p.logLines.filter((l) => l.includes('STALE PAYOUT'))).toHaveLength(1);

    // Settled by hand at the service: PAID at the next due poll, not before.
    expect(p.sandbox.settle({ merchantReferenceId: 'PH-1' }, 'PAID')).toBe(1);
    p.clock.set(due - 1);
    expect(await p.poll()).toBe(0);
    expect((await p.row('PH-1')).state).toBe('PENDING');
    p.clock.set(due);
    expect(await p.poll()).toBe(1);
    const paid = await p.row('PH-1');
    expect(paid.state).toBe('PAID');
    expect(paid.completeTime).not.toBeNull();
    expect(paid.createdAtMs).toBe(createdAt);
    expect(paid.staleFlaggedAt).toBe(flagged.staleFlaggedAt);
    expect(p.logLines.filter((l) => l.includes('STALE PAYOUT'))).toHaveLength(1);
    const events = await p.events('PH-1');
    expect(events[0]).toBe('intent');
    expect(events[1]).toBe('created');
    expect(events.slice(2, -1).every((e) => e === 'polled')).toBe(true);
    expect(events.at(-1)).toBe('settled');
    expect(await p.states(batch.id)).toEqual(['PAID']);
  });

  it('a query failure reschedules the due payouts instead of dropping or hot-looping them', async () => {
    const p = await startPipeline({ client: { retry: { maxAttempts: 1 } } });
    await p.receive('qerr.csv', csvFile([csvRow('QE-1')]));
    await p.submit();
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    p.sandbox.setFaults({ errorRate: 1, endpoints: ['/apis/v1/fiat-payout/query'] });
    await p.poll();
    expect(p.queryRequests()).toBe(1);
    const row = await p.row('QE-1');
    expect(row.state).toBe('PENDING');
    expect(row.nextPollAt).toBe(p.clock.now() + p.pollerOptions.minIntervalMs);
    p.sandbox.setFaults({ errorRate: 0 });
    p.sandbox.settle({ merchantReferenceId: 'QE-1' }, 'CANCELLED');
    p.clock.advance(p.pollerOptions.minIntervalMs);
    expect(await p.poll()).toBe(1);
    const cancelled = await p.row('QE-1');
    expect(cancelled.state).toBe('CANCELLED');
    expect(cancelled.reason).toBe('CANCELLED_BY_SANDBOX');
  });
});

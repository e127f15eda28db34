/**
 * The settlement poller against the sandbox: queries in chunks of the
 * service's max ids, a bounded number of calls per pass, each payout on its
 * own backoff schedule, and a payout pending too long flagged but never
 * dropped.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PayoutService } from '../../src/domain/payout.js';
import { MIN_RATE_SAMPLE, ROUND_HEADROOM, SettlementPoller, nextPollDelay, roundMs } from '../../src/poll/index.js';
import { historyOf } from '../../src/store/moves.js';
import { listDueForPoll } from '../../src/store/settlement.js';
import { CREATE_PATH, closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

afterEach(closePipelines);

function refs(n: number, prefix: string): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}-${String(i + 1).padStart(4, '0')}`);
}

/** The pipeline's real client, with its payout query replaced (counted, delayed, failed on purpose). */
function withQuery(p: Pipeline, queryByPayoutIds: PayoutService['queryByPayoutIds']): PayoutService {
  return {
    createPayout: (req, s) => p.client.createPayout(req, s),
    queryByReferences: (refs, s) => p.client.queryByReferences(refs, s),
    balances: (s) => p.client.balances(s),
    exchangeRates: (c, s) => p.client.exchangeRates(c, s),
    queryByPayoutIds,
  };
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
    // The history states each new interval (2, 4, 8, 16 s): polls 5 and 6 only repeat the cap, and the row counts them.
    expect((await p.events('PH-1')).filter((e) => e === 'polled')).toHaveLength(4);

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

describe('pipeline: settlement poller with several calls on the wire', () => {
  const QUERY = '/apis/v1/fiat-payout/query';

  /** The pipeline's real client, counting the query calls it has on the wire; `failCall` aborts that call (1-based). */
  function countingService(p: Pipeline, failCall?: number) {
    const seen = { onWire: 0, most: 0, calls: 0, asked: [] as string[][], failedIds: [] as string[] };
    let failing: AbortController | undefined;
    const service = withQuery(p, async (ids, s) => {
      const n = ++seen.calls;
      seen.asked.push(ids);
      seen.onWire++;
      seen.most = Math.max(seen.most, seen.onWire);
      // A real call, really aborted once it is on the wire (when the fourth call starts): the client's own failure path.
      const abort = new AbortController();
      if (n === failCall) {
        seen.failedIds = ids;
        failing = abort;
      }
      if (n === 4) failing?.abort(new Error('test: this call fails'));
      try {
        return await p.client.queryByPayoutIds(ids, s ? AbortSignal.any([s, abort.signal]) : abort.signal);
      } finally {
        seen.onWire--;
      }
    });
    return { seen, service };
  }

  async function pendingBatch(p: Pipeline, n: number, prefix: string): Promise<string> {
    const batch = await p.receive(`${prefix}.csv`, csvFile(refs(n, prefix).map((r) => csvRow(r))));
    await p.submit();
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    return batch.id;
  }

  // exclusive: this process alone uses the database (SQLite), so a claim is a read and the calls out are kept apart in memory.
  it.each([
    { mode: 'claimed with a lease', exclusive: false },
    { mode: 'claimed by a read (exclusive)', exclusive: true },
  ])('keeps `concurrency` calls on the wire and asks about every payout exactly once per round ($mode)', async ({ exclusive }) => {
    const p = await startPipeline({ submitter: { concurrency: 16 } });
    const batchId = await pendingBatch(p, 250, 'CC');
    p.sandbox.setFaults({ latencyMs: 40, endpoints: [QUERY] });
    const { seen, service } = countingService(p);
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 4, exclusive };
    const poller = new SettlementPoller({ db: p.db, service, clock: p.clock, logger: p.logger }, o);

    expect(await poller.runPass(p.signal)).toEqual({ calls: 25, settled: 0 });
    expect(seen.most).toBe(4);
    expect(p.queryRequests()).toBe(25);
    // Each payout in exactly one call, and recorded once.
    const asked = seen.asked.flat();
    expect(new Set(asked).size).toBe(250);
    expect(asked).toHaveLength(250);
    const rows = await p.rows(batchId);
    expect(rows.every((r) => r.pollCount === 1 && r.nextPollAt === p.clock.now() + o.minIntervalMs)).toBe(true);
    for (const r of rows.slice(0, 5)) expect((await p.events(r.merchantReferenceId)).filter((e) => e === 'polled')).toHaveLength(1);

    // Settled at the service: the next round (one interval later) sees every one of them, still 25 calls.
    for (const ref of refs(250, 'CC')) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    p.clock.advance(o.minIntervalMs);
    expect(await poller.runPass(p.signal)).toEqual({ calls: 25, settled: 250 });
    expect(await p.states(batchId)).toEqual(Array(250).fill('PAID'));
    expect(await poller.runPass(p.signal)).toEqual({ calls: 0, settled: 0 });
  });

  it('exclusive: nothing is written while the calls are out; the rows are as they were until the answers are recorded', async () => {
    const p = await startPipeline({ submitter: { concurrency: 16 } });
    const batchId = await pendingBatch(p, 40, 'EX');
    const before = await p.rows(batchId);
    p.sandbox.setFaults({ latencyMs: 300, endpoints: [QUERY] });
    const poller = new SettlementPoller(
      { db: p.db, service: p.client, clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, queryMaxIds: 10, concurrency: 4, exclusive: true },
    );
    const running = poller.runPass(p.signal);
    await waitFor(() => p.queryRequests() === 4, 'four calls on the wire');
    expect(await p.rows(batchId)).toEqual(before);
    expect(await running).toEqual({ calls: 4, settled: 0 });
    expect((await p.rows(batchId)).every((r) => r.pollCount === 1)).toBe(true);
  });

  it('creates come first: while the submitter has creates out, due payouts wait, never longer than deferWhileSendingMs past due', async () => {
    const p = await startPipeline({ submitter: { concurrency: 4 } });
    const batchId = await pendingBatch(p, 20, 'DS');
    const o = { ...p.pollerOptions, queryMaxIds: 10, deferWhileSendingMs: 5000 };
    const poller = new SettlementPoller(
      { db: p.db, service: p.client, clock: p.clock, logger: p.logger, sending: () => p.submitter.sending },
      o,
    );
    // A second file is being sent (creates held on the wire by latency): the first file's due polls wait.
    await p.receive('DS2.csv', csvFile(refs(8, 'DT').map((r) => csvRow(r))));
    p.sandbox.setFaults({ latencyMs: 400, endpoints: [CREATE_PATH] });
    const sending = p.submit();
    await waitFor(() => p.submitter.sending, 'creates out');
    expect(await poller.runPass(p.signal)).toEqual({ calls: 0, settled: 0 });
    expect(p.queryRequests()).toBe(0);
    // Owed for longer than the bound: asked now, sending or not.
    p.clock.advance(o.deferWhileSendingMs);
    expect(p.submitter.sending).toBe(true);
    expect(await poller.runPass(p.signal)).toEqual({ calls: 2, settled: 0 });
    expect((await p.rows(batchId)).every((r) => r.pollCount === 1)).toBe(true);
    await sending;
    expect(p.submitter.sending).toBe(false);
    // Nothing out: a due payout is asked at once.
    p.sandbox.setFaults({});
    p.clock.advance(o.maxIntervalMs);
    expect((await poller.runPass(p.signal)).calls).toBeGreaterThan(0);
  });

  it('settlement sweep: an answer mostly settled makes the rest of its batch due now, once per minimum interval; a trickle never does', async () => {
    const p = await startPipeline({ submitter: { concurrency: 8 } });
    const batchId = await pendingBatch(p, 30, 'SW');
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 1, settlementSweep: true };
    const poller = new SettlementPoller({ db: p.db, service: p.client, clock: p.clock, logger: p.logger }, o);
    const later = p.clock.now() + 60_000;
    const ids = (await p.rows(batchId)).map((r) => r.id);
    // Lines 11-30 are not due for a minute; 1-10 are due now.
    await p.db('payouts').whereIn('id', ids.slice(10)).update({ next_poll_at: later });

    // A trickle: 1 of the 10 asked has settled. No sweep.
    p.sandbox.settle({ merchantReferenceId: 'SW-0001' }, 'PAID');
    expect(await poller.runPass(p.signal)).toEqual({ calls: 1, settled: 1 });
    expect((await p.rows(batchId)).slice(10).every((r) => r.nextPollAt === later)).toBe(true);

    // The whole batch settles at the service; the next answer (lines 2-10, due after their backoff) is all settled.
    for (const ref of refs(30, 'SW')) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    p.clock.advance(o.minIntervalMs);
    const swept = p.clock.now();
    expect(await poller.runPass(p.signal)).toEqual({ calls: 1, settled: 9 });
    const rest = (await p.rows(batchId)).slice(10);
    expect(rest.every((r) => r.state === 'PENDING' && r.nextPollAt === swept)).toBe(true);
    expect(p.logLines.filter((l) => l.includes('asking about the rest of the batch now'))).toHaveLength(1);
    // Asked at once, not a minute later.
    expect(await poller.runPass(p.signal)).toEqual({ calls: 2, settled: 20 });
    expect(await p.states(batchId)).toEqual(Array(30).fill('PAID'));
  });

  it('settlement sweep: throttled to once per minimum interval per batch, and off when not configured', async () => {
    const p = await startPipeline({ submitter: { concurrency: 8 } });
    const batchId = await pendingBatch(p, 40, 'ST');
    const ids = (await p.rows(batchId)).map((r) => r.id);
    const later = p.clock.now() + 60_000;
    await p.db('payouts').whereIn('id', ids.slice(20)).update({ next_poll_at: later });
    for (const ref of refs(20, 'ST')) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    const off = new SettlementPoller(
      { db: p.db, service: p.client, clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, queryMaxIds: 10 },
    );
    expect(await off.runPass(p.signal)).toEqual({ calls: 2, settled: 20 });
    expect((await p.rows(batchId)).slice(20).every((r) => r.nextPollAt === later)).toBe(true);

    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 1, settlementSweep: true };
    const on = new SettlementPoller({ db: p.db, service: p.client, clock: p.clock, logger: p.logger }, o);
    const sweeps = (): number => p.logLines.filter((l) => l.includes('asking about the rest of the batch now')).length;
    const dueNow = (from: number, to: number) => p.db('payouts').whereIn('id', ids.slice(from, to)).update({ next_poll_at: p.clock.now() });
    // Lines 21-30 settle and fall due: their answer is all settled, so 31-40 are pulled in.
    for (const ref of refs(30, 'ST').slice(20)) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    await dueNow(20, 30);
    expect(await on.runPass(p.signal)).toEqual({ calls: 1, settled: 10 });
    expect(sweeps()).toBe(1);
    // Still pending at the service: asked once, then on their backoff again.
    expect(await on.runPass(p.signal)).toEqual({ calls: 1, settled: 0 });
    // Within the minimum interval another all-settled answer (31-35) pulls nothing: 36-40 keep their backoff.
    for (const ref of refs(35, 'ST').slice(30)) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    await dueNow(30, 35);
    expect(await on.runPass(p.signal)).toEqual({ calls: 1, settled: 5 });
    expect(sweeps()).toBe(1);
    expect((await p.rows(batchId)).slice(35).every((r) => r.state === 'PENDING' && (r.nextPollAt ?? 0) > p.clock.now())).toBe(true);
    // An interval later the same happens again (36-37 settled, due): the batch is swept again.
    await p.db('payouts').whereIn('id', ids.slice(37)).update({ next_poll_at: later });
    p.clock.advance(o.minIntervalMs);
    for (const ref of refs(37, 'ST').slice(35)) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    await dueNow(35, 37);
    expect(await on.runPass(p.signal)).toEqual({ calls: 1, settled: 2 });
    expect(sweeps()).toBe(2);
    expect((await p.rows(batchId)).slice(37).every((r) => r.nextPollAt === p.clock.now())).toBe(true);
  });

  it('settlement sweep: while most of what was asked since came back settled, the batch is swept again an interval later; then no more', async () => {
    const p = await startPipeline({ submitter: { concurrency: 8 } });
    const batchId = await pendingBatch(p, 30, 'SF');
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 1, settlementSweep: true };
    const poller = new SettlementPoller({ db: p.db, service: p.client, clock: p.clock, logger: p.logger }, o);
    const ids = (await p.rows(batchId)).map((r) => r.id);
    const later = p.clock.now() + 60_000;
    const backoff = () => p.db('payouts').whereIn('id', ids.slice(25)).update({ next_poll_at: later });
    const followUps = (): number => p.logLines.filter((l) => l.includes('batch still settling')).length;
    await p.db('payouts').whereIn('id', ids.slice(10)).update({ next_poll_at: later });
    // The service settles all but lines 26-30 (they settle a moment later): the first answer sweeps the batch.
    for (const ref of refs(25, 'SF')) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    expect(await poller.runPass(p.signal)).toEqual({ calls: 1, settled: 10 });
    // The swept round asks 26-30 just before they settle: still PENDING, back on their backoff (a minute here).
    expect(await poller.runPass(p.signal)).toEqual({ calls: 2, settled: 15 });
    await backoff();
    for (const ref of refs(30, 'SF').slice(25)) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    // Within the interval no answer comes to sweep them.
    expect(await poller.runPass(p.signal)).toEqual({ calls: 0, settled: 0 });
    expect(followUps()).toBe(0);
    // An interval after the sweep: 15 of the 20 asked since came back settled, so they are asked again now, not a minute later.
    p.clock.advance(o.minIntervalMs);
    expect(await poller.runPass(p.signal)).toEqual({ calls: 1, settled: 5 });
    expect(followUps()).toBe(1);
    expect(await p.states(batchId)).toEqual(Array(30).fill('PAID'));

    // A batch swept on a mostly settled answer whose rest then comes back PENDING goes back to its backoff.
    const other = await pendingBatch(p, 30, 'SN');
    const otherIds = (await p.rows(other)).map((r) => r.id);
    const otherLater = p.clock.now() + 60_000;
    await p.db('payouts').whereIn('id', otherIds.slice(10)).update({ next_poll_at: otherLater });
    for (const ref of refs(10, 'SN')) p.sandbox.settle({ merchantReferenceId: ref }, 'PAID');
    expect(await poller.runPass(p.signal)).toEqual({ calls: 1, settled: 10 });
    expect(await poller.runPass(p.signal)).toEqual({ calls: 2, settled: 0 });
    await p.db('payouts').whereIn('id', otherIds.slice(10)).update({ next_poll_at: otherLater });
    p.clock.advance(o.minIntervalMs);
    expect(await poller.runPass(p.signal)).toEqual({ calls: 0, settled: 0 });
    p.clock.advance(o.minIntervalMs);
    expect(await poller.runPass(p.signal)).toEqual({ calls: 0, settled: 0 });
    expect(followUps()).toBe(1);
    expect((await p.rows(other)).slice(10).every((r) => r.state === 'PENDING' && r.nextPollAt === otherLater)).toBe(true);
  });

  it('one concurrency: one call at a time, as before', async () => {
    const p = await startPipeline();
    await pendingBatch(p, 50, 'C1');
    p.sandbox.setFaults({ latencyMs: 20, endpoints: [QUERY] });
    const { seen, service } = countingService(p);
    const poller = new SettlementPoller(
      { db: p.db, service, clock: p.clock, logger: p.logger },
      { ...p.pollerOptions, queryMaxIds: 10, concurrency: 1 },
    );
    expect((await poller.runPass(p.signal)).calls).toBe(5);
    expect(seen.most).toBe(1);
  });

  it('a failing call reschedules only its own payouts; the calls beside it are recorded', async () => {
    const p = await startPipeline({ client: { retry: { maxAttempts: 1 } } });
    const batchId = await pendingBatch(p, 60, 'FC');
    p.sandbox.setFaults({ latencyMs: 60, endpoints: [QUERY] });
    const { seen, service } = countingService(p, 2);
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 4, minIntervalMs: 3000 };
    const poller = new SettlementPoller({ db: p.db, service, clock: p.clock, logger: p.logger }, o);
    const pass = await poller.runPass(p.signal);
    expect(seen.failedIds).toHaveLength(10);
    // A failure stops new calls; those already out (the first four) finish and are recorded.
    expect(pass.calls).toBe(4);
    expect(p.logLines.filter((l) => l.includes('payout query failed'))).toHaveLength(1);
    const rows = await p.rows(batchId);
    const failed = rows.filter((r) => seen.failedIds.includes(r.payoutId as string));
    const answered = rows.filter((r) => seen.asked.flat().includes(r.payoutId as string) && !failed.includes(r));
    expect(failed).toHaveLength(10);
    expect(answered).toHaveLength(30);
    expect(failed.every((r) => r.state === 'PENDING' && r.pollCount === 0 && r.nextPollAt === p.clock.now() + o.minIntervalMs)).toBe(true);
    expect(answered.every((r) => r.pollCount === 1)).toBe(true);
    for (const r of failed) expect(await p.events(r.merchantReferenceId)).toEqual(['intent', 'created']);
    // The 20 never asked are still due now; the next pass takes them and not the rescheduled ones.
    expect(rows.filter((r) => r.pollCount === 0 && !failed.includes(r)).every((r) => (r.nextPollAt as number) <= p.clock.now())).toBe(true);
    p.sandbox.setFaults({ latencyMs: 0 });
    expect((await poller.runPass(p.signal)).calls).toBe(2);
    expect((await p.rows(batchId)).filter((r) => r.pollCount === 1)).toHaveLength(50);
  });

  it('answers that come in while one is waiting to be recorded share its commit', async () => {
    const p = await startPipeline({ submitter: { concurrency: 8 } });
    const batchId = await pendingBatch(p, 40, 'GC');
    // All four calls go out; the first answer is handed over as it comes, the other three one turn of the event
    // loop after it (as answers read from their sockets while the first was being recorded would be).
    let out = 0;
    let firstBack: (() => void) | null = null;
    const firstRecorded = new Promise<void>((resolve) => (firstBack = resolve));
    const service = withQuery(p, async (ids, s) => {
      const n = out++;
      const records = await p.client.queryByPayoutIds(ids, s);
      if (n === 0) {
        setImmediate(() => firstBack?.());
        return records;
      }
      await firstRecorded;
      return records;
    });
    const commits: string[] = [];
    p.db.on('query', (q: { sql: string }) => {
      if (q.sql.startsWith('COMMIT')) commits.push(q.sql);
    });
    const poller = new SettlementPoller(
      { db: p.db, service, clock: p.clock, logger: p.logger },
      // Exclusive: claims are reads, so every commit of the pass is a recording of answers.
      { ...p.pollerOptions, queryMaxIds: 10, concurrency: 4, exclusive: true },
    );
    expect(await poller.runPass(p.signal)).toEqual({ calls: 4, settled: 0 });
    expect((await p.rows(batchId)).every((r) => r.pollCount === 1)).toBe(true);
    // One commit for the four answers (each taking its own was 4).
    expect(commits).toHaveLength(1);
  });

  it('two pollers on one database never ask about the same payout in a round (the claim lease)', async () => {
    const p = await startPipeline();
    const batchId = await pendingBatch(p, 200, 'TW');
    p.sandbox.setFaults({ latencyMs: 20, endpoints: [QUERY] });
    const a = countingService(p);
    const b = countingService(p);
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 3 };
    const pa = new SettlementPoller({ db: p.db, service: a.service, clock: p.clock, logger: p.logger }, o);
    const pb = new SettlementPoller({ db: p.db, service: b.service, clock: p.clock, logger: p.logger }, o);
    const [ra, rb] = await Promise.all([pa.runPass(p.signal), pb.runPass(p.signal)]);
    expect(ra.calls + rb.calls).toBe(20);
    expect(ra.calls).toBeGreaterThan(0);
    expect(rb.calls).toBeGreaterThan(0);
    const asked = [...a.seen.asked.flat(), ...b.seen.asked.flat()];
    expect(new Set(asked).size).toBe(200);
    expect(asked).toHaveLength(200);
    expect((await p.rows(batchId)).every((r) => r.pollCount === 1)).toBe(true);
  });

  it('a stop aborts the calls on the wire and reschedules their payouts; answers already in are kept', async () => {
    const p = await startPipeline({ client: { retry: { maxAttempts: 1 } } });
    const batchId = await pendingBatch(p, 40, 'AB');
    p.sandbox.setFaults({ latencyMs: 200, endpoints: [QUERY] });
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 4 };
    const poller = new SettlementPoller({ db: p.db, service: p.client, clock: p.clock, logger: p.logger }, o);
    const stop = new AbortController();
    const running = poller.runPass(stop.signal);
    await waitFor(() => p.queryRequests() === 4, 'four calls on the wire');
    stop.abort(new Error('stopping'));
    expect(await running).toEqual({ calls: 4, settled: 0 });
    const rows = await p.rows(batchId);
    expect(rows.every((r) => r.state === 'PENDING' && r.pollCount === 0 && r.nextPollAt === p.clock.now() + o.minIntervalMs)).toBe(true);
  });
});

describe('settlement poller: the interval it states is one it keeps', () => {
  it('a round that takes longer than the backoff states the round as the bound, and payouts stay due after the backoff (real clock deltas via the ManualClock)', async () => {
    const p = await startPipeline({ submitter: { concurrency: 16 } });
    const batchId = await (async () => {
      const batch = await p.receive('ST.csv', csvFile(refs(300, 'ST').map((r) => csvRow(r))));
      await p.submit();
      p.clock.advance(p.submitterOptions.firstPollDelayMs);
      return batch.id;
    })();
    // Each answer moves the clock 250 ms: 10 ids per call, 30 calls, 4 calls a second sustained.
    const service = withQuery(p, async (ids, s) => {
      const records = await p.client.queryByPayoutIds(ids, s);
      p.clock.advance(250);
      return records;
    });
    // One round per pass: with the clock moving, payouts on the 2 s backoff would be due again within it.
    const o = { ...p.pollerOptions, queryMaxIds: 10, concurrency: 1, maxCallsPerPass: 30, minIntervalMs: 2000, maxIntervalMs: 60_000 };
    const poller = new SettlementPoller({ db: p.db, service, clock: p.clock, logger: p.logger }, o);
    expect((await poller.runPass(p.signal)).calls).toBe(30);
    const rows = await p.rows(batchId);
    // Every payout is due again after its backoff: the poller never idles waiting for the bound.
    const delays = rows.map((r) => (r.nextPollAt as number) - (r.lastPolledAt as number));
    expect(delays).toEqual(Array(300).fill(2000));
    // Until MIN_RATE_SAMPLE answers came, the bound is the backoff; then one round of 300 payouts at 4 calls/s, with headroom.
    const round = roundMs({ pending: 300, callsPerSecond: 4 }, 10);
    expect(round).toBe(Math.ceil(7.5 * 1000 * ROUND_HEADROOM));
    const details = await Promise.all(rows.map(async (r) => (await historyOf(p.db, r.id)).at(-1)?.detail));
    expect(details.slice(0, 10 * MIN_RATE_SAMPLE)).toEqual(Array(10 * MIN_RATE_SAMPLE).fill('next poll in 2000 ms'));
    expect(details.slice(10 * MIN_RATE_SAMPLE)).toEqual(
      Array(300 - 10 * MIN_RATE_SAMPLE).fill(`next poll in 2000 ms, at most ${round} ms`),
    );
  });
});

/**
 * Unknown outcomes: a crash with creates on the wire, the not-found grace
 * period, and the transport faults of the sandbox (drop after commit, 5xx
 * before and after commit, timeouts, rate limits). In every case a reference
 * ends with exactly one payout at the service: adopted when it exists,
 * created once when it provably does not. An unknown outcome met while a
 * pass sends is queried within that pass (beside the sending).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DuplicatePolicy } from '../../src/sandbox/index.js';
import { claimReadyRows, markInterruptedCreatesUnknown } from '../../src/store/claims.js';
import { CREATE_PATH, QUERY_PATH, closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';
import { PayoutApiClient } from '../../src/api/index.js';
import { configSchema } from '../../src/config/schema.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { startMitm, type Mitm } from '../api/mitm.js';
import { requestOfText } from '../../src/domain/request-values.js';

afterEach(closePipelines);

const REFS = ['CR-1', 'CR-2', 'CR-3', 'CR-4', 'CR-5', 'CR-6'];

describe.each<DuplicatePolicy>(['return-original', 'reject', 'allow'])(
  'pipeline: crash recovery (duplicatePolicy %s)',
  (duplicatePolicy) => {
    it('adopts the creates the service committed and creates the others exactly once', async () => {
      const p = await startPipeline({ sandbox: { duplicatePolicy } });
      const batch = await p.receive('crash.csv', csvFile(REFS.map((r) => csvRow(r))));

      // The process records its intents, sends half of the creates (the service commits them), then dies.
      const claimed = await claimReadyRows(p.db, 100, p.clock.now());
      expect(claimed).toHaveLength(REFS.length);
      const committed = new Map<string, string>();
      for (const row of claimed.slice(0, 3)) {
        const created = await p.client.createPayout(requestOfText(row.requestValues ?? ''));
        committed.set(row.merchantReferenceId, created.payoutId);
      }
      expect(await p.states(batch.id)).toEqual(REFS.map(() => 'CREATING'));

      // Restart.
      p.clock.advance(30_000);
      expect(await markInterruptedCreatesUnknown(p.db, p.clock.now())).toBe(REFS.length);
      expect(await p.states(batch.id)).toEqual(REFS.map(() => 'UNKNOWN'));
      await p.submit();

      expect(await p.states(batch.id)).toEqual(REFS.map(() => 'PENDING'));
      for (const ref of REFS) expect(p.ledgerCount(ref)).toBe(1);
      expect(p.sandbox.stats().creates).toBe(REFS.length);
      expect(p.createRequests()).toBe(REFS.length);
      for (const [ref, payoutId] of committed) {
        expect((await p.row(ref)).payoutId).toBe(payoutId);
        // In the reconciliation report's period of its adoption, not of the service's createTime (reported before).
        expect((await p.row(ref)).createdAtMs).toBe(p.clock.now());
        expect(await p.events(ref)).toEqual(['intent', 'interrupted', 'reconciled-found']);
      }
      for (const ref of REFS.slice(3)) {
        const row = await p.row(ref);
        expect(row.payoutId).toBe(p.sandbox.ledger().find((e) => e.merchantReferenceId === ref)?.payoutId);
        expect(row.createAttempts).toBe(2);
        expect(await p.events(ref)).toEqual(['intent', 'interrupted', 'reconciled-absent', 'intent', 'created']);
      }
    });
  },
);

describe('pipeline: not-found grace period', () => {
  it('keeps an absent UNKNOWN reference UNKNOWN until notFoundGraceMs after its outcome became unknown, then creates it once', async () => {
    const grace = 120_000;
    const p = await startPipeline({ submitter: { notFoundGraceMs: grace } });
    const batch = await p.receive('grace.csv', csvFile([csvRow('GR-1')]));
    const intentAt = p.clock.now();
    await claimReadyRows(p.db, 10, intentAt); // the create never reached the service
    p.clock.advance(1000);
    const unknownAt = p.clock.now();
    await markInterruptedCreatesUnknown(p.db, unknownAt);

    await p.submit();
    expect(await p.states(batch.id)).toEqual(['UNKNOWN']);
    expect((await p.row('GR-1')).nextAttemptAt).toBe(unknownAt + grace);
    expect(p.queryRequests()).toBe(1);

    p.clock.set(unknownAt + grace - 1);
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['UNKNOWN']);
    expect(p.queryRequests()).toBe(1); // not due: not even asked again
    expect(p.createRequests()).toBe(0);

    p.clock.set(unknownAt + grace);
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['PENDING']);
    expect(p.ledgerCount('GR-1')).toBe(1);
    expect(p.createRequests()).toBe(1);
    expect(await p.events('GR-1')).toEqual(['intent', 'interrupted', 'reconcile-wait', 'reconciled-absent', 'intent', 'created']);
  });

  // The grace runs from when the outcome became unknown, not from the intent: a create that hangs
  // until api.timeoutMs (15 s) > notFoundGraceMs (5 s) must still get its grace.
  it('gives the service notFoundGraceMs after a create that timed out before declaring it absent', async () => {
    const grace = 5000;
    // The daemon's clock moves by a full api.timeoutMs (default 15 s) while each create is on the wire.
    const p = await startPipeline({
      submitter: { notFoundGraceMs: grace },
      onApiCall: (c) => {
        if (c.endpoint === CREATE_PATH) p.clock.advance(15_000);
      },
    });
    // The answer (a 5xx: outcome unknown) comes 15 s after the intent on the daemon's clock.
    p.sandbox.setFaults({ errorRate: 1, endpoints: [CREATE_PATH] });
    await p.receive('timeout.csv', csvFile([csvRow('TO-1')]));
    await p.submit();
    expect((await p.row('TO-1')).state).toBe('UNKNOWN');

    // The reference query comes right after (the service's read may lag the late commit).
    p.sandbox.setFaults({ errorRate: 0 });
    await p.submit();
    // Expected: still waiting, since the outcome became unknown 0 ms ago; found: READY and re-sent.
    expect((await p.row('TO-1')).state).toBe('UNKNOWN');
    expect(p.createRequests()).toBe(1);
  });
});

describe('pipeline: a create the service takes in late', () => {
  let mitm: Mitm | null = null;
  afterEach(async () => {
    await mitm?.close();
    mitm = null;
  });

  /**
   * `p`'s database and sandbox reached through `mitm` by a client whose creates time out at 300 ms, the first
   * create held 1.5 s on its way in. `submitter` makes a process on the steady clock `monotonic`.
   */
  async function lateCreates(p: Pipeline): Promise<{ submitter: (monotonic?: () => number) => PayoutSubmitter; creates: () => number }> {
    mitm = await startMitm(p.sandbox.url);
    const client = new PayoutApiClient({ ...p.clientOptions, baseUrl: mitm.url, timeoutMs: 300 });
    let creates = 0;
    mitm.holdMs = (path) => (path === CREATE_PATH && ++creates === 1 ? 1500 : 0);
    const deps = { db: p.db, service: client, clock: p.clock, logger: p.logger, holds: p.holds, random: () => 0.5 };
    return {
      submitter: (monotonic = p.monotonic) => new PayoutSubmitter({ ...deps, monotonic }, p.submitterOptions),
      creates: () => creates,
    };
  }

  // The client gives up at api.timeoutMs, but the service may still be taking the create in: with the
  // default grace a create it commits half a minute after the timeout is found, not sent a second time.
  it('the default notFoundGraceMs covers a commit half a minute after the timeout (duplicatePolicy allow)', async () => {
    const grace = configSchema.parse({}).submit.notFoundGraceMs;
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: grace } });
    const submitter = (await lateCreates(p)).submitter();
    await p.receive('late.csv', csvFile([csvRow('LT-1')]));
    await submitter.runOnce(p.signal);
    expect((await p.row('LT-1')).state).toBe('UNKNOWN');
    expect(p.ledgerCount('LT-1'), 'still on its way in').toBe(0);

    p.clock.advance(30_000);
    await submitter.runOnce(p.signal);
    expect((await p.row('LT-1')).state).toBe('UNKNOWN');
    await waitFor(() => p.ledgerCount('LT-1') === 1, 'the late commit', 5000);
    p.clock.advance(30_000);
    await submitter.runOnce(p.signal);
    expect((await p.row('LT-1')).state).toBe('PENDING');
    expect(p.ledgerCount('LT-1')).toBe(1);
    expect(await p.events('LT-1')).not.toContain('reconciled-absent');
  });

  // An NTP step or a resumed VM moves the system clock past the grace at once, while the create is still on its
  // way in: the grace is also counted on the process's steady clock, so the row waits rather than being sent again.
  it.each([
    ['while the process runs', false],
    ['across a restart', true],
  ])('a system clock jumping past the grace %s does not send the row again (duplicatePolicy allow)', async (_, restart) => {
    const grace = configSchema.parse({}).submit.notFoundGraceMs;
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, submitter: { notFoundGraceMs: grace } });
    // The system clock (p.clock) may jump while the steady one does not.
    const steady = new ManualClock(0);
    const late = await lateCreates(p);
    let submitter = late.submitter(() => steady.now());
    await p.receive('jump.csv', csvFile([csvRow('JP-1')]));
    await submitter.runOnce(p.signal);
    expect((await p.row('JP-1')).state).toBe('UNKNOWN');
    expect(p.ledgerCount('JP-1'), 'still on its way in').toBe(0);

    p.clock.advance(2 * grace);
    steady.advance(0.5); // a steady clock reads fractions of a millisecond; a row's times are whole ones
    if (restart) submitter = late.submitter(() => steady.now());
    await submitter.runOnce(p.signal);
    expect(late.creates(), 'not sent again').toBe(1);
    expect((await p.row('JP-1')).state).toBe('UNKNOWN');
    expect((await p.row('JP-1')).nextAttemptAt).toBe(p.clock.now() + grace);
    expect(await p.events('JP-1')).toEqual(['intent', 'create-unknown', 'reconcile-wait', 'reconcile-wait']);
    await waitFor(() => p.ledgerCount('JP-1') === 1, 'the late commit', 5000);

    // Once the grace has passed on both clocks, the late create is found and adopted.
    p.clock.advance(grace);
    steady.advance(grace);
    await submitter.runOnce(p.signal);
    expect((await p.row('JP-1')).state).toBe('PENDING');
    expect(p.ledgerCount('JP-1')).toBe(1);
    expect(late.creates()).toBe(1);
  });
});

describe('pipeline: faults on create', () => {
  it('commit then dropped connection: UNKNOWN, adopted by query within the pass, one payout', async () => {
    const p = await startPipeline();
    p.sandbox.setFaults({ commitThenDropRate: 1 });
    await p.receive('drop.csv', csvFile([csvRow('FD-1'), csvRow('FD-2')]));
    await p.submit();
    expect(p.sandbox.stats().faults.commitThenDrop).toBe(2);
    for (const ref of ['FD-1', 'FD-2']) {
      const row = await p.row(ref);
      expect(row.state).toBe('PENDING');
      expect(row.payoutId).toBe(p.sandbox.ledger().find((e) => e.merchantReferenceId === ref)?.payoutId);
      expect(p.ledgerCount(ref)).toBe(1);
      expect(await p.events(ref)).toEqual(['intent', 'create-unknown', 'reconciled-found']);
    }
    expect(p.createRequests()).toBe(2);
  });

  it('commit then HTTP 500: UNKNOWN, adopted by query within the pass, one payout', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    p.sandbox.setFaults({ commitThenErrorRate: 1 });
    await p.receive('c500.csv', csvFile([csvRow('FE-1')]));
    await p.submit();
    expect((await p.row('FE-1')).state).toBe('PENDING');
    expect(await p.events('FE-1')).toEqual(['intent', 'create-unknown', 'reconciled-found']);
    expect(p.ledgerCount('FE-1')).toBe(1);
    expect(p.createRequests()).toBe(1);
  });

  it('HTTP 500 before commit: UNKNOWN, the query finds nothing, created once after the grace', async () => {
    const grace = 10_000;
    const p = await startPipeline({ submitter: { notFoundGraceMs: grace } });
    p.sandbox.setFaults({ errorRate: 1, endpoints: [CREATE_PATH] });
    await p.receive('e500.csv', csvFile([csvRow('FB-1')]));
    const sentAt = p.clock.now();
    await p.submit();
    expect((await p.row('FB-1')).state).toBe('UNKNOWN');
    expect(p.sandbox.ledger()).toEqual([]);
    expect(p.createRequests()).toBe(1); // an ambiguous create is never repeated by the client

    p.sandbox.setFaults({ errorRate: 0 });
    await p.submit();
    expect((await p.row('FB-1')).state).toBe('UNKNOWN'); // absent, but within the grace
    expect(p.createRequests()).toBe(1);

    p.clock.set(sentAt + grace);
    await p.submit();
    expect((await p.row('FB-1')).state).toBe('PENDING');
    expect(p.ledgerCount('FB-1')).toBe(1);
    expect(p.createRequests()).toBe(2);
    expect((await p.row('FB-1')).createAttempts).toBe(2);
  });

  it('connection dropped before any work: UNKNOWN, never re-sent before a query proves it absent', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' } });
    p.sandbox.setFaults({ dropRate: 1, endpoints: [CREATE_PATH] });
    await p.receive('pre-drop.csv', csvFile([csvRow('FP-1')]));
    await p.submit();
    // Queried within the pass: absent (the grace is 0 here), so READY again, and not sent before the next pass.
    expect((await p.row('FP-1')).state).toBe('READY');
    expect(await p.events('FP-1')).toEqual(['intent', 'create-unknown', 'reconciled-absent']);
    expect(p.sandbox.ledger()).toEqual([]);
    expect(p.createRequests()).toBe(1);
    p.sandbox.setFaults({ dropRate: 0 });
    await p.submit();
    expect((await p.row('FP-1')).state).toBe('PENDING');
    expect(p.ledgerCount('FP-1')).toBe(1);
    expect(await p.events('FP-1')).toEqual(['intent', 'create-unknown', 'reconciled-absent', 'intent', 'created']);
  });

  it('a failing reference query leaves the row UNKNOWN and sends no create', async () => {
    // Once the create's connection is cut (committed), the reference queries fail.
    const p: Pipeline = await startPipeline({
      sandbox: { duplicatePolicy: 'allow' },
      onApiCall: (c) => {
        if (c.endpoint === CREATE_PATH) p.sandbox.setFaults({ commitThenDropRate: 0, errorRate: 1, endpoints: [QUERY_PATH] });
      },
    });
    p.sandbox.setFaults({ commitThenDropRate: 1 });
    await p.receive('qfail.csv', csvFile([csvRow('FQ-1')]));
    const before = p.clock.now();
    await p.submit();
    const row = await p.row('FQ-1');
    expect(row.state).toBe('UNKNOWN');
    expect(row.nextAttemptAt).toBeGreaterThan(before);
    expect(p.createRequests()).toBe(1);
    expect(await p.events('FQ-1')).toEqual(['intent', 'create-unknown', 'query-failed']);

    p.sandbox.setFaults({ errorRate: 0 });
    p.clock.advance(600_000);
    await p.submit();
    expect((await p.row('FQ-1')).state).toBe('PENDING');
    expect(p.ledgerCount('FQ-1')).toBe(1);
    expect(p.createRequests()).toBe(1);
  });

  it('latency above the client timeout: committed but timed out -> UNKNOWN -> adopted', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'allow' }, client: { timeoutMs: 400 } });
    p.sandbox.setFaults({ latencyMs: 1500, endpoints: [CREATE_PATH] });
    await p.receive('slow.csv', csvFile([csvRow('FT-1')]));
    await p.submit();
    expect(p.calls.some((c) => c.endpoint === CREATE_PATH && c.outcome === 'TRANSPORT_TIMEOUT')).toBe(true);
    expect(await p.events('FT-1')).toEqual(['intent', 'create-unknown', 'reconciled-found']);
    expect((await p.row('FT-1')).state).toBe('PENDING');
    expect((await p.row('FT-1')).payoutId).toBe(p.sandbox.ledger()[0]?.payoutId);
    expect(p.ledgerCount('FT-1')).toBe(1);
    expect(p.createRequests()).toBe(1);
  });

  it('rate limited (429): READY again after Retry-After, nothing created, then created once', async () => {
    const p = await startPipeline({ client: { retry: { maxAttempts: 1 } } });
    await p.receive('rl.csv', csvFile([csvRow('RL-1'), csvRow('RL-2')]));
    // One request passes; the bucket refills far slower than the test runs. (Every call then waits the
    // Retry-After out in real time as well: kept short.)
    p.sandbox.setFaults({ rateLimit: { requestsPerSecond: 0.001, burst: 1, retryAfterSeconds: 1 }, endpoints: [CREATE_PATH] });
    const now = p.clock.now();
    await p.submit();
    const states = [(await p.row('RL-1')).state, (await p.row('RL-2')).state].sort();
    expect(states).toEqual(['PENDING', 'READY']);
    const limited = (await p.row('RL-1')).state === 'READY' ? 'RL-1' : 'RL-2';
    const row = await p.row(limited);
    expect(row.nextAttemptAt).toBe(now + 1000);
    expect(p.ledgerCount(limited)).toBe(0);
    expect(p.sandbox.stats().faults.rateLimited).toBe(1);
    expect(await p.events(limited)).toEqual(['intent', 'create-deferred']);

    // Not before Retry-After.
    p.sandbox.setFaults({ rateLimit: null });
    p.clock.advance(999);
    await p.submit();
    expect((await p.row(limited)).state).toBe('READY');
    p.clock.advance(1);
    await p.submit();
    expect((await p.row(limited)).state).toBe('PENDING');
    expect(p.ledgerCount(limited)).toBe(1);
    expect(p.sandbox.stats().creates).toBe(2);
  });

  // A Retry-After of 0 must not make the row due at once: the work loop would re-send it back to
  // back, hammering a service that asks us to slow down.
  it('does not re-send a rate-limited create before any time has passed (Retry-After: 0)', async () => {
    const p = await startPipeline({ client: { retry: { maxAttempts: 1 } } });
    await p.receive('rl0.csv', csvFile([csvRow('RZ-1'), csvRow('RZ-2')]));
    p.sandbox.setFaults({ rateLimit: { requestsPerSecond: 0.001, burst: 1, retryAfterSeconds: 0 }, endpoints: [CREATE_PATH] });
    await p.submit();
    expect(p.createRequests()).toBe(2);
    // The next passes, as the work loop runs them: the clock has not moved.
    await p.submit();
    await p.submit();
    expect(p.createRequests()).toBe(2);
  });
});

/**
 * Faults of the payout service against the real daemon: each test pays a
 * batch while the sandbox misbehaves in one way, and ends with every row
 * paid exactly once (the sandbox runs duplicatePolicy 'allow' unless the
 * test is about the policy, so a second create would be a second payout),
 * the right final status per row in the result file, and the balance moved
 * once per payout.
 */
import { describe, expect, it } from 'vitest';
import { API_PATHS, type DuplicatePolicy, type SandboxOptions } from '../../src/sandbox/index.js';
import { makeRows, toCsv, type BatchRow } from '../e2e/batch-files.js';
import { startE2e, waitFor, type BatchStatus, type E2e } from '../e2e/harness.js';
import { TcpProxy } from './proxy.js';
import { checkBalances, checkBatchesAndFiles, checkLedger, checkRepeatedCreates, type DroppedFile } from './world.js';

const CREATE = API_PATHS.find((p) => p.endsWith('/fiat-payout/create')) as (typeof API_PATHS)[number];

/** Settings that keep each test to seconds: short retries, quick polls, a short grace before "not found" is believed. */
const FAST = {
  api: { retry: { maxAttempts: 3, baseMs: 50, maxMs: 500 } },
  submit: { notFoundGraceMs: 300, retry: { baseMs: 100, maxMs: 1000 } },
  poll: { tickMs: 100, firstPollDelayMs: 100, minIntervalMs: 150, maxIntervalMs: 800 },
};

function world(config: Record<string, unknown> = {}, sandbox: Omit<SandboxOptions, 'merchants'> = {}): Promise<E2e> {
  return startE2e({
    config: { ...FAST, ...config, api: { ...FAST.api, ...((config.api as object | undefined) ?? {}) } },
    sandbox: { duplicatePolicy: 'allow', seed: 7, settlement: { minDelayMs: 50, maxDelayMs: 300 }, ...sandbox },
  });
}

function expectation(name: string, rows: BatchRow[]): DroppedFile {
  return {
    name,
    paid: rows.map((r) => r.merchantReferenceId),
    cancelled: rows.filter((r) => r.accountNumber.endsWith('0000')).map((r) => r.merchantReferenceId),
    unpaid: [],
    finalState: 'COMPLETE',
    rows,
  };
}

/** Waits for the batch of `expect.name` to complete, then returns every broken promise (empty = exactly once, all final); `earlier` files are paid too. */
async function judge(e2e: E2e, expect: DroppedFile, timeoutMs = 40_000, balances = true, earlier: DroppedFile[] = []): Promise<string[]> {
  const batch = await e2e.waitForBatch(expect.name, ['COMPLETE', 'REJECTED'], timeoutMs);
  const batches = await e2e.batches();
  return [
    ...(batch.state === 'COMPLETE' ? [] : [`batch ${batch.id} is ${batch.state}: ${batch.rejectReason ?? ''}`]),
    ...checkLedger([expect, ...earlier], e2e.ledger()),
    ...(balances ? checkBalances(e2e) : []),
    ...checkRepeatedCreates(e2e),
    ...(await checkBatchesAndFiles(e2e, [expect], batches)),
  ];
}

describe('service faults: every row paid exactly once, with the right final status', () => {
  it('5xx, dropped connections, commit-then-drop and commit-then-error on create', async () => {
    const e2e = await world(
      { submit: { ...FAST.submit, concurrency: 4 } },
      { faults: { endpoints: [CREATE], errorRate: 0.15, dropRate: 0.1, commitThenDropRate: 0.2, commitThenErrorRate: 0.2 } },
    );
    const rows = makeRows('SF-5XX', 60, { cancelEvery: 9 });
    const daemon = await e2e.startDaemon();
    await e2e.drop('faulty.csv', toCsv(rows));
    expect(await judge(e2e, expectation('faulty.csv', rows))).toEqual([]);
    const f = e2e.sandbox.stats().faults;
    // The faults really happened, and each committed-but-unanswered create was resolved by a query, not a re-send.
    expect(f.commitThenDrop).toBeGreaterThan(0);
    expect(f.commitThenError).toBeGreaterThan(0);
    expect(f.errors + f.dropped).toBeGreaterThan(0);
    expect(daemon.logs.filter((l) => l.msg?.startsWith('create outcome unknown')).length).toBeGreaterThanOrEqual(
      f.commitThenDrop + f.commitThenError,
    );
    expect(daemon.exited).toBeNull();
  });

  it('responses slower than the client timeout: every timed-out create is resolved by query, none re-sent', async () => {
    // The sandbox commits, then waits 200-600 ms before answering; the daemon gives up after 300 ms.
    const e2e = await world(
      { api: { timeoutMs: 300 }, submit: { ...FAST.submit, concurrency: 4 } },
      { faults: { endpoints: [CREATE], latencyMs: [200, 600] } },
    );
    const rows = makeRows('SF-SLOW', 30, { cancelEvery: 7 });
    const daemon = await e2e.startDaemon();
    await e2e.drop('slow.csv', toCsv(rows));
    expect(await judge(e2e, expectation('slow.csv', rows))).toEqual([]);
    const unknown = daemon.logs.filter((l) => l.msg?.startsWith('create outcome unknown'));
    expect(unknown.length).toBeGreaterThan(0);
    // One create per reference reached the service: the timed-out ones were found by query, not sent again.
    expect(e2e.sandbox.stats().requests[CREATE]).toBe(rows.length);
  });

  it('HTTP 429 bursts: Retry-After is respected and the request rate stays near the limit', async () => {
    // A client that ignored Retry-After would retry after api.retry.baseMs = 20 ms: hundreds of requests a second.
    const e2e = await world(
      { api: { retry: { maxAttempts: 4, baseMs: 20, maxMs: 100 } }, submit: { ...FAST.submit, concurrency: 8 } },
      { faults: { rateLimit: { requestsPerSecond: 10, burst: 5, retryAfterSeconds: 1 } } },
    );
    const rows = makeRows('SF-429', 40, { cancelEvery: 10 });
    const samples: { t: number; n: number; limited: number }[] = [];
    const businessRequests = (): number =>
      Object.entries(e2e.sandbox.stats().requests)
        .filter(([p]) => p.startsWith('/apis/v1/') && !p.endsWith('-token'))
        .reduce((a, [, n]) => a + n, 0);
    const sampler = setInterval(
      () => samples.push({ t: Date.now(), n: businessRequests(), limited: e2e.sandbox.stats().faults.rateLimited }),
      100,
    );
    try {
      await e2e.startDaemon();
      await e2e.drop('limited.csv', toCsv(rows));
      expect(await judge(e2e, expectation('limited.csv', rows), 60_000)).toEqual([]);
    } finally {
      clearInterval(sampler);
    }
    const limited = e2e.sandbox.stats().faults.rateLimited;
    expect(limited, 'the limit was hit (the test exercised 429s)').toBeGreaterThan(0);
    // Requests in any one-second window: the limit (10/s + burst 5) plus about one refused try per worker and loop.
    let worst = 0;
    for (const a of samples) {
      const b = [...samples].reverse().find((s) => s.t <= a.t + 1000);
      if (b) worst = Math.max(worst, b.n - a.n);
    }
    expect(worst, `most business requests in one second (429s included): ${worst}`).toBeLessThanOrEqual(40);
    expect(limited, `429 answers (${limited}) against ${businessRequests()} requests`).toBeLessThanOrEqual(
      3 * (businessRequests() - limited),
    );
  });

  it('accessToken and refreshToken expiring mid-batch and between batches: refreshed, then acquired anew', async () => {
    const e2e = await world(
      { api: { auth: { refreshBeforeExpirySeconds: 1 } }, submit: { ...FAST.submit, concurrency: 2 } },
      { accessTokenTtlSeconds: 2, refreshTokenTtlSeconds: 4, faults: { endpoints: [CREATE], latencyMs: 100 } },
    );
    const first = makeRows('SF-TOKEN-A', 40, { cancelEvery: 8 });
    const second = makeRows('SF-TOKEN-B', 10, { cancelEvery: 8 });
    await e2e.startDaemon();
    await e2e.drop('tokens-a.csv', toCsv(first));
    // Longer than the accessToken lifetime: refreshed while the batch runs.
    expect(await judge(e2e, expectation('tokens-a.csv', first), 60_000)).toEqual([]);
    expect(e2e.sandbox.stats().refreshesIssued).toBeGreaterThan(0);
    // Idle for longer than the refreshToken lives: the next batch needs a new access-token call.
    const acquired = e2e.sandbox.stats().accessTokensIssued;
    await new Promise((r) => setTimeout(r, 4500));
    await e2e.drop('tokens-b.csv', toCsv(second));
    expect(await judge(e2e, expectation('tokens-b.csv', second), 60_000, true, [expectation('tokens-a.csv', first)])).toEqual([]);
    expect(e2e.sandbox.stats().accessTokensIssued).toBeGreaterThan(acquired);
    expect(e2e.sandbox.stats().authFailures['1010'] ?? 0, 'never sent an expired refreshToken').toBe(0);
  });

  it('tokens that live shorter than the refresh margin (default 120 s, tokens of 2 s): still exactly once', async () => {
    // Every business call then renews first (see the report: a refresh per call); correctness must not suffer.
    const e2e = await world(
      { submit: { ...FAST.submit, concurrency: 4 } },
      { accessTokenTtlSeconds: 2, refreshTokenTtlSeconds: 4, faults: { endpoints: [CREATE], latencyMs: 50 } },
    );
    const rows = makeRows('SF-TOKEN-C', 40, { cancelEvery: 8 });
    await e2e.startDaemon();
    await e2e.drop('tokens-c.csv', toCsv(rows));
    expect(await judge(e2e, expectation('tokens-c.csv', rows), 60_000)).toEqual([]);
  });

  it.each<DuplicatePolicy>(['return-original', 'reject', 'allow'])(
    'duplicatePolicy %s, with creates committed and unanswered: no second create for a reference the service holds',
    async (policy) => {
      const e2e = await world(
        { submit: { ...FAST.submit, concurrency: 4 } },
        { duplicatePolicy: policy, faults: { endpoints: [CREATE], commitThenDropRate: 0.3, commitThenErrorRate: 0.2, errorRate: 0.1 } },
      );
      const rows = makeRows(`SF-DUP-${policy}`, 30, { cancelEvery: 6 });
      await e2e.startDaemon();
      await e2e.drop('policy.csv', toCsv(rows));
      expect(await judge(e2e, expectation('policy.csv', rows))).toEqual([]);
      const s = e2e.sandbox.stats();
      expect(s.faults.commitThenDrop + s.faults.commitThenError).toBeGreaterThan(0);
      // A second create would show as a duplicate answer (return-original) or a 2004 (reject).
      expect(s.duplicateCreates).toBe(0);
      expect(s.businessErrors['2004'] ?? 0).toBe(0);
    },
  );

  it('INSUFFICIENT_BALANCE mid-batch: the batch is held (status says so), and resumes by itself after a top-up', async () => {
    const e2e = await world(
      {
        batch: { balanceCheck: { enabled: true, recheckMs: 300 } },
        submit: { ...FAST.submit, concurrency: 2, insufficientBalanceHoldMs: 300 },
      },
      { faults: { endpoints: [CREATE], latencyMs: 60 } },
    );
    const rows = makeRows('SF-BAL', 40, { cancelEvery: 9 });
    const daemon = await e2e.startDaemon();
    await e2e.drop('balance.csv', toCsv(rows));
    await waitFor(() => e2e.ledger().length >= 8, '8 payouts before the balance runs dry', 20_000, 5);
    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDT', '0');
    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDC', '0');

    const held = await e2e.waitForBatches(
      (bs) => bs.find((b) => b.fileName === 'balance.csv' && b.state === 'ACTIVE' && b.holdCode === 'INSUFFICIENT_BALANCE'),
      'the batch to be held for INSUFFICIENT_BALANCE',
      20_000,
    );
    expect(held.holdReason).toMatch(/balance/i);
    // While held, nothing more is paid, and the daemon keeps running.
    const whileHeld = e2e.ledger().length;
    expect(whileHeld).toBeLessThan(rows.length);
    await new Promise((r) => setTimeout(r, 1000));
    expect(e2e.ledger().length).toBe(whileHeld);
    expect(daemon.exited).toBeNull();

    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDT', '1000000');
    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDC', '1000000');
    // The balance was set by hand, so "opening minus deductions" does not apply here.
    expect(await judge(e2e, expectation('balance.csv', rows), 40_000, false)).toEqual([]);
    const done = (await e2e.batches()).find((b) => b.fileName === 'balance.csv') as BatchStatus;
    expect(done.holdCode).toBeNull();
  });

  it('the service unreachable for a while (connections refused, calls cut): paused, shown, and recovers without operator action', async () => {
    const e2e = await world({}, { faults: { endpoints: [CREATE], latencyMs: 40 } });
    const proxy = await TcpProxy.start(e2e.sandbox.url);
    try {
      await e2e.writeConfig({
        ...FAST,
        api: { ...FAST.api, baseUrl: proxy.url, breaker: { failureThreshold: 5, probe: { baseMs: 200, maxMs: 800 } } },
        submit: { ...FAST.submit, concurrency: 4 },
        metrics: { enabled: true, port: 0 },
      });
      const rows = makeRows('SF-DOWN', 60, { cancelEvery: 10 });
      const daemon = await e2e.startDaemon();
      const listening = await daemon.waitForLog((l) => l.msg === 'metrics, /healthz and /readyz listening');
      const metricsUrl = String(listening['url']);
      await e2e.drop('outage.csv', toCsv(rows));
      await waitFor(() => e2e.ledger().length >= 10, '10 payouts before the outage', 20_000, 5);

      await proxy.off();
      const atOutage = e2e.ledger().length;
      const down = await daemon.waitForLog((l) => String(l.msg).startsWith('payout service unreachable'), 10_000);
      expect(down.level).toBe('warn');
      // Refused connections; or, when it opened, a read cut on the wire as the proxy went off.
      expect(down['code']).toMatch(/^(ECONNREFUSED|TRANSPORT_DROPPED)$/);
      // Operators see it: payoutd status (another process, reading the database), /readyz and /metrics.
      const status = await e2e.cli(['status']);
      expect(status.stdout).toMatch(
        /^payout service unreachable since \d\d:\d\d:\d\d \((ECONNREFUSED|TRANSPORT_DROPPED)\), sending paused$/m,
      );
      const ready = await fetch(`${metricsUrl}/readyz`);
      expect([ready.status, (await ready.text()).trim()]).toEqual([503, status.stdout.split('\n')[0]]);
      const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
      expect(metrics).toMatch(/^payoutd_service_up\{service="payout-api"\} 0$/m);
      expect(metrics).toMatch(/^payoutd_service_down_seconds\{service="payout-api"\} [0-9.]+$/m);
      await new Promise((r) => setTimeout(r, 2000));
      // Nothing gets through while the service is unreachable (at most the creates that were already inside).
      expect(e2e.ledger().length - atOutage).toBeLessThanOrEqual(4);
      expect(daemon.exited).toBeNull();
      await proxy.on();

      const back = await daemon.waitForLog((l) => String(l.msg).startsWith('payout service reachable again'), 10_000);
      expect(back.level).toBe('info');
      expect(await judge(e2e, expectation('outage.csv', rows), 60_000)).toEqual([]);
      expect(daemon.exited).toBeNull();
      expect(daemon.logs.some((l) => l.level === 'fatal')).toBe(false);
      // Told once each way, and no row was put back at info.
      expect(daemon.logs.filter((l) => String(l.msg).startsWith('payout service unreachable'))).toHaveLength(1);
      expect(daemon.logs.filter((l) => l.msg === 'create deferred')).toEqual([]);
      expect((await e2e.cli(['status'])).stdout).not.toMatch(/unreachable/);
      expect((await fetch(`${metricsUrl}/readyz`)).status).toBe(200);
    } finally {
      await proxy.close();
    }
  });
});

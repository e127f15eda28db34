/**
 * ApiError classification over real faults injected by the sandbox
 * (setFaults) and real transport failures: what is ambiguous (the payout may
 * exist: query before anything else), what is retryable (nothing happened),
 * what is rejected for good, and which calls the client repeats by itself.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, PayoutApiClient } from '../../src/api/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import {
  apiErrorOf,
  clientOptions,
  closeAll,
  closedPort,
  leakReport,
  MERCHANT,
  payoutRequest,
  startEnv,
  START_MS,
  testKeys,
} from './helpers.js';

afterEach(closeAll);

describe('classification of create outcomes the client cannot know', () => {
  it('commit then drop the connection: ambiguous, not repeated, and the ledger has the payout', async () => {
    const { client, sandbox } = await startEnv();
    await client.balances();
    sandbox.setFaults({ commitThenDropRate: 1 });
    const req = payoutRequest();
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ kind: 'ambiguous', status: null, endpoint: ENDPOINTS.createPayout });
    expect(err.code).toMatch(/DROPPED/);
    expect(sandbox.ledger().map((p) => p.merchantReferenceId)).toEqual([req.merchantReferenceId]);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
    expect(sandbox.stats().faults.commitThenDrop).toBe(1);
  });

  it('a create abandoned before its connection is made is not sent; one abandoned on the wire is ambiguous', async () => {
    const { client, sandbox } = await startEnv();
    await client.balances(); // credentials in hand: nothing stands between the create and its connection
    const before = await apiErrorOf(client.createPayout(payoutRequest(), AbortSignal.abort(new Error('stopping'))));
    expect(before).toMatchObject({ kind: 'retryable', code: 'NOT_SENT', endpoint: ENDPOINTS.createPayout });
    expect(sandbox.stats().requests[ENDPOINTS.createPayout] ?? 0).toBe(0);

    sandbox.setFaults({ latencyMs: 2000, endpoints: [ENDPOINTS.createPayout] });
    const onWire = await apiErrorOf(client.createPayout(payoutRequest(), AbortSignal.timeout(300)));
    expect(onWire).toMatchObject({ kind: 'ambiguous', code: 'TRANSPORT_ABORTED' });
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
  });

  it('a reused kept-alive connection reset after the sandbox committed: ambiguous, not repeated, one payout', async () => {
    const { client, sandbox, proxy } = await startEnv();
    await client.balances(); // leaves a kept-alive connection to the proxy for the create
    proxy.resetReused = 'after';
    const req = payoutRequest();
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ kind: 'ambiguous', status: null, endpoint: ENDPOINTS.createPayout });
    expect(err.code).toBe('TRANSPORT_DROPPED');
    expect(sandbox.ledger().map((p) => p.merchantReferenceId)).toEqual([req.merchantReferenceId]);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
    expect(proxy.connections).toBe(1);
  });

  it('a reused kept-alive connection reset as the create arrives: still ambiguous (it may have been read), never re-sent', async () => {
    const { client, sandbox, proxy } = await startEnv();
    await client.balances();
    proxy.resetReused = 'before';
    const err = await apiErrorOf(client.createPayout(payoutRequest()));
    expect(err).toMatchObject({ kind: 'ambiguous', status: null, code: 'TRANSPORT_DROPPED' });
    expect(proxy.forwarded.filter((f) => f.url === ENDPOINTS.createPayout)).toHaveLength(0);
    expect(sandbox.ledger()).toEqual([]);
    expect(proxy.connections).toBe(1);
  });

  it('kept-alive connections the server closed between calls are not reused: the next create opens a new one, one payout', async () => {
    const { client, sandbox, proxy } = await startEnv();
    await client.balances();
    await proxy.closeIdle();
    const req = payoutRequest();
    const created = await client.createPayout(req);
    expect(sandbox.ledger().map((p) => [p.merchantReferenceId, p.payoutId])).toEqual([[req.merchantReferenceId, created.payoutId]]);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
    expect(proxy.connections).toBe(2);
  });

  it('commit then HTTP 500: ambiguous, not repeated, and the ledger has the payout', async () => {
    const { client, sandbox } = await startEnv();
    sandbox.setFaults({ commitThenErrorRate: 1 });
    const req = payoutRequest();
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ kind: 'ambiguous', status: 500, code: 'HTTP_5XX' });
    expect(sandbox.ledger().map((p) => p.merchantReferenceId)).toEqual([req.merchantReferenceId]);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
  });

  it('HTTP 500 before any work on a create: still ambiguous to the client and never repeated', async () => {
    const { client, sandbox } = await startEnv();
    sandbox.setFaults({ errorRate: 1 });
    const err = await apiErrorOf(client.createPayout(payoutRequest()));
    expect(err).toMatchObject({ kind: 'ambiguous', status: 500 });
    const stats = sandbox.stats();
    expect(stats.requests[ENDPOINTS.createPayout]).toBe(1);
    expect(stats.faults.errors).toBe(1);
    expect(sandbox.ledger()).toEqual([]);
  });

  it('no answer within timeoutMs on a create: ambiguous, and the payout exists (committed before the delay)', async () => {
    const { client, sandbox } = await startEnv({ client: { timeoutMs: 300 } });
    await client.balances();
    sandbox.setFaults({ latencyMs: 1_500 });
    const req = payoutRequest();
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ kind: 'ambiguous', status: null });
    expect(err.code).toMatch(/TIMEOUT/);
    expect(sandbox.ledger().map((p) => p.merchantReferenceId)).toEqual([req.merchantReferenceId]);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
  });
});

describe('retryable outcomes', () => {
  it('HTTP 500 on a query: repeated up to retry.maxAttempts, then retryable', async () => {
    const { client, sandbox } = await startEnv({ client: { retry: { maxAttempts: 4 } } });
    sandbox.setFaults({ errorRate: 1 });
    const err = await apiErrorOf(client.queryByReferences(['REF-1']));
    expect(err).toMatchObject({ kind: 'retryable', status: 500, code: 'HTTP_5XX' });
    expect(sandbox.stats().requests[ENDPOINTS.queryPayouts]).toBe(4);
    expect(sandbox.stats().faults.errors).toBe(4);
  });

  it('HTTP 429: Retry-After is respected, then the call succeeds; a rate-limited create is repeated once, one payout', async () => {
    const { client, sandbox, proxy, calls } = await startEnv();
    await client.balances();
    sandbox.setFaults({ rateLimit: { requestsPerSecond: 2, burst: 1, retryAfterSeconds: 1 } });
    await client.balances(); // takes the one token of the bucket

    await client.balances(); // 429, waits Retry-After, succeeds
    const balanceArrivals = proxy.forwarded.filter((f) => f.url === ENDPOINTS.balances).map((f) => f.arrivedAt);
    expect(balanceArrivals).toHaveLength(4);
    const [, , limited = 0, retried = 0] = balanceArrivals;
    // Behaviour, not speed: the retry waited for Retry-After (1 s), and not absurdly long.
    expect(retried - limited).toBeGreaterThanOrEqual(950);
    expect(retried - limited).toBeLessThan(5_000);
    expect(calls.filter((c) => c.endpoint === ENDPOINTS.balances).map((c) => c.outcome)).toEqual(['ok', 'ok', '1429', 'ok']);

    const req = payoutRequest();
    const created = await client.createPayout(req); // bucket empty again: 429, wait, created
    expect(sandbox.stats().faults.rateLimited).toBe(2);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(2);
    expect(sandbox.ledger().map((p) => p.payoutId)).toEqual([created.payoutId]);
  });

  it('connection refused on a create: retryable (nothing was sent), repeated, nothing reached the sandbox', async () => {
    const { client, sandbox, proxy, calls } = await startEnv();
    // No pooled socket to the proxy may survive it, so the create must open a new connection.
    proxy.connectionClose = true;
    await client.balances();
    await proxy.close();

    const err = await apiErrorOf(client.createPayout(payoutRequest()));
    expect(err).toMatchObject({ kind: 'retryable', status: null, endpoint: ENDPOINTS.createPayout });
    expect(err.code).toMatch(/CONNECT/);
    expect(calls.filter((c) => c.endpoint === ENDPOINTS.createPayout)).toHaveLength(3);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(0);
    expect(sandbox.ledger()).toEqual([]);
  });

  it('a baseUrl on a closed port: retryable from the first call (access-token)', async () => {
    const port = await closedPort();
    const client = new PayoutApiClient(
      clientOptions(`http://127.0.0.1:${port}`, testKeys().main.privateKey, { clock: new ManualClock(START_MS) }),
    );
    const err = await apiErrorOf(client.createPayout(payoutRequest()));
    expect(err).toMatchObject({ kind: 'retryable', status: null, endpoint: ENDPOINTS.accessToken });
    expect(err.code).toMatch(/CONNECT/);
  });

  it('INSUFFICIENT_BALANCE: 2001, retryable with waitForBalance, not repeated by the client', async () => {
    const { client, sandbox } = await startEnv();
    sandbox.setBalance(MERCHANT, 'USDT', '18.277777'); // one millionth short of 1000 PHP + fee
    const err = await apiErrorOf(client.createPayout(payoutRequest({ payoutAmount: '1000' })));
    expect(err).toMatchObject({ code: '2001', kind: 'retryable', waitForBalance: true, status: 200 });
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
    expect(sandbox.balances(MERCHANT).USDT).toBe('18.277777');

    sandbox.setBalance(MERCHANT, 'USDT', '18.277778');
    await client.createPayout(payoutRequest({ payoutAmount: '1000' }));
    expect(sandbox.balances(MERCHANT).USDT).toBe('0');
  });
});

describe('rejected and duplicate outcomes', () => {
  it('an invalid parameter: 2002, rejected, not repeated', async () => {
    const { client, sandbox } = await startEnv();
    const req = payoutRequest();
    const err = await apiErrorOf(client.createPayout({ ...req, sender: { ...req.sender, country: 'PHL' } }));
    expect(err).toMatchObject({ code: '2002', kind: 'rejected', status: 200 });
    expect(err.msg).toMatch(/country/);
    expect(sandbox.stats().requests[ENDPOINTS.createPayout]).toBe(1);
    expect(sandbox.ledger()).toEqual([]);
  });

  it("duplicatePolicy 'reject': a used reference answers 2004, ambiguous (query and adopt), one debit", async () => {
    const { client, sandbox } = await startEnv({ sandbox: { duplicatePolicy: 'reject' } });
    const req = payoutRequest();
    const first = await client.createPayout(req);
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ code: '2004', kind: 'ambiguous' });
    expect(sandbox.ledger().map((p) => p.payoutId)).toEqual([first.payoutId]);
    expect(sandbox.balances(MERCHANT).USDT).toBe('981.722222');
  });

  it("duplicatePolicy 'return-original': the same answer, the same payoutId, one debit", async () => {
    const { client, sandbox } = await startEnv({ sandbox: { duplicatePolicy: 'return-original' } });
    const req = payoutRequest();
    const first = await client.createPayout(req);
    const again = await client.createPayout(req);
    expect(again).toEqual(first);
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.balances(MERCHANT).USDT).toBe('981.722222');
    expect(sandbox.stats().duplicateCreates).toBe(1);
  });

  it('puts no secret in any ApiError of this file', () => {
    const report = leakReport();
    expect(report.errors).toBeGreaterThanOrEqual(10);
    expect(report.leaks).toEqual([]);
  });
});

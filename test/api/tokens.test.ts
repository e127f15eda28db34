/**
 * Credential lifecycle (spec 5.5) over real HTTP, with one ManualClock per
 * side: a 1009 answered by one refresh, the proactive refresh, a 1010 that
 * sends the client back to access-token, and single-flight renewal under 50
 * concurrent calls. No caller ever sees an error.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import { systemClock } from '../../src/domain/clock.js';
import { closeAll, leakReport, startEnv } from './helpers.js';

afterEach(closeAll);

const SHORT = { accessTokenTtlSeconds: 60, refreshTokenTtlSeconds: 600 };

describe('token lifecycle', () => {
  it('an access token that expires on the server mid-run: 1009, one refresh, retried, no caller-visible error', async () => {
    const { client, sandbox, sandboxClock, renewals, calls } = await startEnv({ sandbox: SHORT });
    await client.balances();
    // Only the server's time passes, so the client has no reason to renew first.
    sandboxClock.advance(61_000);

    const balances = await client.balances();
    expect(balances.length).toBeGreaterThan(0);
    const stats = sandbox.stats();
    expect(stats.authFailures['1009']).toBe(1);
    expect(stats.refreshesIssued).toBe(1);
    expect(stats.accessTokensIssued).toBe(1);
    expect(renewals).toEqual(['acquire', 'refresh']);
    expect(calls.map((c) => `${c.endpoint} ${c.outcome}`)).toEqual([
      `${ENDPOINTS.accessToken} ok`,
      `${ENDPOINTS.balances} ok`,
      `${ENDPOINTS.balances} 1009`,
      `${ENDPOINTS.refreshToken} ok`,
      `${ENDPOINTS.balances} ok`,
    ]);
  });

  it('refreshes proactively inside refreshBeforeExpirySeconds, before any 1009', async () => {
    const { client, sandbox, sandboxClock, clientClock, renewals } = await startEnv({
      sandbox: SHORT,
      client: { auth: { refreshBeforeExpirySeconds: 10 } },
    });
    await client.balances();
    sandboxClock.advance(49_000);
    clientClock.advance(49_000);
    await client.balances();
    expect(sandbox.stats().refreshesIssued).toBe(0);

    // 55 s into a 60 s token: inside the 10 s window.
    sandboxClock.advance(6_000);
    clientClock.advance(6_000);
    await client.balances();
    const stats = sandbox.stats();
    expect(stats.refreshesIssued).toBe(1);
    expect(stats.authFailures['1009']).toBeUndefined();
    expect(stats.requests[ENDPOINTS.balances]).toBe(3);
    expect(renewals).toEqual(['acquire', 'refresh']);
  });

  it('a refresh token that expired too: 1009, then 1010, then a new access-token, no caller-visible error', async () => {
    const { client, sandbox, sandboxClock, renewals, calls } = await startEnv({
      sandbox: { accessTokenTtlSeconds: 60, refreshTokenTtlSeconds: 120 },
    });
    await client.balances();
    sandboxClock.advance(121_000);

    await client.exchangeRates(['PHP']);
    const stats = sandbox.stats();
    expect(stats.authFailures['1009']).toBe(1);
    expect(stats.authFailures['1010']).toBe(1);
    expect(stats.refreshesIssued).toBe(0);
    expect(stats.accessTokensIssued).toBe(2);
    expect(renewals).toEqual(['acquire', 'acquire']);
    expect(calls.slice(2).map((c) => `${c.endpoint} ${c.outcome}`)).toEqual([
      `${ENDPOINTS.exchangeRates} 1009`,
      `${ENDPOINTS.refreshToken} 1010`,
      `${ENDPOINTS.accessToken} ok`,
      `${ENDPOINTS.exchangeRates} ok`,
    ]);
  });

  it('50 concurrent calls across a server-side expiry: exactly one refresh, all 50 succeed', async () => {
    const { client, sandbox, sandboxClock, renewals } = await startEnv({ sandbox: SHORT });
    await client.balances();
    sandboxClock.advance(61_000);
    const before = sandbox.stats();

    const results = await Promise.all(Array.from({ length: 50 }, () => client.balances()));
    expect(results).toHaveLength(50);
    for (const r of results) expect(r.find((b) => b.currency === 'USDT')?.available).toBe('1000');

    const after = sandbox.stats();
    expect(after.refreshesIssued - before.refreshesIssued).toBe(1);
    expect(after.accessTokensIssued).toBe(before.accessTokensIssued);
    expect(after.authFailures['1009']).toBeGreaterThanOrEqual(1);
    expect(renewals).toEqual(['acquire', 'refresh']);
  });

  it('50 concurrent calls arriving inside the proactive window: exactly one refresh, no 1009', async () => {
    const { client, sandbox, sandboxClock, clientClock, renewals } = await startEnv({ sandbox: SHORT });
    await client.balances();
    sandboxClock.advance(55_000);
    clientClock.advance(55_000);

    const results = await Promise.all(Array.from({ length: 50 }, () => client.balances()));
    expect(results).toHaveLength(50);
    const stats = sandbox.stats();
    expect(stats.refreshesIssued).toBe(1);
    expect(stats.authFailures).toEqual({});
    expect(stats.requests[ENDPOINTS.balances]).toBe(51);
    expect(renewals).toEqual(['acquire', 'refresh']);
  });

  it('a token endpoint slower than what is left of the token: life counted from the request, renewed in time, no 1009', async () => {
    // Real clocks on both sides: the sandbox issues 3 s tokens and answers token calls 1.8 s later. Counted
    // from the answer, a token would be used until 1 s before the end of a life that ended 1.8 s earlier.
    const { client, sandbox, renewals } = await startEnv({
      sandbox: {
        clock: systemClock,
        accessTokenTtlSeconds: 3,
        refreshTokenTtlSeconds: 600,
        faults: { endpoints: [ENDPOINTS.accessToken, ENDPOINTS.refreshToken], latencyMs: 1800 },
      },
      client: { clock: systemClock, auth: { refreshBeforeExpirySeconds: 1 } },
    });
    const until = Date.now() + 7000;
    let calls = 0;
    while (Date.now() < until) {
      await client.balances();
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const stats = sandbox.stats();
    expect(renewals.length, 'renewed while calls went on').toBeGreaterThanOrEqual(3);
    expect(stats.authFailures).toEqual({});
    expect(stats.requests[ENDPOINTS.balances]).toBe(calls);
  });

  it('puts no secret in any ApiError of this file', () => {
    // No call here may fail; the proxy still saw every credential the sandbox issued.
    const report = leakReport();
    expect(report.errors).toBe(0);
    expect(report.leaks).toEqual([]);
  });
});

/**
 * HTTP 401 paths through a real man-in-the-middle (test/api/mitm.ts): a
 * tampered body, a replayed request, a swapped bearer token; and a client
 * that signs with the wrong key or from a clock 10 minutes behind.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS, PayoutApiClient } from '../../src/api/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { parseLossless } from '../../src/json/index.js';
import { apiErrorOf, clientOptions, closeAll, leakReport, MERCHANT, payoutRequest, startEnv, START_MS, testKeys } from './helpers.js';
import { tamperJsonText } from './mitm.js';

afterEach(closeAll);

describe('tamperJsonText (test tool)', () => {
  it('changes one character of the first string value and keeps valid JSON of the same length', () => {
    expect(tamperJsonText('{"targetCurrencys":["PHP"]}')).toBe('{"targetCurrencys":["QHP"]}');
    expect(tamperJsonText('{"a":1.5,"b":"zed"}')).toBe('{"a":1.5,"b":"aed"}');
    expect(() => tamperJsonText('{}')).toThrow();
  });
});

describe('401 through a man-in-the-middle', () => {
  it('a tampered body fails HMAC: ApiError 401 / 1004 after one retry with fresh credentials, nothing created', async () => {
    const { client, sandbox, proxy } = await startEnv();
    await client.balances();
    const before = sandbox.stats();
    const req = payoutRequest();

    proxy.tamper = true;
    const err = await apiErrorOf(client.createPayout(req));
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth', endpoint: ENDPOINTS.createPayout });

    const after = sandbox.stats();
    // The first refusal and the retry with newly acquired credentials.
    expect((after.authFailures['1004'] ?? 0) - (before.authFailures['1004'] ?? 0)).toBe(2);
    expect(after.requests[ENDPOINTS.createPayout]).toBe(2);
    expect(after.accessTokensIssued - before.accessTokensIssued).toBe(1);
    expect(after.creates).toBe(0);
    expect(sandbox.ledger()).toEqual([]);
    expect(sandbox.balances(MERCHANT).USDT).toBe('1000');

    // The same request, untouched, goes through: only the tampering was refused.
    proxy.tamper = false;
    const created = await client.createPayout(req);
    expect(created.merchantReferenceId).toBe(req.merchantReferenceId);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('a verbatim replay of a create is refused as a replayed nonce and debits nothing more', async () => {
    const { client, sandbox, proxy } = await startEnv();
    const created = await client.createPayout(payoutRequest());
    const balanceAfterCreate = sandbox.balances(MERCHANT).USDT;
    expect(proxy.forwarded.at(-1)?.url).toBe(ENDPOINTS.createPayout);

    const replay = await proxy.replayLast();
    expect(replay.status).toBe(401);
    const envelope = parseLossless(replay.text) as { code: string; msg: string };
    expect(envelope.code).toBe('1004');
    expect(envelope.msg).toMatch(/nonce replayed/);

    expect(sandbox.stats().authFailures['1004']).toBe(1);
    expect(sandbox.ledger().map((p) => p.payoutId)).toEqual([created.payoutId]);
    expect(sandbox.balances(MERCHANT).USDT).toBe(balanceAfterCreate);
  });

  it("another client's live bearer token in our request fails: 401 / 1004, and both clients work once the swap stops", async () => {
    const env = await startEnv();
    const { client, sandbox, proxy } = env;
    await client.balances();
    const second = env.newClient();
    await second.client.balances();
    const foreign = proxy.issued.at(-1)?.accessToken;
    expect(foreign).toBeDefined();
    expect(proxy.issued).toHaveLength(2);

    proxy.swapBearer = foreign ?? null;
    const err = await apiErrorOf(client.exchangeRates(['PHP']));
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth' });
    expect(sandbox.stats().authFailures['1004']).toBe(2);

    proxy.swapBearer = null;
    expect(await second.client.exchangeRates(['PHP'])).toHaveLength(2);
    expect(await client.exchangeRates(['PHP'])).toHaveLength(2);
  });

  it('a client holding another private key is refused at access-token: 401, kind auth, not retried', async () => {
    const { proxy, sandbox } = await startEnv();
    const client = new PayoutApiClient(clientOptions(proxy.url, testKeys().other.privateKey, { clock: new ManualClock(START_MS) }));
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth', endpoint: ENDPOINTS.accessToken });
    const stats = sandbox.stats();
    expect(stats.requests[ENDPOINTS.accessToken]).toBe(1);
    expect(stats.requests[ENDPOINTS.balances]).toBe(0);
    expect(stats.authFailures['1004']).toBe(1);
    expect(stats.accessTokensIssued).toBe(0);
  });

  it('a client clock 10 minutes behind the sandbox clock is refused: 401, kind auth', async () => {
    const { proxy, sandbox } = await startEnv();
    const client = new PayoutApiClient(
      clientOptions(proxy.url, testKeys().main.privateKey, { clock: new ManualClock(START_MS - 600_000) }),
    );
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth', endpoint: ENDPOINTS.accessToken });
    expect(err.msg).toMatch(/timestamp/);
    expect(sandbox.stats().accessTokensIssued).toBe(0);
  });

  it('a stale timestamp on a business call (clocks drift apart after login) is refused too', async () => {
    const { client, clientClock } = await startEnv();
    await client.balances();
    // The token is still valid (7200 s) but the timestamps are not; the re-login the client tries fails the same way.
    clientClock.advance(-600_000);
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth' });
    expect(err.msg).toMatch(/timestamp/);
  });

  it('puts no secret in any ApiError of this file', () => {
    const report = leakReport();
    expect(report.errors).toBeGreaterThanOrEqual(5);
    expect(report.leaks).toEqual([]);
  });
});

/**
 * The wire-contract settings the client shares with the server (contract.md):
 * auth.mode 'client-id', canonicalJson sortKeys false, HMAC key encodings.
 * Each works when both sides agree, and a mismatch is refused, so the
 * settings are shown to matter.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ENDPOINTS } from '../../src/api/index.js';
import type { HmacKeyEncoding } from '../../src/signing/index.js';
import { apiErrorOf, closeAll, leakReport, payoutRequest, startEnv, START_MS } from './helpers.js';

afterEach(closeAll);

function header(headers: [string, string][] | undefined, name: string): string | undefined {
  return headers?.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
}

describe("auth.mode 'client-id' (spec 5.6)", () => {
  it('works end to end against a client-id sandbox, refresh included', async () => {
    const { client, sandbox, sandboxClock, proxy } = await startEnv({
      sandbox: { authMode: 'client-id', accessTokenTtlSeconds: 60 },
      merchant: { clientId: 'CID-42' },
      client: { auth: { mode: 'client-id', clientId: 'CID-42' } },
    });
    const created = await client.createPayout(payoutRequest());
    expect((await client.queryByPayoutIds([created.payoutId])).records).toHaveLength(1);

    const token = proxy.forwarded.find((f) => f.url === ENDPOINTS.accessToken);
    expect(token?.body.toString('utf8')).toBe('{"clientId":"CID-42","grantType":"client_credentials"}');
    expect(header(token?.headers, 'X-Client-Id')).toBe('CID-42');
    expect(header(token?.headers, 'X-TIMESTAMP')).toBe(String(START_MS));
    const business = proxy.forwarded.find((f) => f.url === ENDPOINTS.createPayout);
    expect(header(business?.headers, 'Authorization')).toMatch(/^Bearer \S+$/);
    expect(header(business?.headers, 'SvcAuthorization')).toBeUndefined();

    sandboxClock.advance(61_000);
    await client.balances();
    expect(sandbox.stats().authFailures['1009']).toBe(1);
    expect(sandbox.stats().refreshesIssued).toBe(1);
  });

  it('a client-id client against a standard sandbox is refused at access-token', async () => {
    const { client } = await startEnv({ client: { auth: { mode: 'client-id' } } });
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth', endpoint: ENDPOINTS.accessToken });
  });
});

describe('canonicalJson.sortKeys false', () => {
  it('works when both sides keep the written key order, and the body goes out unsorted', async () => {
    const { client, sandbox, proxy } = await startEnv({ sandbox: { canonicalJson: { sortKeys: false } }, client: { sortKeys: false } });
    const req = payoutRequest({ payoutAmount: '250.750' });
    const created = await client.createPayout(req);
    expect(created.deductionAmount).toBe('4.957778'); // 250.75 / 56.25 = 4.4577… -> 4.457778, plus 0.5
    const wire = proxy.forwarded.find((f) => f.url === ENDPOINTS.createPayout)?.body.toString('utf8');
    expect(wire?.startsWith(`{"merchantReferenceId":"${req.merchantReferenceId}","deductionCurrency":"USDT"`)).toBe(true);
    expect(wire).toContain('"payoutAmount":250.75,');
    expect((await client.queryByReferences([req.merchantReferenceId])).records).toHaveLength(1);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('an unsorted body is refused by a server that sorts before hashing (already the access-token body)', async () => {
    const { client, sandbox, proxy } = await startEnv({ client: { sortKeys: false } });
    const err = await apiErrorOf(client.createPayout(payoutRequest()));
    // Refused at its token call: the create itself never left, and says why.
    expect(err).toMatchObject({ code: 'NOT_SENT', kind: 'auth', endpoint: ENDPOINTS.createPayout });
    expect(err.message).toContain(`${ENDPOINTS.accessToken}: 1004 (HTTP 401)`);
    expect(proxy.forwarded[0]?.body.toString('utf8')).toBe('{"merchantCode":"M001","grantType":"client_credentials"}');
    expect(sandbox.ledger()).toEqual([]);
  });
});

describe('hmacKeyEncoding', () => {
  it.each<HmacKeyEncoding>(['hex', 'base64'])('%s on both sides works', async (encoding) => {
    const { client, sandbox, proxy } = await startEnv({ sandbox: { hmacKeyEncoding: encoding }, client: { hmacKeyEncoding: encoding } });
    await client.createPayout(payoutRequest());
    expect(await client.balances()).toContainEqual({ currency: 'USDT', available: '981.722222' });
    expect(sandbox.stats().authFailures).toEqual({});
    const secret = proxy.issued[0]?.secretKey ?? '';
    expect(secret).toMatch(encoding === 'hex' ? /^[0-9a-f]{64}$/ : /^[A-Za-z0-9+/]{43}=$/);
  });

  it('utf8 on the client against a hex sandbox is refused', async () => {
    const { client } = await startEnv({ sandbox: { hmacKeyEncoding: 'hex' } });
    const err = await apiErrorOf(client.balances());
    expect(err).toMatchObject({ status: 401, code: '1004', kind: 'auth' });
  });
});

describe('secrets', () => {
  it('puts no secret in any ApiError of this file', () => {
    const report = leakReport();
    expect(report.errors).toBe(3);
    expect(report.leaks).toEqual([]);
  });
});

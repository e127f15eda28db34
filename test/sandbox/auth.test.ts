import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { startSandbox, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { makeKeys, merchant, num, str, TestCaller, type TestKeys } from './harness.js';

let keys: TestKeys;
let otherKeys: TestKeys;
const servers: SandboxServer[] = [];

beforeAll(() => {
  keys = makeKeys();
  otherKeys = makeKeys();
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function setup(extra: Partial<SandboxOptions> = {}): Promise<{ sandbox: SandboxServer; caller: TestCaller; clock: ManualClock }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sandbox = await startSandbox({ merchants: [merchant(keys)], clock, seed: 7, ...extra });
  servers.push(sandbox);
  const caller = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M001', merchantCode: 'M001', privateKey: keys.privateKey, clock });
  return { sandbox, caller, clock };
}

const BALANCE = '/apis/v1/balance/query';

describe('sandbox authentication', () => {
  it('issues credentials with the fields of spec 2.2', async () => {
    const { caller, clock, sandbox } = await setup();
    const reply = await caller.accessToken();
    expect(reply.status).toBe(200);
    expect(reply.code).toBe('0000');
    expect(reply.msg).toBe('success');
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(str(reply.data, 'merchantCode')).toBe('M001');
    expect(str(reply.data, 'businessUserId')).toBe('M001-primary');
    expect(num(reply.data, 'accessTokenExpiresIn')).toBe('7200');
    expect(num(reply.data, 'refreshTokenExpiresIn')).toBe('86400');
    expect(num(reply.data, 'timestamp')).toBe(String(clock.now() / 1000));
    expect(str(reply.data, 'secretKey').length).toBeGreaterThan(20);
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    expect(sandbox.stats().accessTokensIssued).toBe(1);
  });

  it('accepts a PEM public key too', async () => {
    const { caller } = await setup({ merchants: [merchant(keys, { publicKey: keys.publicKeyPem })] });
    expect((await caller.accessToken()).code).toBe('0000');
  });

  it('refuses each header rule with HTTP 401 and code 1004', async () => {
    const { caller, sandbox } = await setup();
    await caller.accessToken();
    const token = caller.creds?.accessToken as string;
    const cases: [string, Parameters<TestCaller['business']>[2], RegExp][] = [
      ['no content type', { headers: { 'Content-Type': 'text/plain' } }, /Content-Type/],
      ['missing nonce', { headers: { 'X-NONCE': undefined } }, /missing header X-NONCE/],
      ['missing signature', { headers: { 'X-SIGNATURE': undefined } }, /missing header X-SIGNATURE/],
      ['missing bearer', { headers: { SvcAuthorization: undefined } }, /missing header SvcAuthorization/],
      ['missing api key', { headers: { SvcApiKey: undefined } }, /missing header SvcApiKey/],
      ['wrong api key', { headers: { SvcApiKey: 'nope' } }, /unknown API key/],
      ['tampered body', { sendBody: '{"x":1}' }, /signature/],
      ['wrong secret key', { secretKey: 'not-the-secret' }, /signature/],
      ['signed token differs from header token', { signedToken: 'AT-something-else' }, /signature/],
      ['stale timestamp', { timestamp: String(Math.floor(Date.UTC(2026, 0, 1, 11, 54) / 1000)) }, /timestamp outside the accepted window/],
      ['future timestamp', { timestamp: String(Math.floor(Date.UTC(2026, 0, 1, 12, 6) / 1000)) }, /timestamp outside the accepted window/],
      ['non-integer timestamp', { timestamp: '17e8' }, /timestamp/],
      ['unknown token', { headers: { SvcAuthorization: 'Bearer ATdoesnotexist' } }, /access token is not valid/],
      ['not a bearer', { headers: { SvcAuthorization: 'Basic abc' } }, /Bearer/],
      // The live token, but not written as spec 5.4 shows it.
      ['bearer in lower case', { headers: { SvcAuthorization: `bearer ${token}` } }, /must be "Bearer <accessToken>"/],
      ['two spaces after Bearer', { headers: { SvcAuthorization: `Bearer  ${token}` } }, /must be "Bearer <accessToken>"/],
    ];
    for (const [name, tweaks, msg] of cases) {
      const reply = await caller.business(BALANCE, {}, tweaks);
      expect([name, reply.status, reply.code]).toEqual([name, 401, '1004']);
      expect(reply.msg, name).toMatch(msg);
    }
    expect(sandbox.stats().authFailures['1004']).toBe(cases.length);
  });

  it('refuses a replayed nonce, but only once the first use verified', async () => {
    const { caller } = await setup();
    await caller.accessToken();
    // A forged request must not burn the nonce for the genuine one.
    expect((await caller.business(BALANCE, {}, { nonce: 'n-1', secretKey: 'forged' })).code).toBe('1004');
    expect((await caller.business(BALANCE, {}, { nonce: 'n-1' })).code).toBe('0000');
    const replay = await caller.business(BALANCE, {}, { nonce: 'n-1' });
    expect([replay.status, replay.code, replay.msg]).toEqual([401, '1004', 'nonce replayed']);
  });

  it('forgets a nonce after the window', async () => {
    const { caller, clock } = await setup({ nonceWindowSeconds: 60 });
    await caller.accessToken();
    expect((await caller.business(BALANCE, {}, { nonce: 'again' })).code).toBe('0000');
    clock.advance(61_000);
    expect((await caller.business(BALANCE, {}, { nonce: 'again' })).code).toBe('0000');
  });

  it('refuses token calls that are unsigned, signed by another key, or for another merchant', async () => {
    const { caller } = await setup();
    const wrongKey = await caller.accessToken({ signWith: otherKeys.privateKey });
    expect([wrongKey.status, wrongKey.code]).toEqual([401, '1004']);
    const wrongMerchant = await caller.token('/apis/v1/access-token', { grantType: 'client_credentials', merchantCode: 'M999' });
    expect([wrongMerchant.status, wrongMerchant.code, wrongMerchant.msg]).toEqual([401, '1004', 'merchantCode does not match the API key']);
    const tampered = await caller.accessToken({ sendBody: '{"grantType":"client_credentials","merchantCode":"M001","businessId":"x"}' });
    expect(tampered.code).toBe('1004');
    const missing = await caller.accessToken({ headers: { 'X-TIMESTAMP': undefined } });
    expect([missing.code, missing.msg]).toEqual(['1004', 'missing header X-TIMESTAMP']);
    const noGrant = await caller.token('/apis/v1/access-token', {});
    expect([noGrant.status, noGrant.code]).toEqual([200, '2002']);
    expect(noGrant.msg).toMatch(/grantType/);
  });

  it('answers 1009 for an expired access token and 1010 for an expired refresh token', async () => {
    const { caller, clock, sandbox } = await setup({ accessTokenTtlSeconds: 5, refreshTokenTtlSeconds: 20 });
    await caller.accessToken();
    clock.advance(6_000);
    const expired = await caller.business(BALANCE, {});
    expect([expired.status, expired.code]).toEqual([401, '1009']);

    expect((await caller.refresh()).code).toBe('0000');
    expect((await caller.business(BALANCE, {})).code).toBe('0000');

    clock.advance(21_000);
    const refreshExpired = await caller.refresh();
    expect([refreshExpired.status, refreshExpired.code]).toEqual([401, '1010']);
    expect((await caller.accessToken()).code).toBe('0000');
    expect(sandbox.stats()).toMatchObject({ accessTokensIssued: 2, refreshesIssued: 1, authFailures: { '1009': 1, '1010': 1 } });
  });

  it('supersedes the previous access token, refresh token and secret key on refresh', async () => {
    const { caller } = await setup();
    await caller.accessToken();
    const old = { ...caller.creds! };
    await caller.refresh();
    const fresh = caller.creds!;
    expect(fresh.accessToken).not.toBe(old.accessToken);
    expect(fresh.secretKey).not.toBe(old.secretKey);

    caller.creds = old;
    const oldToken = await caller.business(BALANCE, {});
    expect([oldToken.status, oldToken.code, oldToken.msg]).toEqual([401, '1004', 'access token is not valid']);
    const oldRefresh = await caller.refresh(old.refreshToken);
    expect([oldRefresh.status, oldRefresh.code]).toEqual([401, '1004']);
    // The new token with the old secret key does not verify either.
    caller.creds = { ...fresh, secretKey: old.secretKey };
    expect((await caller.business(BALANCE, {})).code).toBe('1004');
    caller.creds = fresh;
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    const unknown = await caller.refresh('RTunknown');
    expect([unknown.status, unknown.code]).toEqual([401, '1004']);
  });

  it('a new access-token call leaves other live credentials usable (one set per instance)', async () => {
    const { caller } = await setup();
    await caller.accessToken();
    const first = { ...caller.creds! };
    await caller.accessToken();
    const second = { ...caller.creds! };
    expect(second.accessToken).not.toBe(first.accessToken);
    caller.creds = first;
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    caller.creds = second;
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
  });

  it('issues secret keys valid in the configured key encoding', async () => {
    for (const encoding of ['hex', 'base64'] as const) {
      const clock = new ManualClock();
      const sandbox = await startSandbox({ merchants: [merchant(keys)], clock, hmacKeyEncoding: encoding });
      servers.push(sandbox);
      const caller = new TestCaller({
        url: sandbox.url,
        apiKey: 'api-key-M001',
        merchantCode: 'M001',
        privateKey: keys.privateKey,
        clock,
        hmacKeyEncoding: encoding,
      });
      await caller.accessToken();
      expect(caller.creds!.secretKey).toMatch(encoding === 'hex' ? /^[0-9a-f]{64}$/ : /^[A-Za-z0-9+/]{43}=$/);
      expect((await caller.business(BALANCE, {})).code).toBe('0000');
    }
  });

  it('client-id mode: X-Client-Id, clientId, millisecond timestamps, Authorization: Bearer', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 0, 123));
    const sandbox = await startSandbox({ merchants: [merchant(keys, { clientId: 'client-42' })], clock, authMode: 'client-id' });
    servers.push(sandbox);
    const caller = new TestCaller({
      url: sandbox.url,
      apiKey: 'api-key-M001',
      merchantCode: 'M001',
      clientId: 'client-42',
      privateKey: keys.privateKey,
      clock,
      mode: 'client-id',
    });
    const reply = await caller.accessToken();
    expect(reply.code).toBe('0000');
    expect(Object.keys(reply.data).sort()).toEqual(['accessToken', 'expiresIn', 'refreshToken', 'secretKey']);
    expect(num(reply.data, 'expiresIn')).toBe('7200');
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    // Seconds are outside the window of a millisecond clock.
    expect((await caller.business(BALANCE, {}, { timestamp: String(Math.floor(clock.now() / 1000)) })).msg).toMatch(/timestamp/);
    // The standard header is not the one this deployment reads.
    const standard = await caller.business(
      BALANCE,
      {},
      { headers: { Authorization: undefined, SvcAuthorization: `Bearer ${caller.creds!.accessToken}` } },
    );
    expect([standard.code, standard.msg]).toEqual(['1004', 'missing header Authorization']);
    const wrongClient = await caller.accessToken({ headers: { 'X-Client-Id': 'client-43' } });
    expect(wrongClient.code).toBe('1004');
    expect((await caller.refresh()).code).toBe('0000');
  });

  it('answers 404 with code 1404 for unknown paths, and 413 for huge bodies', async () => {
    const { sandbox, caller } = await setup();
    const res = await fetch(`${sandbox.url}/apis/v1/nope`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as { code: string }).code).toBe('1404');
    await caller.accessToken();
    const big = await caller.business('/apis/v1/fiat-payout/query', { merchantReferenceIds: ['x'.repeat(1024 * 1024)] });
    expect([big.status, big.code]).toEqual([413, '1413']);
  });

  it('survives garbage: non-JSON bodies, malformed HTTP', async () => {
    const { sandbox, caller } = await setup();
    await caller.accessToken();
    const notJson = await caller.business('/apis/v1/fiat-payout/create', undefined, { rawBody: 'not json {' });
    expect([notJson.status, notJson.code]).toEqual([200, '2002']);
    const hugeExponent = await caller.business('/apis/v1/fiat-payout/create', undefined, { rawBody: '{"payoutAmount":1e999999}' });
    expect(hugeExponent.code).toBe('2002');
    const { connect } = await import('node:net');
    const port = sandbox.port;
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.end('GARBAGE /// HTTP/9\r\n\r\n'));
      socket.on('data', () => undefined);
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
    });
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
  });
});

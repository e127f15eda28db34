/**
 * Shared setup for the client <-> sandbox tests: the client options factory,
 * an environment (sandbox on its own ManualClock, a MITM proxy, a client on
 * its own ManualClock talking through the proxy), payout requests, and the
 * leak watch: every ApiError a test file sees and every secret the proxy
 * saw, so each file can prove no secret reached an error message or log shape.
 * Keys and merchants come from the sandbox harness (test/sandbox/harness.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID, type KeyObject } from 'node:crypto';
import { ApiError, PayoutApiClient, type ApiCallRecord, type PayoutApiClientOptions } from '../../src/api/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { startSandbox, type SandboxMerchant, type SandboxOptions, type SandboxServer } from '../../src/sandbox/index.js';
import { makeKeys, merchant, type TestKeys } from '../sandbox/harness.js';
import { payoutRequest as requestFor } from '../support/rows.js';
import { startMitm, type Mitm } from './mitm.js';

export const MERCHANT = 'M001';
/** Distinctive, so a leak into any message is found by a plain substring search. */
export const API_KEY = 'ak-apitest-Q7w9Zr4Lm2Xc';
export const START_MS = Date.UTC(2026, 0, 1, 12);

export type ClientOverrides = Partial<Omit<PayoutApiClientOptions, 'auth' | 'retry'>> & {
  auth?: Partial<PayoutApiClientOptions['auth']>;
  retry?: Partial<PayoutApiClientOptions['retry']>;
};

/** Client options for the tests: fast retries, deterministic jitter, generous timeout. */
export function clientOptions(baseUrl: string, privateKey: KeyObject, o: ClientOverrides = {}): PayoutApiClientOptions {
  const { auth, retry, ...rest } = o;
  return {
    baseUrl,
    merchantCode: MERCHANT,
    apiKey: API_KEY,
    privateKey,
    sortKeys: true,
    hmacKeyEncoding: 'utf8',
    timeoutMs: 5_000,
    queryMaxIds: 100,
    random: () => 0.5,
    ...rest,
    auth: { mode: 'standard', grantType: 'client_credentials', refreshBeforeExpirySeconds: 10, ...auth },
    retry: { maxAttempts: 3, baseMs: 5, maxMs: 20, ...retry },
  };
}

// ---- keys ------------------------------------------------------------------

let keyCache: { main: TestKeys & { privateKeyPem: string }; other: TestKeys } | undefined;

/** The merchant's key pair and an unrelated one, generated once per test file. */
export function testKeys(): { main: TestKeys & { privateKeyPem: string }; other: TestKeys } {
  if (!keyCache) {
    const main = makeKeys();
    const privateKeyPem = main.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    keyCache = { main: { ...main, privateKeyPem }, other: makeKeys() };
  }
  return keyCache;
}

// ---- environment -------------------------------------------------------------

export interface Env {
  sandbox: SandboxServer;
  proxy: Mitm;
  client: PayoutApiClient;
  sandboxClock: ManualClock;
  clientClock: ManualClock;
  /** Every HTTP exchange the client reported (onCall). */
  calls: ApiCallRecord[];
  /** How the client renewed its credentials, in order (onTokenRenewed). */
  renewals: ('acquire' | 'refresh')[];
  /** Another client on the same proxy (its own clock, credentials and records). */
  newClient(o?: ClientOverrides): { client: PayoutApiClient; clock: ManualClock; calls: ApiCallRecord[] };
}

const closers: (() => Promise<void>)[] = [];

/** Closes every sandbox and proxy the current test started (use in afterEach). */
export async function closeAll(): Promise<void> {
  await Promise.all(closers.splice(0).map((close) => close()));
}

export interface EnvOptions {
  sandbox?: Partial<SandboxOptions>;
  /** Changes to the one merchant of the sandbox. */
  merchant?: Partial<SandboxMerchant>;
  client?: ClientOverrides;
}

/**
 * A sandbox (own ManualClock, settlement far away so records stay PENDING),
 * a MITM proxy in front of it, and a client through the proxy whose
 * ManualClock starts at the same instant.
 */
export async function startEnv(o: EnvOptions = {}): Promise<Env> {
  const { main } = testKeys();
  const sandboxClock = new ManualClock(START_MS);
  const sandbox = await startSandbox({
    merchants: [merchant(main, { merchantCode: MERCHANT, apiKey: API_KEY, ...o.merchant })],
    clock: sandboxClock,
    seed: 11,
    settlement: { minDelayMs: 600_000, maxDelayMs: 600_000 },
    ...o.sandbox,
  });
  closers.push(() => sandbox.close());
  const proxy = await startMitm(sandbox.url);
  closers.push(() => proxy.close());
  leakWatch.proxies.push(proxy);

  const newClient = (over: ClientOverrides = {}): { client: PayoutApiClient; clock: ManualClock; calls: ApiCallRecord[] } => {
    const clock = new ManualClock(START_MS);
    const calls: ApiCallRecord[] = [];
    const base = o.client ?? {};
    const client = new PayoutApiClient(
      clientOptions(proxy.url, main.privateKey, {
        clock,
        onCall: (c) => calls.push(c),
        ...base,
        ...over,
        auth: { ...base.auth, ...over.auth },
        retry: { ...base.retry, ...over.retry },
      }),
    );
    return { client, clock, calls };
  };
  const renewals: ('acquire' | 'refresh')[] = [];
  const first = newClient({ onTokenRenewed: (how) => renewals.push(how) });
  return { sandbox, proxy, client: first.client, sandboxClock, clientClock: first.clock, calls: first.calls, renewals, newClient };
}

/** A port on 127.0.0.1 nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// ---- payouts -----------------------------------------------------------------

/** A request under a fresh reference (the shared test row), for 1000 PHP unless `over` says otherwise. */
export function payoutRequest(over: Partial<PayoutRequest> = {}): PayoutRequest {
  return requestFor(`REF-${randomUUID()}`, { payoutAmount: '1000', ...over });
}

// ---- leak watch --------------------------------------------------------------

const leakWatch = { errors: [] as ApiError[], proxies: [] as Mitm[] };

/** Awaits a call that must fail with an ApiError; records the error for the leak check. */
export async function apiErrorOf(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiError) {
      leakWatch.errors.push(err);
      return err;
    }
    throw err;
  }
  throw new Error('expected the call to fail with an ApiError, it succeeded');
}

/** Every secret this file's tests put on the wire or hold: API key, PEM, issued tokens and keys, bearer headers. */
export function secretsSeen(): string[] {
  const { main } = testKeys();
  const pemBody = main.privateKeyPem
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('-----'))
    .map((line) => line.trim());
  const secrets = new Set<string>([API_KEY, main.privateKeyPem, ...pemBody]);
  for (const proxy of leakWatch.proxies) {
    for (const c of proxy.issued) for (const s of [c.accessToken, c.refreshToken, c.secretKey]) secrets.add(s);
    for (const f of proxy.forwarded) {
      for (const [k, v] of f.headers) {
        if (/^(svc)?authorization$/i.test(k)) secrets.add(v.replace(/^Bearer\s+/i, ''));
        if (/^x-signature$/i.test(k)) secrets.add(v);
      }
    }
  }
  return [...secrets].filter((s) => s.length >= 8);
}

/** Every (error, secret) pair where the secret shows up in the error's message, toLog() shape, string or stack. */
export function findLeaks(errors: readonly ApiError[], secrets: readonly string[]): string[] {
  const leaks: string[] = [];
  for (const err of errors) {
    const texts = [err.message, err.msg, String(err), JSON.stringify(err.toLog()), err.stack ?? ''];
    secrets.forEach((s, i) => {
      if (texts.some((t) => t.includes(s))) leaks.push(`${err.code} ${err.endpoint} contains secret #${i}`);
    });
  }
  return leaks;
}

/** The ApiErrors recorded so far in this file, checked against every secret seen. */
export function leakReport(): { errors: number; secrets: number; leaks: string[] } {
  const secrets = secretsSeen();
  return { errors: leakWatch.errors.length, secrets: secrets.length, leaks: findLeaks(leakWatch.errors, secrets) };
}

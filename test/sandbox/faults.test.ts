import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import {
  loadSandboxConfigFile,
  sandboxOptionsSchema,
  startSandbox,
  type SandboxOptions,
  type SandboxServer,
} from '../../src/sandbox/index.js';
import { makeKeys, merchant, payoutBody, str, TestCaller, type TestKeys } from './harness.js';

const CREATE = '/apis/v1/fiat-payout/create';
const BALANCE = '/apis/v1/balance/query';

let keys: TestKeys;
let dir: string;
const servers: SandboxServer[] = [];
beforeAll(() => {
  keys = makeKeys();
  dir = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function setup(extra: Partial<SandboxOptions> = {}): Promise<{ sandbox: SandboxServer; caller: TestCaller }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 12));
  const sandbox = await startSandbox({
    merchants: [merchant(keys)],
    clock,
    seed: 9,
    settlement: { minDelayMs: 60_000, maxDelayMs: 60_000 },
    ...extra,
  });
  servers.push(sandbox);
  const caller = new TestCaller({ url: sandbox.url, apiKey: 'api-key-M001', merchantCode: 'M001', privateKey: keys.privateKey, clock });
  await caller.accessToken();
  return { sandbox, caller };
}

interface AdminReply {
  status: number;
  code: string;
  msg: string;
  data: Record<string, unknown>;
}

async function admin(sandbox: SandboxServer, method: 'GET' | 'POST', path: string, body?: unknown): Promise<AdminReply> {
  const res = await fetch(`${sandbox.url}/__sandbox/${path}`, { method, ...(body !== undefined && { body: JSON.stringify(body) }) });
  const json = (await res.json()) as Omit<AdminReply, 'status'>;
  return { status: res.status, ...json };
}

describe('sandbox faults', () => {
  it('commit-then-drop: the client sees a socket error, the ledger has the payout', async () => {
    const { sandbox, caller } = await setup({ faults: { commitThenDropRate: 1 } });
    await expect(caller.business(CREATE, payoutBody())).rejects.toThrow(/fetch failed/);
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.balances('M001')['USDT']).toBe('981.722222');
    // Only the create is affected: a query still answers.
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    expect(sandbox.stats().faults.commitThenDrop).toBe(1);
  });

  it('commit delay: the create lands that long after it arrived; a call answered meanwhile finds nothing made', async () => {
    const { sandbox, caller } = await setup({ faults: { commitDelayMs: 1000 } });
    const creating = caller.business(CREATE, payoutBody());
    // Only creates wait: the balance is answered while the create has not been done.
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    expect(sandbox.ledger()).toHaveLength(0);
    expect((await creating).code).toBe('0000');
    expect(sandbox.ledger()).toHaveLength(1);
    expect(sandbox.stats().faults.commitDelayed).toBe(1);
  });

  it('commit-then-error: HTTP 500, the payout exists', async () => {
    const { sandbox, caller } = await setup({ faults: { commitThenErrorRate: 1 } });
    const reply = await caller.business(CREATE, payoutBody());
    expect([reply.status, reply.code]).toEqual([500, '1500']);
    expect(sandbox.ledger()).toHaveLength(1);
  });

  it('errorRate and dropRate: nothing committed', async () => {
    const { sandbox, caller } = await setup({ faults: { errorRate: 1 } });
    const reply = await caller.business(CREATE, payoutBody());
    expect([reply.status, reply.code]).toEqual([500, '1500']);
    sandbox.setFaults({ errorRate: 0, dropRate: 1 });
    await expect(caller.business(CREATE, payoutBody())).rejects.toThrow(/fetch failed/);
    expect(sandbox.ledger()).toHaveLength(0);
    // Token calls are not a fault target by default.
    expect((await caller.accessToken()).code).toBe('0000');
    sandbox.setFaults({ endpoints: ['/apis/v1/fiat-payout/create'] });
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    sandbox.setFaults({ dropRate: 0 });
    expect((await caller.business(CREATE, payoutBody())).code).toBe('0000');
    expect(sandbox.stats().faults).toMatchObject({ errors: 1, dropped: 1 });
  });

  it('rate limit: HTTP 429, Retry-After, code 1429, nothing committed', async () => {
    const { sandbox, caller } = await setup({ faults: { rateLimit: { requestsPerSecond: 0.001, burst: 2, retryAfterSeconds: 7 } } });
    expect((await caller.business(CREATE, payoutBody())).code).toBe('0000');
    expect((await caller.business(BALANCE, {})).code).toBe('0000');
    const limited = await caller.business(CREATE, payoutBody());
    expect([limited.status, limited.code, limited.headers.get('retry-after')]).toEqual([429, '1429', '7']);
    expect(limited.msg).toMatch(/RATE_LIMITED/);
    expect(sandbox.ledger()).toHaveLength(1);
    sandbox.setFaults({ rateLimit: null });
    expect((await caller.business(CREATE, payoutBody())).code).toBe('0000');
  });

  it('latency is added after the work: a client that gives up still created the payout', async () => {
    const { sandbox, caller } = await setup({ faults: { latencyMs: [300, 400] } });
    const waiting = caller.business(CREATE, payoutBody());
    // Close the sandbox's sockets under the waiting client instead of racing a client timer.
    await expect.poll(() => sandbox.ledger().length, { timeout: 3000, interval: 5 }).toBe(1);
    expect(sandbox.stats().faults.delayed).toBe(1);
    await sandbox.close();
    await expect(waiting).rejects.toThrow();
  });
});

describe('sandbox admin endpoints', () => {
  it('health, ledger, stats, settle, balance and faults over HTTP', async () => {
    const { sandbox, caller } = await setup({ settlement: { minDelayMs: 0, maxDelayMs: 0, holdSuffix: '77' } });
    const health = await admin(sandbox, 'GET', 'health');
    expect([health.status, health.code, health.data]).toEqual([200, '0000', { status: 'ok', seed: 9 }]);

    const body = payoutBody({}, '123477');
    const created = await caller.business(CREATE, body);
    const ledger = await admin(sandbox, 'GET', 'ledger');
    expect(ledger.data['payouts']).toEqual(sandbox.ledger());
    expect((ledger.data['payouts'] as { deductionAmount: string }[])[0]!.deductionAmount).toBe('18.277778');

    const settled = await admin(sandbox, 'POST', 'settle', { payoutId: str(created.data, 'payoutId'), status: 'PAID' });
    expect(settled.data).toEqual({ moved: 1 });
    expect(sandbox.ledger()[0]!.status).toBe('PAID');
    const again = await admin(sandbox, 'POST', 'settle', { merchantReferenceId: body['merchantReferenceId'], status: 'CANCELLED' });
    expect(again.data).toEqual({ moved: 0 });
    const badStatus = await admin(sandbox, 'POST', 'settle', { payoutId: 'x', status: 'LOST' });
    expect([badStatus.status, badStatus.code]).toEqual([400, '2002']);

    const balance = await admin(sandbox, 'POST', 'balance', { merchantCode: 'M001', currency: 'USDC', amount: '12.50' });
    expect(balance.data).toEqual({ balances: { USDT: '981.722222', USDC: '12.5' } });
    const rawNumber = await fetch(`${sandbox.url}/__sandbox/balance`, {
      method: 'POST',
      body: '{"merchantCode":"M001","currency":"USDC","amount":0.10000000000000000001}',
    });
    expect(rawNumber.status).toBe(200);
    expect(sandbox.balances('M001')['USDC']).toBe('0.10000000000000000001');
    expect((await admin(sandbox, 'POST', 'balance', { merchantCode: 'NOPE', currency: 'USDC', amount: '1' })).status).toBe(400);
    expect((await admin(sandbox, 'POST', 'balance', { merchantCode: 'M001', currency: 'USDC', amount: '-1' })).status).toBe(400);

    const faults = await admin(sandbox, 'POST', 'faults', { errorRate: 0.25, latencyMs: [1, 2] });
    expect(faults.data['faults']).toMatchObject({ errorRate: 0.25, latencyMs: [1, 2], dropRate: 0 });
    const badFaults = await admin(sandbox, 'POST', 'faults', { errorRate: 2 });
    expect([badFaults.status, badFaults.code]).toEqual([400, '2002']);
    expect(badFaults.msg).toMatch(/errorRate/);
    const typo = await admin(sandbox, 'POST', 'faults', { errrorRate: 1 });
    expect(typo.msg).toMatch(/errrorRate/);

    const stats = await admin(sandbox, 'GET', 'stats');
    expect(stats.data).toMatchObject({ creates: 1, paid: 1, accessTokensIssued: 1 });
    expect((stats.data['requests'] as Record<string, number>)['/apis/v1/fiat-payout/create']).toBe(1);
    expect((await admin(sandbox, 'GET', 'nothing')).status).toBe(404);
  });
});

describe('sandbox options', () => {
  it('fills in the contract defaults', () => {
    const config = sandboxOptionsSchema.parse({ merchants: [merchant(keys)] });
    expect(config).toMatchObject({
      host: '127.0.0.1',
      port: 0,
      authMode: 'standard',
      canonicalJson: { sortKeys: true },
      hmacKeyEncoding: 'utf8',
      clockSkewSeconds: 300,
      nonceWindowSeconds: 600,
      accessTokenTtlSeconds: 7200,
      refreshTokenTtlSeconds: 86400,
      queryMaxIds: 100,
      duplicatePolicy: 'return-original',
      fee: { fixed: '0.5' },
      amountLimits: { min: '0.01', max: '1000000' },
      settlement: { minDelayMs: 2000, maxDelayMs: 10000, cancelSuffix: '0000', holdSuffix: '9999' },
      webhook: { retryScheduleMs: [1000, 5000, 25000, 120000, 600000], timeoutMs: 15000 },
      faults: { errorRate: 0, rateLimit: null, endpoints: null, latencyMs: 0 },
    });
    expect(config.rates['PHP']).toBe('56.25');
  });

  it('loads a JSON config file and names the bad field', () => {
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ merchants: [merchant(keys)], duplicatePolicy: 'reject', rates: { PHP: '57' } }));
    const loaded = loadSandboxConfigFile(good);
    expect(loaded.duplicatePolicy).toBe('reject');
    expect(loaded.rates).toEqual({ PHP: '57' });

    const cases: [unknown, RegExp][] = [
      [{ merchants: [{ ...merchant(keys), balances: { USDT: 1000 } }] }, /merchants\[0\]\.balances\.USDT: expected a plain decimal/],
      [{ merchants: [merchant(keys)], fee: { fixed: 0.5 } }, /fee\.fixed/],
      [
        { merchants: [merchant(keys, { webhookUrl: 'http://127.0.0.1:1/x' })] },
        /merchants\[0\]\.webhookSecret: required when webhookUrl is set/,
      ],
      [{ merchants: [merchant(keys, { publicKey: 'bm90IGEga2V5' })] }, /merchants\[0\]\.publicKey/],
      [{ merchants: [merchant(keys), merchant(keys)] }, /merchants\[1\]\.merchantCode: two merchants share/],
      [{ merchants: [merchant(keys)], settlement: { minDelayMs: 5, maxDelayMs: 1 } }, /settlement: minDelayMs must not exceed maxDelayMs/],
      [{ merchants: [merchant(keys)], faults: { endpoints: ['/apis/v1/nope'] } }, /faults\.endpoints\[0\]/],
      [{ merchants: [merchant(keys)], portt: 1 }, /portt/],
      [{ merchants: [merchant(keys)], balance: { path: '/apis/v1/fiat-payout/query' } }, /balance\.path: is the path of another endpoint/],
      [{ merchants: [merchant(keys)], payoutQuery: { listField: '' } }, /payoutQuery\.listField: must be a JSON field name/],
      [{ merchants: [] }, /merchants/],
    ];
    cases.forEach(([json, message], i) => {
      const file = join(dir, `bad-${i}.json`);
      writeFileSync(file, JSON.stringify(json));
      expect(() => loadSandboxConfigFile(file)).toThrow(message);
    });
    const broken = join(dir, 'broken.json');
    writeFileSync(broken, '{"merchants": [{"webhookSecret": "s3cr3t-value", }]');
    expect(() => loadSandboxConfigFile(broken)).toThrow(/is not valid JSON$/);
    expect(() => loadSandboxConfigFile(join(dir, 'missing.json'))).toThrow(/cannot be read \(ENOENT\)/);
  });

  it('refuses invalid options at start and an occupied port', async () => {
    await expect(startSandbox({ merchants: [merchant(keys)], clockSkewSeconds: -1 })).rejects.toThrow(/clockSkewSeconds/);
    const first = await startSandbox({ merchants: [merchant(keys)] });
    servers.push(first);
    await expect(startSandbox({ merchants: [merchant(keys)], port: first.port })).rejects.toThrow(/cannot listen/);
  });

  it('logs through a pino logger without secrets or full account numbers', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const logger = pino({ level: 'debug' }, stream);
    const { sandbox, caller } = await setup({ logger, settlement: { minDelayMs: 0, maxDelayMs: 0 } });
    await caller.business(CREATE, payoutBody({}, '998877665544'));
    await caller.business(BALANCE, {}, { secretKey: 'wrong' });
    await expect.poll(() => sandbox.stats().paid, { timeout: 3000, interval: 5 }).toBe(1);
    const text = lines.join('');
    expect(text).toContain('payout created');
    expect(text).toContain('request refused');
    expect(text).toContain('5544');
    for (const secret of [caller.creds!.accessToken, caller.creds!.secretKey, caller.creds!.refreshToken, 'api-key-M001', '998877665544']) {
      expect(text).not.toContain(secret);
    }
  });
});

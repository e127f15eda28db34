/**
 * The pure parts of the receiver: verification of one delivery, reading an
 * event, the nonce window, option validation; and the server's lifecycle
 * (start/stop, keep-alive sockets, a port in use).
 */
import { request as httpRequest, Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/domain/clock.js';
import { createLogger } from '../../src/log/index.js';
import { DEFAULT_WEBHOOK_SCHEME, signHmac, webhookStringToSign } from '../../src/signing/index.js';
import {
  NonceWindow,
  WebhookConfigError,
  WebhookReceiver,
  WebhookStartError,
  parseWebhookEvent,
  resolveReceiverOptions,
  verifyDelivery,
  type WebhookReceiverOptions,
} from '../../src/webhook/index.js';
import { PATH, SECRET, START_MS, closeAll, eventBody, signedHeaders, startReceiver, tempDb } from './helpers.js';

afterEach(closeAll);

const KEY = Buffer.from(SECRET, 'utf8');
const { headers: HEADERS, timestampUnit, stringToSign } = DEFAULT_WEBHOOK_SCHEME;
const OPTS = { canonical: { sortKeys: true }, timestampSkewSeconds: 300, headers: HEADERS, timestampUnit, stringToSign };

describe('verifyDelivery', () => {
  const clock = new ManualClock(START_MS);

  it('verifies the contract signature over the minified body (known answer)', () => {
    const body = '{ "b": 1.50, "a": [1e2, null] }';
    const headers = { 'x-timestamp': String(START_MS / 1000), 'x-nonce': 'n1', 'x-signature': '' };
    const stringToSign = webhookStringToSign({
      path: PATH,
      minifiedBody: '{"a":[100,null],"b":1.50}',
      timestamp: headers['x-timestamp'],
      nonce: 'n1',
    });
    expect(stringToSign).toMatch(/^POST:\/payoutd\/webhook:[0-9a-f]{64}:1767268800:n1$/);
    headers['x-signature'] = signHmac(KEY, stringToSign);
    expect(verifyDelivery({ path: PATH, bodyText: body, headers }, KEY, OPTS, START_MS)).toEqual({ ok: true, nonce: 'n1' });
    // With sortKeys false the key order as sent is what was signed.
    expect(verifyDelivery({ path: PATH, bodyText: body, headers }, KEY, { ...OPTS, canonical: { sortKeys: false } }, START_MS).ok).toBe(
      false,
    );
  });

  it('names what failed, never a value', () => {
    const body = eventBody();
    const good = signedHeaders(body, clock);
    const lower = Object.fromEntries(Object.entries(good).map(([k, v]) => [k.toLowerCase(), v]));
    const check = (headers: Record<string, string | string[]>, nowMs = START_MS) =>
      verifyDelivery({ path: PATH, bodyText: body, headers }, KEY, OPTS, nowMs);
    expect(check(lower).ok).toBe(true);
    expect(check({ ...lower, 'x-nonce': ['a', 'b'] })).toEqual({
      ok: false,
      verdict: 'bad_signature',
      reason: 'X-NONCE missing or malformed',
    });
    expect(check(lower, START_MS + 301_000)).toMatchObject({ ok: false, verdict: 'stale' });
    const wrong = check({ ...lower, 'x-signature': good['X-SIGNATURE']!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')) });
    expect(wrong).toEqual({ ok: false, verdict: 'bad_signature', reason: 'signature does not match' });
    expect(JSON.stringify(wrong)).not.toContain(good['X-SIGNATURE']!.slice(1));
  });
});

describe('parseWebhookEvent', () => {
  it('reads a payout.updated event', () => {
    expect(
      parseWebhookEvent(
        '{"data":{"completeTime":"2026-01-01T12:00:00.000Z","merchantReferenceId":"R1","payoutId":"P1","status":"PAID"},"event":"payout.updated","eventId":"E1","timestamp":"x"}',
      ),
    ).toEqual({
      kind: 'payout.updated',
      eventId: 'E1',
      payoutId: 'P1',
      merchantReferenceId: 'R1',
      status: 'PAID',
      completeTime: '2026-01-01T12:00:00.000Z',
    });
  });

  it('tells other kinds and unusable bodies apart', () => {
    expect(parseWebhookEvent('{"event":"balance.low"}')).toEqual({ kind: 'other', event: 'balance.low', eventId: null });
    expect(parseWebhookEvent('{"event":"payout.updated","eventId":"E","data":{"payoutId":"P","status":1}}').kind).toBe('malformed');
    expect(
      parseWebhookEvent('{"event":"payout.updated","eventId":"E","data":{"payoutId":"P","status":"SEVENTEEN_CHARS_X"}}'),
    ).toMatchObject({
      kind: 'malformed',
      reason: 'data.status not a string of 1..16 characters without NUL',
    });
    // PostgreSQL cannot store a NUL: an event holding one is refused whole, never half recorded.
    expect(parseWebhookEvent('{"event":"payout.updated","eventId":"E\\u0000","data":{"payoutId":"P"}}')).toMatchObject({
      kind: 'malformed',
      reason: 'eventId missing, empty, over 128 characters or holding a NUL',
    });
    // A __proto__ key is data, never a prototype the fields could come from.
    expect(parseWebhookEvent('{"event":"payout.updated","eventId":"E","data":{"__proto__":{"payoutId":"P"}}}').kind).toBe('malformed');
    expect(parseWebhookEvent('['.repeat(100_000)).kind).toBe('malformed');
  });
});

describe('NonceWindow', () => {
  it('forgets nonces after the window and stays within its capacity', () => {
    const w = new NonceWindow(600_000, 3);
    w.record('a', 0);
    expect(w.has('a', 600_000)).toBe(true);
    expect(w.has('a', 600_001)).toBe(false);
    w.record('b', 600_001); // prunes a
    expect(w.size).toBe(1);
    for (const n of ['c', 'd', 'e']) w.record(n, 600_002);
    expect(w.size).toBe(3);
    expect(w.has('b', 600_002)).toBe(false);
    expect(w.has('e', 600_002)).toBe(true);
  });

  it('still knows a nonce when the clock steps back past the window', () => {
    const w = new NonceWindow(1000, 10);
    w.record('a', 50_000);
    expect(w.has('a', 10_000)).toBe(true);
  });
});

describe('options', () => {
  const base = async (): Promise<WebhookReceiverOptions> => ({
    port: 0,
    secret: SECRET,
    clock: new ManualClock(START_MS),
    logger: createLogger('silent'),
    db: await tempDb(),
  });

  it('fills the defaults', async () => {
    expect(resolveReceiverOptions(await base())).toMatchObject({
      host: '127.0.0.1',
      path: '/payoutd/webhook',
      signedPath: null,
      tls: null,
      keyEncoding: 'utf8',
      maxBodyBytes: 65536,
      timestampSkewSeconds: 300,
      nonceWindowSeconds: 600,
      canonicalJson: { sortKeys: true },
    });
  });

  it('names the bad option and never echoes the secret', async () => {
    const o = await base();
    expect(() => resolveReceiverOptions({ ...o, port: 70000 })).toThrow(
      'Expected `webhook.port` to be an integer from 0 to 65535, got 70000 (number)',
    );
    expect(() => resolveReceiverOptions({ ...o, maxBodyBytes: 0 })).toThrow('`webhook.maxBodyBytes`');
    expect(() => resolveReceiverOptions({ ...o, path: 'hooks' })).toThrow('`webhook.path`');
    expect(() => resolveReceiverOptions({ ...o, nonceWindowSeconds: 500 })).toThrow('at least twice timestampSkewSeconds (600)');
    expect(() => resolveReceiverOptions({ ...o, secret: '' })).toThrow(WebhookConfigError);
    let err: unknown;
    try {
      new WebhookReceiver({ ...o, secret: 'not-hex-Zq8LmX3vR7', keyEncoding: 'hex' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(WebhookConfigError);
    expect((err as Error).message).toBe('`webhook.secret` is not valid hex text');
  });
});

describe('lifecycle', () => {
  it('stop() closes keep-alive sockets and is idempotent; start() refuses to run twice', async () => {
    const h = await startReceiver();
    const agent = new Agent({ keepAlive: true });
    const body = eventBody();
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(h.url, { method: 'POST', agent, headers: signedHeaders(body, h.clock) }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end(body);
    });
    expect(status).toBe(200);
    const [socket] = Object.values(agent.freeSockets).flat();
    expect(socket).toBeDefined();
    const closed = new Promise<void>((resolve) => socket!.once('close', () => resolve()));
    await expect(h.receiver.start()).rejects.toBeInstanceOf(WebhookStartError);
    await h.receiver.stop();
    await closed;
    await h.receiver.stop();
    agent.destroy();
  });

  it('reports a port in use as a WebhookStartError', async () => {
    const h = await startReceiver();
    const port = h.receiver.port!;
    const other = new WebhookReceiver({ port, secret: SECRET, clock: h.clock, logger: createLogger('silent'), db: h.db });
    await expect(other.start()).rejects.toThrow(new RegExp(`cannot listen on 127.0.0.1:${port}: EADDRINUSE`));
  });

  it('reports unreadable TLS files without starting', async () => {
    const h = await startReceiver();
    const r = new WebhookReceiver({
      port: 0,
      secret: SECRET,
      clock: h.clock,
      logger: createLogger('silent'),
      db: h.db,
      tls: { certFile: '/nonexistent/cert.pem', keyFile: '/nonexistent/key.pem' },
    });
    await expect(r.start()).rejects.toThrow('cannot read webhook.tls.certFile /nonexistent/cert.pem: ENOENT');
  });
});

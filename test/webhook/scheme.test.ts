/**
 * The webhook signing settings (contract: Webhook): the real sandbox, switched
 * to other header names, millisecond timestamps, another string to sign and
 * hex key bytes, sends real deliveries over HTTP to the real receiver. Set the
 * same way, the receiver verifies them; set otherwise in any one of them, it
 * refuses them with 401. The settings are checked where they are read.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { PayoutApiClient } from '../../src/api/index.js';
import { startSandbox, type SandboxServer } from '../../src/sandbox/index.js';
import type { WebhookSchemeInput } from '../../src/signing/index.js';
import { WebhookConfigError, type WebhookVerdict } from '../../src/webhook/index.js';
import { API_KEY, MERCHANT, clientOptions, payoutRequest, testKeys } from '../api/helpers.js';
import { merchant } from '../sandbox/harness.js';
import { START_MS, closeAll, eventRows, onClose, send, startReceiver, startRecorder, type Harness, type Recorder } from './helpers.js';

afterEach(closeAll);

/** A hex secret: valid key text under keyEncoding hex (and under utf8, as other bytes). */
const HEX_SECRET = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';

const OTHER: Required<WebhookSchemeInput> = {
  keyEncoding: 'hex',
  headers: { timestamp: 'X-Hook-Time', nonce: 'X-Hook-Id', signature: 'X-Hook-Signature' },
  timestampUnit: 'milliseconds',
  stringToSign: { parts: ['timestamp', 'nonce', 'method', 'path', 'bodySha256'], separator: '.' },
};

interface World {
  h: Harness;
  sandbox: SandboxServer;
  client: PayoutApiClient;
  recorder: Recorder;
  sandboxClock: ManualClock;
}

/** Receiver (set as `receiver` says) <- recorder <- sandbox (sending as OTHER, one attempt each, on its own clock). */
async function world(receiver: WebhookSchemeInput, sandboxMs = START_MS): Promise<World> {
  const h = await startReceiver({ secret: HEX_SECRET, ...receiver });
  const recorder = await startRecorder(h.url);
  const { main } = testKeys();
  const sandboxClock = new ManualClock(sandboxMs);
  const sandbox = await startSandbox({
    merchants: [merchant(main, { merchantCode: MERCHANT, apiKey: API_KEY, webhookUrl: recorder.url, webhookSecret: HEX_SECRET })],
    clock: sandboxClock,
    seed: 11,
    settlement: { minDelayMs: 0, maxDelayMs: 5 },
    webhook: { retryScheduleMs: [], timeoutMs: 5000, ...OTHER },
  });
  onClose(() => sandbox.close());
  const client = new PayoutApiClient(clientOptions(sandbox.url, main.privateKey, { clock: sandboxClock }));
  return { h, sandbox, client, recorder, sandboxClock };
}

async function oneDelivery(w: World): Promise<{ status: number; verdicts: WebhookVerdict[] }> {
  const before = w.recorder.seen.length;
  await w.client.createPayout(payoutRequest());
  await expect.poll(() => w.recorder.seen.length, { timeout: 5000, interval: 5 }).toBe(before + 1);
  return { status: w.recorder.seen[before]!.status, verdicts: [...w.h.verdicts] };
}

describe('webhook signing settings, sandbox to receiver over HTTP', () => {
  it('verifies a delivery signed with other headers, milliseconds, another string to sign and hex key bytes when set the same', async () => {
    const w = await world(OTHER);
    expect(await oneDelivery(w)).toEqual({ status: 200, verdicts: ['accepted'] });
    const sent = w.recorder.seen[0]!;
    expect(sent.headers['x-hook-time']).toBe(String(START_MS));
    expect(sent.headers['x-hook-id']).toMatch(/^[0-9a-f]{32}$/);
    expect(sent.headers['x-hook-signature']).toMatch(/^[A-Za-z0-9+/]{86}==$/);
    expect(Object.keys(sent.headers).filter((k) => k.startsWith('x-timestamp') || k.startsWith('x-signature'))).toEqual([]);
    expect(await eventRows(w.h.db)).toHaveLength(1);
    // The nonce is still remembered: the same delivery again is a replay.
    expect((await send(w.h.url, { headers: sent.headers, body: sent.body })).status).toBe(401);
    expect(w.h.verdicts).toEqual(['accepted', 'replayed']);
  });

  it.each<[string, WebhookSchemeInput, WebhookVerdict]>([
    ['the contract defaults', {}, 'bad_signature'],
    [
      'other header names',
      { ...OTHER, headers: { timestamp: 'X-Hook-Time', nonce: 'X-Hook-Nonce', signature: 'X-Hook-Signature' } },
      'bad_signature',
    ],
    ['seconds', { ...OTHER, timestampUnit: 'seconds' }, 'stale'],
    ['the contract string to sign', { ...OTHER, stringToSign: {} }, 'bad_signature'],
    ['another separator', { ...OTHER, stringToSign: { ...OTHER.stringToSign, separator: ':' } }, 'bad_signature'],
    ['utf8 key bytes', { ...OTHER, keyEncoding: 'utf8' }, 'bad_signature'],
  ])('refuses the same delivery with 401 when set to %s', async (_what, receiver, verdict) => {
    const w = await world(receiver);
    expect(await oneDelivery(w)).toEqual({ status: 401, verdicts: [verdict] });
    expect(await eventRows(w.h.db)).toHaveLength(0);
  });

  it('keeps the skew in whole seconds when timestamps are milliseconds', async () => {
    // The sender's clock 299.999 s ahead: inside the 300 s window.
    const w = await world(OTHER, START_MS + 299_999);
    expect((await oneDelivery(w)).status).toBe(200);
    // 300.001 s ahead: outside, though it rounds to 300 whole seconds.
    w.sandboxClock.set(START_MS + 300_001);
    expect((await oneDelivery(w)).status).toBe(401);
    // And as far behind.
    w.sandboxClock.set(START_MS - 300_001);
    expect((await oneDelivery(w)).status).toBe(401);
    expect(w.h.verdicts).toEqual(['accepted', 'stale', 'stale']);
    expect(w.h.logs.lines.some((l) => l.includes('X-Hook-Time is -300001 ms ahead of the receiver clock'))).toBe(true);
  });
});

describe('webhook signing settings are checked where they are read', () => {
  const file = (webhook: Record<string, unknown>) => () => loadConfig({ env: {}, cwd: '/tmp' }, { webhook });

  it.each<[Record<string, unknown>, string]>([
    [{ headers: { nonce: 'X-Timestamp' } }, 'webhook.headers: timestamp, nonce and signature need a header name each'],
    [{ headers: { signature: 'X Signature' } }, 'webhook.headers.signature: must be an HTTP header name such as X-SIGNATURE'],
    [{ headers: { timestamp: 'Content-Length' } }, 'webhook.headers.timestamp: is a header HTTP itself uses; choose another name'],
    [{ timestampUnit: 'minutes' }, 'webhook.timestampUnit: must be one of seconds, milliseconds'],
    [
      { stringToSign: { parts: ['method', 'path', 'bodySha256', 'timestamp'] } },
      'webhook.stringToSign.parts: must include bodySha256, timestamp and nonce',
    ],
    [{ stringToSign: { parts: ['bodySha256', 'timestamp', 'nonce', 'nonce'] } }, 'webhook.stringToSign.parts: names a part twice'],
    [
      { stringToSign: { parts: ['bodySha256', 'timestamp', 'nonce', 'apiKey'] } },
      'webhook.stringToSign.parts.3: must be one of method, path, bodySha256, timestamp, nonce',
    ],
    [{ stringToSign: { separator: '' } }, 'webhook.stringToSign.separator: must be 1 to 8 printable characters'],
  ])('the daemon config %j', (webhook, message) => {
    expect(file(webhook)).toThrow(message);
  });

  it('the daemon config defaults to the contract', () => {
    const c = loadConfig({ env: {}, cwd: '/tmp' }, {});
    expect({
      keyEncoding: c.webhook.keyEncoding,
      headers: c.webhook.headers,
      unit: c.webhook.timestampUnit,
      sts: c.webhook.stringToSign,
    }).toEqual({
      keyEncoding: 'utf8',
      headers: { timestamp: 'X-TIMESTAMP', nonce: 'X-NONCE', signature: 'X-SIGNATURE' },
      unit: 'seconds',
      sts: { parts: ['method', 'path', 'bodySha256', 'timestamp', 'nonce'], separator: ':' },
    });
  });

  it('the receiver and the sandbox', async () => {
    await expect(startReceiver({ headers: { nonce: 'x-signature' } })).rejects.toThrow(
      new WebhookConfigError('WEBHOOK_CONFIG_INVALID', '`webhook.headers` timestamp, nonce and signature need a header name each'),
    );
    const { main } = testKeys();
    const m = merchant(main, { webhookUrl: 'http://127.0.0.1:9/hook', webhookSecret: 'not hex' });
    await expect(startSandbox({ merchants: [m], webhook: { keyEncoding: 'hex' } })).rejects.toThrow(
      'sandbox options: merchants[0].webhookSecret: not valid hex text (webhook.keyEncoding)',
    );
    await expect(startSandbox({ merchants: [m], webhook: { stringToSign: { parts: ['nonce', 'timestamp'] } } })).rejects.toThrow(
      'sandbox options: webhook.stringToSign.parts: must include bodySha256, timestamp and nonce',
    );
  });
});

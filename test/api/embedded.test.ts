/**
 * The embedded sandbox (api.baseUrl: embedded) is started with the daemon's own wire settings: auth.mode,
 * hmacKeyEncoding and, for a daemon with a webhook receiver, the webhook signing settings and the receiver's
 * URL. A user trying another answer against the embedded sandbox sees it work.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { connectApi, type ApiConnection } from '../../src/daemon/services.js';
import { createLogger } from '../../src/log/index.js';
import type { WebhookSchemeInput } from '../../src/signing/index.js';
import { payoutRequest } from './helpers.js';
import { closeAll, eventRows, onClose, startReceiver } from '../webhook/helpers.js';
import { ManualClock, systemClock } from '../../src/domain/clock.js';

afterEach(closeAll);

/** Closed after the test (before its receiver and folders go). */
function kept(api: ApiConnection): ApiConnection {
  onClose(() => api.close());
  return api;
}

const HEX_SECRET = '4f1b2b0b822cd15d6c15b0f00a089f86d081884c7d659a2feaa0c55ad015a3bf';
const WEBHOOK: WebhookSchemeInput = {
  keyEncoding: 'hex',
  headers: { timestamp: 'X-Hook-Time', nonce: 'X-Hook-Id', signature: 'X-Hook-Signature' },
  timestampUnit: 'milliseconds',
  stringToSign: { parts: ['nonce', 'timestamp', 'bodySha256', 'path', 'method'], separator: '|' },
};

function embeddedConfig(over: Record<string, unknown>) {
  const stateDir = mkdtempSync(join(tmpdir(), 'payoutd-embedded-'));
  onClose(async () => rmSync(stateDir, { recursive: true, force: true }));
  return loadConfig(
    { env: {}, cwd: stateDir },
    {
      paths: { stateDir, inbox: stateDir, outbox: stateDir, create: true },
      sandbox: { settlementMinDelayMs: 0, settlementMaxDelayMs: 5 },
      ...over,
      api: { baseUrl: 'embedded', ...(over.api as object) },
    },
  );
}

describe('the embedded sandbox follows the daemon config', () => {
  it.each([
    ['client-id', 'utf8'],
    ['standard', 'hex'],
    ['client-id', 'base64'],
  ] as const)('auth.mode %s with hmacKeyEncoding %s', async (mode, hmacKeyEncoding) => {
    const config = embeddedConfig({ api: { auth: { mode }, hmacKeyEncoding } });
    const api = kept(await connectApi(config, systemClock, createLogger('silent')));
    const created = await api.client.createPayout(payoutRequest());
    expect((await api.client.queryByPayoutIds([created.payoutId])).records).toHaveLength(1);
  });

  it("signs its webhooks as the daemon's webhook settings say, to the daemon's receiver", async () => {
    const config = embeddedConfig({ webhook: { enabled: true, port: 0, secret: HEX_SECRET, ...WEBHOOK } });
    // The embedded sandbox runs on the system clock.
    const h = await startReceiver({ ...WEBHOOK, secret: HEX_SECRET, clock: new ManualClock(Date.now()) });
    const api = kept(await connectApi(config, h.clock, createLogger('silent'), {}, 'daemon', h.url));
    const created = await api.client.createPayout(payoutRequest());
    await expect.poll(() => h.verdicts, { timeout: 5000, interval: 10 }).toEqual(['accepted']);
    expect((await eventRows(h.db)).map((r) => r.payout_id)).toEqual([created.payoutId]);
  });

  it('sends a one-shot command no webhooks (no receiver of its own)', async () => {
    const config = embeddedConfig({ webhook: { enabled: true, port: 0, secret: HEX_SECRET, ...WEBHOOK } });
    const api = kept(await connectApi(config, systemClock, createLogger('silent')));
    await api.client.createPayout(payoutRequest({ beneficiary: { accountName: 'A B', accountNumber: '12340000', bankCode: 'BPI' } }));
    await expect.poll(() => api.sandbox?.ledger()[0]?.status, { timeout: 5000, interval: 10 }).toBe('CANCELLED');
    expect(api.sandbox?.stats().webhooksSent).toBe(0);
  });
});

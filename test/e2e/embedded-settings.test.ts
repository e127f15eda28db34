/**
 * `payoutd run` on the embedded sandbox with other answers to the wire contract than its defaults: client-id
 * auth, hex HMAC key bytes, and webhooks signed under other header names, in milliseconds, over another string
 * to sign. The daemon's own sandbox follows its config: the batch is paid and every webhook is verified.
 */
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e, waitFor } from './harness.js';

describe('e2e: the embedded sandbox follows the daemon config', () => {
  it('pays a batch and verifies every webhook with other auth, key bytes and webhook signing settings', async () => {
    const e2e = await startE2e();
    await e2e.writeConfig({
      api: { baseUrl: 'embedded', auth: { mode: 'client-id' }, hmacKeyEncoding: 'hex' },
      sandbox: { settlementMinDelayMs: 50, settlementMaxDelayMs: 200 },
      webhook: {
        enabled: true,
        port: 0,
        secret: 'c0ffee00c0ffee00c0ffee00c0ffee00',
        keyEncoding: 'hex',
        headers: { timestamp: 'X-Hook-Time', nonce: 'X-Hook-Id', signature: 'X-Hook-Signature' },
        timestampUnit: 'milliseconds',
        stringToSign: { parts: ['timestamp', 'nonce', 'bodySha256', 'path', 'method'], separator: '.' },
      },
    });
    const daemon = await e2e.startDaemon();
    await e2e.drop('settings.csv', toCsv(makeRows('SET', 3)));
    await e2e.waitForBatch('settings.csv', ['COMPLETE'], 30_000);
    const accepted = () => daemon.logs.filter((l) => String(l.msg).startsWith('webhook accepted'));
    await waitFor(() => accepted().length >= 3, 'a verified webhook for each payout', 15_000);
    expect(daemon.logs.filter((l) => l.msg === 'webhook delivery refused')).toEqual([]);
    expect(await daemon.stop()).toBe(0);
  }, 90_000);
});

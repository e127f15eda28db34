/**
 * E2E: what an operator relies on while payoutd runs for months. One run
 * of the real daemon, through a recording proxy so the test knows every
 * token and secret key the service issued, with metrics on, trace-level
 * logs, a short-lived access token (so credentials are renewed mid-batch)
 * and a SIGHUP: then every log line is scanned for secrets and full
 * account numbers, /metrics is read, and SIGTERM must exit 0.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startMitm, type Mitm } from '../api/mitm.js';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

const mitms: Mitm[] = [];
afterEach(async () => {
  await Promise.all(mitms.splice(0).map((m) => m.close()));
});

async function scrape(url: string): Promise<{ status: number; text: string }> {
  const res = await fetch(url);
  return { status: res.status, text: await res.text() };
}

function metric(text: string, line: RegExp): number {
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.trim().split(/\s+/).pop()) : Number.NaN;
}

describe('e2e: operations', () => {
  it('logs no secret or full account number, serves metrics and health, applies a new log level on SIGHUP and refuses a reload with a mistake, stops with 0', async () => {
    const e2e = await startE2e({
      sandbox: { accessTokenTtlSeconds: 3, settlement: { minDelayMs: 100, maxDelayMs: 400 }, faults: { latencyMs: 40 } },
    });
    const mitm = await startMitm(e2e.sandbox.url);
    mitms.push(mitm);
    await e2e.writeConfig({
      api: { baseUrl: mitm.url, auth: { refreshBeforeExpirySeconds: 1 } },
      metrics: { enabled: true, port: 0 },
      log: { level: 'trace' },
      submit: { concurrency: 1 },
    });
    const rows = makeRows('E2E-OPS', 80, { cancelEvery: 8 });
    const daemon = await e2e.startDaemon();
    const listening = await daemon.waitForLog((l) => l.msg === 'metrics, /healthz and /readyz listening');
    const base = String(listening['url']);

    await e2e.drop('ops.csv', toCsv(rows));
    const batch = await e2e.waitForBatch('ops.csv', ['COMPLETE'], 60_000);
    expect(batch.counts).toEqual({ PAID: 70, CANCELLED: 10 });
    // The 3 s access token was renewed while the batch ran (80 creates at 40 ms, one at a time).
    expect(mitm.issued.length).toBeGreaterThanOrEqual(2);

    // Metrics and health.
    expect((await scrape(`${base}/healthz`)).status).toBe(200);
    expect((await scrape(`${base}/readyz`)).status).toBe(200);
    const { status, text } = await scrape(`${base}/metrics`);
    expect(status).toBe(200);
    expect(metric(text, /^payoutd_files_total\{outcome="accepted"\}/)).toBe(1);
    expect(metric(text, /^payoutd_creates_total\{outcome="OK"\}/)).toBe(80);
    expect(metric(text, /^payoutd_rows\{state="PAID"\}/)).toBe(70);
    expect(metric(text, /^payoutd_rows\{state="CANCELLED"\}/)).toBe(10);
    expect(metric(text, /^payoutd_oldest_pending_payout_age_seconds/)).toBe(0);
    expect(metric(text, /^payoutd_api_request_duration_seconds_count\{endpoint="\/apis\/v1\/fiat-payout\/create",outcome="ok"\}/)).toBe(80);
    expect(metric(text, /^payoutd_token_renewals_total\{how="acquire"\}/)).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^payoutd_poll_lag_seconds /m);
    expect(text).toMatch(/^# HELP payoutd_webhook_events_total /m);
    expect((await scrape(`${base}/nothing`)).status).toBe(404);

    // SIGHUP re-reads log.level: down to warn, info lines stop.
    const config = await readFile(e2e.configPath, 'utf8');
    await writeFile(e2e.configPath, config.replace(/level: trace/, 'level: warn'));
    const before = daemon.logs.length;
    process.kill(daemon.pid as number, 'SIGHUP');
    await daemon.waitForLog((l) => l.msg === 'SIGHUP: log.level changed "trace" -> "warn": applied', 5000);
    // A reload whose poll.minIntervalMs is above poll.maxIntervalMs is refused whole, as at start: nothing applied.
    const warnLevel = await readFile(e2e.configPath, 'utf8');
    await writeFile(e2e.configPath, warnLevel.replace(/minIntervalMs: 200\n/, 'minIntervalMs: 900000\n'));
    process.kill(daemon.pid as number, 'SIGHUP');
    const refused = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: configuration not reloaded'), 5000);
    expect([refused.level, refused.msg]).toEqual([
      'error',
      expect.stringContaining('poll.minIntervalMs is 900000 and poll.maxIntervalMs 1000: '),
    ]);
    await writeFile(e2e.configPath, warnLevel);
    await e2e.drop('ops-2.csv', toCsv(makeRows('E2E-OPS2', 3)));
    await e2e.waitForBatch('ops-2.csv', ['COMPLETE'], 30_000);
    const after = daemon.logs.slice(before + 1);
    expect(after.filter((l) => l.level === 'info' || l.level === 'debug' || l.level === 'trace')).toEqual([]);

    expect(await daemon.stop()).toBe(0);

    // Nothing secret in any line the daemon wrote (stdout and stderr).
    const transcript = daemon.transcript();
    expect(transcript.length).toBeGreaterThan(10_000); // trace level: plenty was written
    const key = await readFile(e2e.keyPath, 'utf8');
    const secrets = [
      'e2e-api-key-0123456789',
      ...key.split('\n').filter((l) => l.length > 20 && !l.startsWith('-----')),
      ...mitm.issued.flatMap((c) => [c.accessToken, c.refreshToken, c.secretKey]),
    ];
    for (const s of secrets) expect(transcript.includes(s), `a secret (${s.slice(0, 4)}…) appears in the logs`).toBe(false);
    expect(transcript).not.toContain('PRIVATE KEY');
    for (const r of rows) expect(transcript.includes(r.accountNumber), `account ${r.accountNumber.slice(-4)} in full`).toBe(false);
    // The logs do name the merchant and the batch: the scan is not vacuous.
    expect(transcript).toContain(batch.id);
  });
});

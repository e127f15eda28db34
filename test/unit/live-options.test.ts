/**
 * What a SIGHUP does with a newly read configuration: every option that
 * changed is reported; the live ones are written into the running
 * configuration object (which the daemon's parts read at use), the others
 * keep their running value and are named as needing a restart, without
 * their values (they may be secrets). And the clock judgement of the
 * start-up checks: an offset is only called out of the window when the
 * readings prove it, whatever the latency of the token call.
 */
import { describe, expect, it } from 'vitest';
import { applyLiveOptions, checkReloadKeeps, loadConfig, optionChanges, type ResolvedConfig } from '../../src/config/index.js';
import { clockSkewOf } from '../../src/daemon/startup-checks.js';

function config(overrides: Record<string, unknown> = {}): ResolvedConfig {
  return loadConfig({ env: {}, cwd: '/tmp' }, overrides);
}

describe('live options', () => {
  it('applies the live ones in place and names the rest as needing a restart', () => {
    const running = config({ submit: { concurrency: 8 }, log: { level: 'info' } });
    const submit = running.submit;
    const next = config({
      submit: { concurrency: 2, retry: { baseMs: 50 } },
      poll: { tickMs: 250 },
      log: { level: 'debug' },
      inbox: { stableForMs: 100 },
      api: { apiKey: 'a-new-secret-key' },
    });
    const changes = applyLiveOptions(running, next);
    expect(changes).toEqual([
      { path: 'api.apiKey', live: false },
      { path: 'inbox.stableForMs', live: false },
      { path: 'submit.concurrency', live: true, from: 8, to: 2 },
      { path: 'submit.retry.baseMs', live: true, from: 1000, to: 50 },
      { path: 'poll.tickMs', live: true, from: 1000, to: 250 },
      { path: 'log.level', live: true, from: 'info', to: 'debug' },
    ]);
    // Written into the objects the daemon's parts hold; the restart options keep their running value.
    expect([submit.concurrency, submit.retry.baseMs, running.poll.tickMs, running.log.level]).toEqual([2, 50, 250, 'debug']);
    expect([running.inbox.stableForMs, running.api.apiKey]).toEqual([5000, undefined]);
    // A second SIGHUP with the same file: only what still differs (needs the restart).
    expect(optionChanges(running, next).map((c) => c.path)).toEqual(['api.apiKey', 'inbox.stableForMs']);
  });

  it('reports nothing for the same configuration', () => {
    expect(optionChanges(config(), config())).toEqual([]);
  });

  it('refuses a reload that drops every notification channel; a change of channel, or one of two dropped, is taken', () => {
    const hook = { url: 'https://erp.example.com/hook', secretFile: '/etc/payoutd/whsec' };
    const mail = { host: 'smtp.example.com', from: 'payoutd@example.com', to: ['finance@example.com'] };
    const running = config({ notify: { webhooks: [hook], email: mail } });
    expect(() => checkReloadKeeps(running, config({ notify: { statusFiles: true } }))).toThrow(
      'the configuration no longer sets any notification channel (notify.webhooks, notify.email configured now) (a file cut short?); a SIGHUP does not remove them: restore the file, or, if the removal is meant, restart payoutd to apply it',
    );
    expect(() => checkReloadKeeps(running, config({ notify: { email: mail } }))).not.toThrow();
    expect(() =>
      checkReloadKeeps(running, config({ notify: { webhooks: [{ ...hook, url: 'https://erp.example.com/new' }] } })),
    ).not.toThrow();
    expect(() => checkReloadKeeps(config(), config())).not.toThrow();
  });
});

describe('clock judgement at start-up', () => {
  const window = 300_000;
  const at = 1_800_000_000_000;

  it('an offset beyond the window, by the timestamp, agreed by the Date header', () => {
    const reading = { requestedAt: at, receivedAt: at + 200, issuedAtByService: at + 400_000, serviceDate: at + 400_000 };
    expect(clockSkewOf(reading, window)).toBeGreaterThan(window);
    expect(clockSkewOf({ ...reading, issuedAtByService: at - 400_000, serviceDate: at - 400_000 }, window)).toBeLessThan(-window);
  });

  it('within the window, or not proven beyond it by a slow answer, is fine', () => {
    expect(clockSkewOf({ requestedAt: at, receivedAt: at + 200, issuedAtByService: at + 2000, serviceDate: null }, window)).toBeNull();
    // Issued 301 s after the request went out, but the answer took 10 s: the clocks may agree within 300 s.
    expect(
      clockSkewOf({ requestedAt: at, receivedAt: at + 10_000, issuedAtByService: at + 301_000, serviceDate: null }, window),
    ).toBeNull();
  });

  it('an old issuance time with a Date header that agrees with our clock is an old token, not a clock off', () => {
    const reading = { requestedAt: at, receivedAt: at + 100, issuedAtByService: at - 3_600_000, serviceDate: at };
    expect(clockSkewOf(reading, window)).toBeNull();
  });
});

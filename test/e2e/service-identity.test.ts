/**
 * E2E: the payout service a state database pays through is not changed by accident. A config file emptied
 * (`: > payoutd.yaml`) is refused at start (CONFIG_EMPTY, exit 78) and on SIGHUP (the running configuration
 * stays), where it was read as every default: the embedded sandbox, paying files for no real money, and no
 * notification channels. And whatever makes the configuration name another service (here api.baseUrl:
 * embedded over a database that paid through the real one), the start is refused (SERVICE_CHANGED, exit 78)
 * naming both, until `payoutd migrate --accept-service-change` records the new one.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startSandbox } from '../../src/sandbox/index.js';
import { loadPrivateKeyFile, publicKeyBase64 } from '../../src/signing/index.js';
import { openSqlite } from '../../src/store/index.js';
import { makeRows, toCsv } from './batch-files.js';
import { MERCHANT_CODE, startE2e, waitFor, type DaemonProcess, type E2e, type ExitInfo } from './harness.js';

/** Spawns `payoutd run --config` on the world's config and waits for it to exit on its own. */
async function runToExit(e2e: E2e): Promise<{ daemon: DaemonProcess; exit: ExitInfo }> {
  const daemon = e2e.spawnDaemon();
  const exit = await waitFor(() => daemon.exited, `${daemon.label} to exit by itself`, 30_000);
  // The last lines of its pipes arrive after the exit event.
  await new Promise((resolve) => setTimeout(resolve, 50));
  return { daemon, exit };
}

const EMPTY = (file: string): string =>
  `payoutd: CONFIG_EMPTY: config file ${file} sets no option (it is empty, or holds only comments): every option would take its default, among them api.baseUrl (the embedded sandbox: no real money moves) and notify (no channels); restore the file, or start without --config and PAYOUTD_CONFIG to run on the defaults`;

describe('e2e: a config file emptied', () => {
  it('is refused on SIGHUP, logged at error, the running configuration stays; at start it is refused with exit 78', async () => {
    const e2e = await startE2e();
    const daemon = await e2e.startDaemon();
    await writeFile(e2e.configPath, '');
    process.kill(daemon.pid as number, 'SIGHUP');
    const refused = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: configuration not reloaded'), 5000);
    expect(refused.level).toBe('error');
    expect(refused.code).toBe('CONFIG_EMPTY');
    expect(refused.msg).toBe(
      `SIGHUP: configuration not reloaded, the running one stays: ${EMPTY(e2e.configPath).replace('payoutd: CONFIG_EMPTY: ', '')}`,
    );
    // Nothing of the empty file was taken: no option is said to have changed, live or not.
    expect(daemon.logs.filter((l) => String(l.msg).startsWith('SIGHUP: ')).map((l) => l.msg)).toEqual([refused.msg]);
    expect(await daemon.stop()).toBe(0);

    const r = await runToExit(e2e);
    expect(r.exit).toEqual({ code: 78, signal: null });
    expect(r.daemon.stderr).toEqual([EMPTY(e2e.configPath)]);
    expect(r.daemon.logs.some((l) => String(l.msg).startsWith('embedded sandbox started'))).toBe(false);
  });
});

describe('e2e: a config file cut short', () => {
  it('is refused whole on SIGHUP when it lost sections the running file had; the running configuration stays', async () => {
    const e2e = await startE2e();
    const daemon = await e2e.startDaemon();
    // The file's first lines only: its api and paths sections, the rest lost.
    const full = await readFile(e2e.configPath, 'utf8');
    const kept = full.slice(0, full.indexOf('\ninbox:') + 1);
    expect(kept).toMatch(/^api:[\s\S]*\npaths:[\s\S]*$/);
    await writeFile(e2e.configPath, kept);
    process.kill(daemon.pid as number, 'SIGHUP');
    const refused = await daemon.waitForLog((l) => String(l.msg).startsWith('SIGHUP: configuration not reloaded'), 5000);
    expect(refused.level).toBe('error');
    expect(refused.code).toBe('CONFIG_REMOVED');
    expect(refused.msg).toBe(
      `SIGHUP: configuration not reloaded, the running one stays: ${e2e.configPath} no longer sets the sections inbox, poll, submit, batch, log that the running configuration's file had (a file cut short?); a SIGHUP does not remove them: restore the file, or, if the removal is meant, restart payoutd to apply it`,
    );
    // Nothing of the short file was taken: no option is said to have changed, live or not.
    expect(daemon.logs.filter((l) => String(l.msg).startsWith('SIGHUP: ')).map((l) => l.msg)).toEqual([refused.msg]);
    expect(await daemon.stop()).toBe(0);
  });
});

describe('e2e: the payout service of a state database', () => {
  it('a start configured for another service is refused, naming both, until migrate --accept-service-change', async () => {
    const e2e = await startE2e();
    const first = await e2e.startDaemon();
    expect(first.logs.find((l) => l.msg === 'payout service recorded for this state database')).toMatchObject({
      service: e2e.sandbox.url,
      merchantCode: MERCHANT_CODE,
    });
    await e2e.drop('real.csv', toCsv(makeRows('SVC-REAL', 3)));
    expect((await e2e.waitForBatch('real.csv', ['COMPLETE'], 30_000)).counts).toEqual({ PAID: 3 });
    expect(await first.stop()).toBe(0);

    // What an emptied file with the folders from the environment came to: the defaults' embedded sandbox.
    await e2e.writeConfig({ api: { baseUrl: 'embedded' } });
    const r = await runToExit(e2e);
    expect(r.exit).toEqual({ code: 78, signal: null });
    expect(r.daemon.stderr).toHaveLength(1);
    expect(r.daemon.stderr[0]).toMatch(
      new RegExp(
        `^payoutd: SERVICE_CHANGED: api\\.baseUrl: this state database \\(1 batches\\) pays through ${e2e.sandbox.url.replace(/\./g, '\\.')} as merchant ${MERCHANT_CODE} \\(recorded \\S+\\), but ${e2e.configPath.replace(/\./g, '\\.')} names the embedded sandbox \\(api\\.baseUrl: embedded, no real money\\); .* run payoutd migrate --accept-service-change with this configuration$`,
      ),
    );
    expect(r.daemon.logs.some((l) => String(l.msg).startsWith('embedded sandbox started'))).toBe(false);
    expect(r.daemon.logs.some((l) => l.msg === 'payoutd running')).toBe(false);

    // The service really changed: accepted on purpose, then the start goes ahead on the new one.
    const accepted = await e2e.cli(['migrate', '--accept-service-change']);
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain(
      `payout service changed from ${e2e.sandbox.url} as merchant ${MERCHANT_CODE} to the embedded sandbox (api.baseUrl: embedded, no real money)`,
    );
    const second = await e2e.startDaemon();
    expect(await second.stop()).toBe(0);
  });
});

/** What a database made before migration 0033 holds once it is migrated: payouts, and no recorded service. */
function forgetRecordedService(e2e: E2e): void {
  const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'), { fileMustExist: true });
  try {
    expect(db.prepare('DELETE FROM service_identity').run().changes).toBe(1);
  } finally {
    db.close();
  }
}

describe('e2e: a database with payouts and no recorded service (made before migration 0033)', () => {
  it('records the configured service only once that service knows its payouts', async () => {
    // Settled slowly: the payouts are likely still PENDING when the first daemon stops (PAID ones are asked about too).
    const e2e = await startE2e({ sandbox: { settlement: { minDelayMs: 8000, maxDelayMs: 9000 } } });
    const first = await e2e.startDaemon();
    await e2e.drop('old.csv', toCsv(makeRows('SVC-OLD', 3)));
    const sent = (b: { counts: Record<string, number | undefined> }): number => (b.counts.PENDING ?? 0) + (b.counts.PAID ?? 0);
    await e2e.waitForBatches((bs) => bs.find((b) => b.fileName === 'old.csv' && sent(b) === 3), 'three payouts sent', 30_000);
    expect(await first.stop()).toBe(0);
    forgetRecordedService(e2e);

    // The same credentials accepted by another service (a second sandbox), and the embedded sandbox of an emptied file.
    const key = publicKeyBase64(loadPrivateKeyFile(e2e.keyPath));
    const other = await startSandbox({
      merchants: [{ merchantCode: MERCHANT_CODE, apiKey: 'e2e-api-key-0123456789', publicKey: key, balances: { USDT: '1000000' } }],
    });
    onTestFinished(() => other.close());
    for (const [api, named] of [
      [{ baseUrl: other.url }, `${other.url} as merchant ${MERCHANT_CODE}`],
      [{ baseUrl: 'embedded' }, 'the embedded sandbox (api.baseUrl: embedded, no real money)'],
    ] as const) {
      await e2e.writeConfig({ api });
      const r = await runToExit(e2e);
      expect(r.exit).toEqual({ code: 78, signal: null });
      expect(r.daemon.stderr).toEqual([
        `payoutd: SERVICE_UNVERIFIED: api.baseUrl: this state database holds 3 payouts made on a payout service it has not recorded (made before migration 0033), and ${named}, which ${e2e.configPath} names, does not know the 3 asked about; nothing is recorded and nothing is paid or followed. Restore the configuration naming the service these payouts were made on; if the payout service really changed, check, then run payoutd migrate --accept-service-change with this configuration`,
      ]);
      expect(r.daemon.logs.some((l) => l.msg === 'payout service recorded for this state database')).toBe(false);
      expect(r.daemon.logs.some((l) => l.msg === 'payoutd running')).toBe(false);
    }
    expect(other.ledger()).toEqual([]);

    // The service the payouts were made on: recorded, and they are followed to the end.
    await e2e.writeConfig();
    const second = await e2e.startDaemon();
    expect(second.logs.find((l) => l.msg === 'payout service recorded for this state database')).toMatchObject({
      service: e2e.sandbox.url,
      merchantCode: MERCHANT_CODE,
    });
    expect((await e2e.waitForBatch('old.csv', ['COMPLETE'], 30_000)).counts).toEqual({ PAID: 3 });
    expect(second.logs.some((l) => String(l.msg).startsWith('the service does not know'))).toBe(false);
    expect(await second.stop()).toBe(0);
  }, 120_000);
});

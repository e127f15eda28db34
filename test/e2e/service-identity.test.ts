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
import { CREATE_PATH, QUERY_PATH } from '../../src/sandbox/paths.js';
import { startSandbox, type LedgerEntry } from '../../src/sandbox/index.js';
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

    // What an emptied file with the folders from the environment came to: the defaults' embedded sandbox.
    await e2e.writeConfig({ api: { baseUrl: 'embedded' } });
    // Not while the daemon runs: it would go on creating on the old service after the change is recorded.
    const whileRunning = await e2e.cli(['migrate', '--accept-service-change']);
    expect(whileRunning.code).toBe(78);
    expect(whileRunning.stderr).toMatch(/^payoutd: DAEMON_RUNNING: another payoutd is already running on state directory /);
    expect(whileRunning.stderr).toContain('A service change is recorded only while payoutd is stopped');
    expect(await first.stop()).toBe(0);
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

const referencesIn = (ledger: LedgerEntry[]): string[] => ledger.map((l) => l.merchantReferenceId).sort();

/** Rows the sandbox keeps PENDING until a test settles them (its hold suffix on the account number). */
function heldRows(prefix: string, count: number): ReturnType<typeof makeRows> {
  return makeRows(prefix, count).map((r) => ({ ...r, accountNumber: `${r.accountNumber.slice(0, -4)}9999` }));
}

describe('e2e: a service change while payouts sent to the old service are not final', () => {
  it('is refused while a row is UNKNOWN or PENDING, nothing is sent to the new service; accepted once none is left', async () => {
    // One try of a create, and of a query, waits a second: the sandbox's delay below makes both outcomes unknown.
    const fast = { api: { timeoutMs: 1000 } };
    const e2e = await startE2e({ config: fast });
    const old = `${e2e.sandbox.url} as merchant ${MERCHANT_CODE}`;
    const key = publicKeyBase64(loadPrivateKeyFile(e2e.keyPath));
    const other = await startSandbox({
      settlement: { minDelayMs: 100, maxDelayMs: 600 },
      merchants: [
        { merchantCode: MERCHANT_CODE, apiKey: 'e2e-api-key-0123456789', publicKey: key, balances: { USDT: '1000000', USDC: '1000000' } },
      ],
    });
    onTestFinished(() => other.close());
    const named = `${other.url} as merchant ${MERCHANT_CODE}`;
    const useOld = (): Promise<void> => e2e.writeConfig(fast);
    const useNew = (): Promise<void> => e2e.writeConfig({ api: { ...fast.api, baseUrl: other.url } });

    // The creates reach the old service and are taken in, but their answers (and the queries after) come too late.
    const first = await e2e.startDaemon();
    e2e.sandbox.setFaults({ latencyMs: 30_000, endpoints: [CREATE_PATH, QUERY_PATH] });
    const rows = heldRows('SVC-MOVE', 2);
    await e2e.drop('move.csv', toCsv(rows));
    const unknown = await e2e.waitForBatches(
      (bs) => bs.find((b) => b.fileName === 'move.csv' && b.counts.UNKNOWN === 2),
      'both rows UNKNOWN',
      30_000,
    );
    expect(await first.stop()).toBe(0);
    e2e.sandbox.setFaults({ latencyMs: 0 });
    const refs = rows.map((r) => r.merchantReferenceId);
    expect(referencesIn(e2e.ledger())).toEqual(refs);

    const refusal = (state: string): string =>
      `payoutd: PAYOUTS_ON_OLD_SERVICE: the payout service is not changed: 2 payouts were sent to ${old} and are not final there ` +
      `(2 ${state}: batch ${unknown.id} (move.csv) line 2 ${state}, line 3 ${state}). Only that service can tell what became of ` +
      `them: on ${named} a create whose outcome is unknown would be sent again (paid on both services) and a pending payout ` +
      `would never be settled. Run payoutd with the configuration naming ${old} until payoutd status shows no row CREATING, ` +
      'UNKNOWN or PENDING, stop it, then run payoutd migrate --accept-service-change with this configuration again';
    /** Tries the change, then a start on the new service: both refused, and nothing reaches it. */
    const refusedFor = async (state: string): Promise<void> => {
      const tried = await e2e.cli(['migrate', '--accept-service-change']);
      expect({ code: tried.code, stderr: tried.stderr.trim() }).toEqual({ code: 78, stderr: refusal(state) });
      const r = await runToExit(e2e);
      expect(r.exit).toEqual({ code: 78, signal: null });
      expect(r.daemon.stderr).toHaveLength(1);
      expect(r.daemon.stderr[0]).toMatch(/^payoutd: SERVICE_CHANGED: /);
      expect(r.daemon.stderr[0]).toContain(
        `run payoutd migrate --accept-service-change with this configuration, once the 2 payouts sent to ${old} and not final yet (CREATING, UNKNOWN or PENDING) are settled there by payoutd run with the configuration naming it: the change is refused until none is left`,
      );
      expect(other.ledger()).toEqual([]);
    };

    await useNew();
    await refusedFor('UNKNOWN');

    // Back on the old service: the references are found there, held PENDING by the sandbox; still refused.
    await useOld();
    const second = await e2e.startDaemon();
    await e2e.waitForBatches((bs) => bs.find((b) => b.id === unknown.id && b.counts.PENDING === 2), 'both rows PENDING', 30_000);
    expect(await second.stop()).toBe(0);
    await useNew();
    await refusedFor('PENDING');

    // Settled on the old service and followed there to the end: the change goes through, new files go to the new one.
    for (const ref of refs) expect(e2e.sandbox.settle({ merchantReferenceId: ref }, 'PAID')).toBe(1);
    await useOld();
    const third = await e2e.startDaemon();
    expect((await e2e.waitForBatch('move.csv', ['COMPLETE'], 30_000)).counts).toEqual({ PAID: 2 });
    expect(await third.stop()).toBe(0);
    await useNew();
    const accepted = await e2e.cli(['migrate', '--accept-service-change']);
    expect(accepted.code).toBe(0);
    expect(accepted.stdout.trim().split('\n').at(-1)).toBe(`payout service changed from ${old} to ${named}`);
    const fourth = await e2e.startDaemon();
    await e2e.drop('after.csv', toCsv(makeRows('SVC-AFTER', 1)));
    expect((await e2e.waitForBatch('after.csv', ['COMPLETE'], 30_000)).counts).toEqual({ PAID: 1 });
    expect(await fourth.stop()).toBe(0);
    expect(referencesIn(other.ledger())).toEqual(['SVC-AFTER-0001']);
    expect(referencesIn(e2e.ledger())).toEqual(refs);
  }, 180_000);
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

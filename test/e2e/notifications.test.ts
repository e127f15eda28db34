/**
 * Notifications from the real `payoutd run`: a batch the balance does not
 * cover is held, and within seconds a signed `batch.held` reaches a real
 * receiver (verified with the `standardwebhooks` package), the batch's status
 * file in the outbox says HELD and why, and /metrics counts it; topped up,
 * it is released and completes. And a SIGKILL while events are stored but
 * not yet delivered (the receiver down) loses none: the next process
 * delivers every one, each id once. A mail relay that holds a mail holds
 * back no webhook.
 */
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqlite } from '../../src/store/index.js';
import { hasOpenssl, selfSignedCert } from '../support/tls.js';
import { EventReceiver, MailReceiver, newSigningSecret } from '../notify/receivers.js';
import { makeRows, toCsv } from './batch-files.js';
import { readOutboxCsv, startE2e, waitFor, type E2e } from './harness.js';

async function scrape(url: string): Promise<string> {
  return (await fetch(url)).text();
}

function metric(text: string, line: RegExp): number {
  const m = text.split('\n').find((l) => line.test(l));
  return m ? Number(m.trim().split(/\s+/).pop()) : Number.NaN;
}

/** A receiver with its secret written where the daemon reads it (`<name>-secret`). */
async function receiverFor(e2e: E2e, name = 'notify'): Promise<{ receiver: EventReceiver; secretFile: string }> {
  const secret = newSigningSecret();
  const receiver = new EventReceiver(secret);
  await receiver.start();
  const secretFile = join(e2e.dir, `${name}-secret`);
  await writeFile(secretFile, secret, { mode: 0o600 });
  return { receiver, secretFile };
}

/** The ids of the events stored for a batch, in order (read-only, beside the daemon). */
function storedEventIds(e2e: E2e): { id: string; type: string }[] {
  return storedEvents(e2e).map(({ id, type }) => ({ id, type }));
}

/** The events stored, in order, with where their delivery stands (read-only, beside the daemon). */
function storedEvents(e2e: E2e): { id: string; type: string; batchId: string; delivery: string }[] {
  const db = openSqlite(join(e2e.stateDir, 'payoutd.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare('select id, type, batch_id as batchId, delivery_state as delivery from batch_events order by seq').all() as {
      id: string;
      type: string;
      batchId: string;
      delivery: string;
    }[];
  } finally {
    db.close();
  }
}

describe('e2e: notifications', () => {
  it('a held batch: held event, status file and metric within seconds; released and completed once topped up', async () => {
    const e2e = await startE2e({ balances: { USDT: '1', USDC: '1' } });
    const { receiver, secretFile } = await receiverFor(e2e);
    try {
      await e2e.writeConfig({
        batch: { balanceCheck: { enabled: true, recheckMs: 300 } },
        submit: { insufficientBalanceHoldMs: 300 },
        metrics: { enabled: true, port: 0 },
        notify: { webhooks: [{ url: receiver.url, name: 'erp', secretFile }], retry: { baseMs: 200, maxMs: 1000 } },
      });
      const daemon = await e2e.startDaemon();
      const base = String((await daemon.waitForLog((l) => l.msg === 'metrics, /healthz and /readyz listening'))['url']);
      await e2e.drop('short.csv', toCsv(makeRows('E2E-NOTE', 5)));

      const held = await waitFor(() => receiver.events.find((e) => e.type === 'batch.held'), 'a batch.held delivery', 15_000);
      expect(receiver.forged).toBe(0);
      expect(held.data).toMatchObject({ file: 'short.csv', code: 'INSUFFICIENT_BALANCE' });
      expect(String(held.data['reason'])).toMatch(/balance/);
      const batchId = String(held.data['batchId']);
      const statusPath = join(e2e.outbox, `${batchId}_short.csv.status.csv`);
      const status = await waitFor(async () => {
        if (!existsSync(statusPath)) return null;
        const csv = await readOutboxCsv(statusPath);
        return csv.rows.some((r) => r['item'] === 'state' && r['value'] === 'HELD') ? csv : null;
      }, 'a status file saying HELD');
      expect(status.rows.find((r) => r['item'] === 'hold reason')?.['value']).toBe(held.data['reason']);
      // A delivery is counted once its answer is recorded, a moment after the receiver has it.
      const delivered = /^payoutd_notification_deliveries_total\{channel="webhook:erp",outcome="delivered"\}/;
      const text = await waitFor(async () => {
        const t = await scrape(`${base}/metrics`);
        return metric(t, delivered) >= 3 ? t : null;
      }, 'three deliveries counted in the metrics');
      expect(metric(text, /^payoutd_batches\{state="HELD"\}/)).toBe(1);
      expect(metric(text, /^payoutd_oldest_hold_age_seconds/)).toBeGreaterThanOrEqual(0);
      // status --json: the hold, with ISO times and plain objects.
      const table = (await e2e.cli(['status'])).stdout;
      expect(table).toMatch(/short\.csv\s+HELD\s+5\s+0\.0%/);
      expect(table).toContain('INSUFFICIENT_BALANCE: insufficient balance');
      expect((await e2e.cli(['status', '--batch', batchId])).stdout).toMatch(/held since \d{4}-\d\d-\d\dT[\d:.]+Z: insufficient balance/);
      const [shown] = await e2e.batches();
      expect(shown).toMatchObject({ shownState: 'HELD', hold: { code: 'INSUFFICIENT_BALANCE' } });
      expect(shown?.receivedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect(shown).not.toHaveProperty('totalsJson');

      e2e.sandbox.setBalance('E2E-MERCHANT', 'USDT', '1000000');
      e2e.sandbox.setBalance('E2E-MERCHANT', 'USDC', '1000000');
      await waitFor(() => receiver.events.some((e) => e.type === 'batch.completed'), 'batch.completed', 30_000);
      const types = receiver.types().filter((t) => t !== 'batch.progress');
      expect(types).toEqual(['batch.received', 'batch.held', 'batch.accepted', 'batch.released', 'batch.completed']);
      const completed = receiver.events.find((e) => e.type === 'batch.completed');
      expect(completed?.data['counts']).toEqual({ PAID: 5 });
      expect(Object.keys(completed?.data['payoutTotals'] as object)).toEqual(['PAID']);
      expect(await daemon.stop()).toBe(0);
      // Info keeps one line per batch event, not the polling.
      expect(daemon.logs.filter((l) => l.level === 'info' && /settling|asking about/.test(String(l.msg)))).toEqual([]);
    } finally {
      await receiver.stop();
    }
  });

  it.skipIf(!hasOpenssl())(
    'a mail relay that holds a mail holds back no webhook; a stop with the mail held is clean, the mail sent at the next start',
    async () => {
      const e2e = await startE2e();
      const { receiver, secretFile } = await receiverFor(e2e);
      const certDir = join(e2e.dir, 'smtp-cert');
      await mkdir(certDir);
      const login = { user: 'payoutd', password: 'smtp-pw-e2e-Zr81' };
      const mail = new MailReceiver(selfSignedCert(certDir), login);
      await mail.start();
      const passwordFile = join(e2e.dir, 'smtp-password');
      await writeFile(passwordFile, login.password, { mode: 0o600 });
      const release = mail.holdNextMail();
      try {
        await e2e.writeConfig({
          notify: {
            webhooks: [{ url: receiver.url, name: 'chat', secretFile }],
            email: {
              host: '127.0.0.1',
              port: mail.port,
              caFile: join(certDir, 'cert.pem'),
              user: login.user,
              passwordFile,
              from: 'payoutd@example.com',
              to: ['finance@example.com'],
            },
            // Longer than the test: the held mail ends with the stop, not with its timeout.
            timeoutMs: 120_000,
          },
        });
        const first = await e2e.startDaemon();
        await e2e.drop('relay.csv', toCsv(makeRows('E2E-RELAY', 3)));
        await waitFor(() => mail.held === 1, 'the first mail held at the relay', 15_000);
        // Every later event reaches the webhook while the relay still holds the first mail.
        await waitFor(() => receiver.events.some((e) => e.type === 'batch.completed'), 'batch.completed at the webhook', 30_000);
        expect(mail.mails).toEqual([]);
        expect(receiver.types().filter((t) => t !== 'batch.progress')).toEqual(['batch.received', 'batch.accepted', 'batch.completed']);
        expect(await first.stop()).toBe(0);
        release();

        // The mails owed were kept: the next process sends each (the held one again: it was never recorded taken).
        const stored = storedEventIds(e2e).filter((e) => e.type !== 'progress');
        const second = await e2e.startDaemon();
        const idsOf = (): string[] => [...new Set(mail.mails.map((m) => /Message-ID: <(evt_\w+)@payoutd>/.exec(m.raw)?.[1] ?? ''))];
        await waitFor(() => idsOf().length >= stored.length, `${stored.length} mails at the relay`, 15_000);
        expect(idsOf().sort()).toEqual(stored.map((e) => e.id).sort());
        expect(receiver.deliveries, 'each event once to the webhook').toBe(receiver.events.length);
        expect(await second.stop()).toBe(0);
      } finally {
        release();
        await receiver.stop();
        await mail.stop();
      }
    },
  );

  it('a webhook a SIGHUP adds gets every event still owed to another; one a SIGHUP removes stops, its events done', async () => {
    const e2e = await startE2e();
    const { receiver: erp, secretFile: erpSecret } = await receiverFor(e2e, 'erp');
    const { receiver: late, secretFile: lateSecret } = await receiverFor(e2e, 'late');
    const erpHook = { url: erp.url, name: 'erp', secretFile: erpSecret };
    const lateHook = { url: late.url, name: 'late', secretFile: lateSecret };
    // Longer than the test: a held delivery ends when it is let go or cut short, not by its timeout.
    const notify = (webhooks: unknown[]) => ({ notify: { webhooks, retry: { baseMs: 200, maxMs: 400 }, timeoutMs: 120_000 } });
    let releaseErp = (): void => undefined;
    let releaseLate = (): void => undefined;
    try {
      await e2e.writeConfig(notify([erpHook]));
      releaseErp = erp.holdNextDelivery();
      const daemon = await e2e.startDaemon();
      const sighup = async (webhooks: unknown[]): Promise<void> => {
        const applied = daemon.logs.length;
        await e2e.writeConfig(notify(webhooks));
        process.kill(daemon.pid as number, 'SIGHUP');
        await waitFor(
          () => daemon.logs.slice(applied).some((l) => String(l.msg).startsWith('SIGHUP: notify.webhooks')),
          'the SIGHUP applied',
        );
      };
      await e2e.drop('added.csv', toCsv(makeRows('E2E-ADDED', 2)));
      // erp's lane holds batch.received (its pass began before the SIGHUP) while late is added and refuses it for now.
      await waitFor(() => erp.held === 1, 'batch.received held at erp', 15_000);
      late.answer = 503;
      await sighup([erpHook, lateHook]);
      await waitFor(() => late.deliveries >= 1, 'a first attempt at late', 15_000);
      releaseErp();
      await waitFor(() => erp.taken.some((e) => e.type === 'batch.completed'), 'batch.completed at erp', 30_000);
      late.answer = 204;
      // late gets every event, batch.received first: it was still owed to erp when late was added.
      await waitFor(() => late.taken.length === erp.taken.length, `the ${erp.taken.length} events of erp at late`, 15_000);
      expect(late.taken.map((e) => e.id)).toEqual(erp.taken.map((e) => e.id));
      expect(late.takenTypes()[0]).toBe('batch.received');

      // late held on the next batch's first event, then removed: its lane stops, and what only it owed is done.
      releaseLate = late.holdNextDelivery();
      await e2e.drop('removed.csv', toCsv(makeRows('E2E-REMOVED', 2)));
      await waitFor(() => late.held === 1, 'the next batch.received held at late', 15_000);
      await sighup([erpHook]);
      await waitFor(() => erp.taken.filter((e) => e.type === 'batch.completed').length === 2, 'the second batch.completed at erp', 30_000);
      await waitFor(() => storedEvents(e2e).every((e) => e.delivery === 'DELIVERED'), 'every event delivered', 15_000);
      // The attempt the removal cut short is no failed attempt of late's.
      const removed = erp.taken.find((e) => e.data['file'] === 'removed.csv')?.data['batchId'];
      const said = daemon.logs.filter((l) => l.channel === 'webhook:late' && l.batchId === removed && l.level !== 'debug');
      expect(said.map((l) => [l.level, l.msg, l['why']])).toEqual([
        ['info', 'notification attempt cut short; not counted as failed', 'channel removed'],
      ]);
      expect(await daemon.stop()).toBe(0);
    } finally {
      releaseErp();
      releaseLate();
      await erp.stop();
      await late.stop();
    }
  });

  it('a SIGKILL while events wait for a receiver that is down loses none: the next process delivers each once', async () => {
    const e2e = await startE2e();
    const { receiver, secretFile } = await receiverFor(e2e);
    await receiver.stop();
    try {
      await e2e.writeConfig({
        notify: { webhooks: [{ url: receiver.url, name: 'erp', secretFile }], retry: { baseMs: 200, maxMs: 1000 } },
      });
      const first = await e2e.startDaemon();
      await e2e.drop('kill.csv', toCsv(makeRows('E2E-KILL', 4)));
      await e2e.waitForBatch('kill.csv', ['COMPLETE'], 30_000);
      // Stored with their changes, not delivered: the receiver is down.
      await first.waitForLog((l) => l.msg === 'notification not delivered yet; will retry', 10_000);
      await first.kill();
      const stored = storedEventIds(e2e);
      expect(stored.map((e) => e.type).filter((t) => t !== 'progress')).toEqual(['received', 'accepted', 'completed']);
      expect(receiver.events).toEqual([]);

      await receiver.start();
      const second = await e2e.startDaemon();
      await waitFor(() => receiver.events.length >= stored.length, `${stored.length} events at the receiver`, 15_000);
      expect(receiver.events.map((e) => e.id)).toEqual(stored.map((e) => e.id));
      expect(receiver.forged).toBe(0);
      expect(await second.stop()).toBe(0);
    } finally {
      await receiver.stop();
    }
  });
});

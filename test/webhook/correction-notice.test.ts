/**
 * Finance is told of a corrected result file as of every other outcome of a batch: a `batch.corrected` event,
 * stored with the correction's record of its file, delivered to the configured channels (a Standard Webhooks
 * receiver and an SMTP server, both real), shown by `payoutd status --batch` and in the batch's status file.
 * The payout service is made to contradict a finished batch as the other correction tests do it: the real sandbox
 * reverses a payout, and a signed payout.updated event says so. A stop, a restart or a second pass never tells the
 * same correction twice.
 */
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { status } from '../../src/cli/commands/status.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { outboxName } from '../../src/daemon/outbox.js';
import { correctedRowText, correctionNoticeOf, type CorrectedRow } from '../../src/domain/correction-notice.js';
import { NotificationDispatcher } from '../../src/notify/index.js';
import type { EventJson } from '../../src/domain/batch-events.js';
import { listBatchEvents } from '../../src/store/index.js';
import { TEST_DATABASE_FILE } from '../support/database.js';
import { printed } from '../support/output.js';
import { hasOpenssl } from '../support/tls.js';
import { deliveryPass, EventReceiver, newSigningSecret, useMailReceiver, type ReceivedEvent } from '../notify/receivers.js';
import { firstAcceptedBatch, pipelineDaemon, stopPipelineDaemons } from '../pipeline/daemon-world.js';
import {
  closePipelines,
  csvFile,
  csvRow,
  payoutRequest,
  startPipeline,
  waitFor,
  type Pipeline,
  type PipelineOptions,
} from '../pipeline/harness.js';
import { latestSchema, pgReachable, useTestSchema } from '../postgres/pg.js';
import { checkOwed, daemonReceiver, deliver, finalRows, stoppingFinisher } from './final-rows-world.js';
import { closeAll, onClose } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await stopPipelineDaemons();
  await closePipelines();
});

/** A webhook receiver verifying each delivery with `standardwebhooks`, its secret in a file as the daemon reads it. */
async function webhookReceiver(dir: string): Promise<{ receiver: EventReceiver; secretFile: string }> {
  const secret = newSigningSecret();
  const receiver = new EventReceiver(secret);
  await receiver.start();
  onClose(() => receiver.stop());
  const secretFile = join(dir, 'notify-secret');
  await writeFile(secretFile, secret, { mode: 0o600 });
  return { receiver, secretFile };
}

/** The config the CLI commands read: the pipeline's database and the daemon's outbox. */
function cliConfig(p: Pipeline): ResolvedConfig {
  return loadConfig(
    { env: {}, cwd: p.dir },
    {
      paths: { stateDir: join(p.dir, 'state'), outbox: join(p.dir, 'outbox'), inbox: join(p.dir, 'inbox') },
      database: { filename: join(p.dir, TEST_DATABASE_FILE) },
    },
  );
}

const correctedEvents = (r: EventReceiver): ReceivedEvent[] => r.events.filter((e) => e.type === 'batch.corrected');

/** A mail's text with quoted-printable soft line breaks undone. */
const mailText = (raw: string): string => raw.replace(/=\r\n/g, '').replace(/=3D/g, '=');

/** A mail's Subject header, its folded lines joined again. */
const subjectOf = (raw: string): string => /^Subject: (.*(?:\r\n[ \t].*)*)/m.exec(raw)?.[1]?.replace(/\r\n(?=[ \t])/g, '') ?? '';

/** The daemon's config sections: a quick poll, the webhook receiver and the SMTP receiver as channels. */
async function notifySections(
  smtp: { mail: { port: number }; certDir: string },
  login: { user: string; password: string },
  secretFile: string,
  receiver: EventReceiver,
): Promise<Record<string, unknown>> {
  const passwordFile = join(smtp.certDir, 'pw');
  await writeFile(passwordFile, login.password, { mode: 0o600 });
  return {
    inbox: { stableForMs: 20 },
    batch: { balanceCheck: { enabled: false } },
    poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
    outbox: { retryFiles: true },
    notify: {
      retry: { baseMs: 200, maxMs: 1000 },
      webhooks: [{ url: receiver.url, name: 'erp', secretFile }],
      email: {
        host: '127.0.0.1',
        port: smtp.mail.port,
        caFile: join(smtp.certDir, 'cert.pem'),
        user: login.user,
        passwordFile,
        from: 'payoutd@example.com',
        to: ['finance@example.com'],
      },
    },
  };
}

describe.skipIf(!hasOpenssl())('the daemon tells finance of a corrected result file', () => {
  const login = { user: 'payoutd', password: 'smtp-pw-Kc41Rb' };
  const smtp = useMailReceiver(login);

  it('a CANCELLED row the service now reports PAID: batch.corrected by webhook and mail, in status and the status file, once', async () => {
    const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    const { receiver, secretFile } = await webhookReceiver(p.dir);
    const sections = await notifySections(smtp, login, secretFile, receiver);
    const { daemon, inbox, outbox } = await pipelineDaemon(p, sections);
    // A long name, as finance gives them: the outbox's names repeat it.
    const file = 'supplier-payouts-2026-11-second-run-after-the-bank-holiday-checked-and-approved-by-finance.csv';
    // Accounts ending 0000 are cancelled by the sandbox.
    await writeFile(
      join(inbox, file),
      csvFile([csvRow('CN-1'), csvRow('CN-2', { 'beneficiary.accountNumber': '2222220000', payoutAmount: '2500.75' })]),
    );
    await daemon.start();
    const batchId = (await firstAcceptedBatch(p, daemon)).id;
    await waitFor(() => receiver.types().includes('batch.completed'), 'the batch to complete and be told', 15_000);
    expect(await p.states(batchId)).toEqual(['PAID', 'CANCELLED']);
    const name = outboxName(await p.batch(batchId));

    // The service reverses CN-2 to PAID and says so.
    const payoutId = (await p.row('CN-2')).payoutId as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    const h = await daemonReceiver(p, daemon);
    await deliver(h, { payoutId, merchantReferenceId: 'CN-2', status: 'PAID' });
    await waitFor(
      () => correctedEvents(receiver).some((e) => JSON.stringify(e.data['rows']).includes('"newOutcome":"PAID"')),
      'a batch.corrected event saying the service reports PAID',
      15_000,
    );
    expect(receiver.forged).toBe(0);
    const told = correctedEvents(receiver);
    const last = told.at(-1) as ReceivedEvent;
    const n = (await p.batch(batchId)).resultCorrectionsWritten as number;
    expect(last.data).toMatchObject({
      batchId,
      file,
      correction: n,
      correctionFile: `${name}.result.corrected-${n}.csv`,
      supersedes: n === 1 ? `${name}.result.csv` : `${name}.result.corrected-${n - 1}.csv`,
      columns: { reason: 'O', correction: 'P' },
      rowsChanged: 1,
    });
    expect(last.data['rows']).toEqual([
      expect.objectContaining({
        line: 3,
        merchantReferenceId: 'CN-2',
        payoutId,
        status: 'CANCELLED',
        newOutcome: 'PAID',
        payoutAmount: '2500.75',
        payoutCurrency: 'PHP',
      }),
    ]);
    // Told first as the result file showed it: whether payoutd told "asking" in between depends on timing.
    expect((told[0]?.data['rows'] as Record<string, unknown>[])[0]).toMatchObject({ oldOutcome: 'CANCELLED' });
    expect(await readdir(outbox)).toContain(`${name}.result.corrected-${n}.csv`);

    // The mail says the same, in words for finance.
    await waitFor(() => smtp.mail.mails.some((m) => mailText(m.raw).includes(`${name}.result.corrected-${n}.csv supersedes`)), 'the mail');
    const text = mailText((smtp.mail.mails.find((m) => mailText(m.raw).includes(`corrected-${n}.csv supersedes`)) as { raw: string }).raw);
    // The input file named once: the subject says what happened before the cut at 200 characters.
    expect(subjectOf(text)).toBe(`payoutd: ${file} result corrected (${n}): 1 row(s) changed`);
    expect(text).toContain(`line 3 CN-2 (payout ${payoutId}): CANCELLED in the result file; now PAID`);
    expect(text).toContain('2500.75 PHP');
    expect(text).toContain('column O "reason" says what the payout service says now');

    // The status file (its own channel, delivered on its own) and `payoutd status --batch` show it.
    const latest = `latest result,,,${name}.result.corrected-${n}.csv`;
    await waitFor(async () => (await readFile(join(outbox, `${name}.status.csv`), 'utf8')).includes(latest), 'the status file');
    const shown = await printed(() => status(cliConfig(p), batchId, 20, false));
    expect(shown).toContain(`RESULT CORRECTED`);
    expect(shown).toContain(`correction ${n} (${name}.result.corrected-${n}.csv, supersedes`);
    expect(shown).toMatch(/line 3 CN-2 \(payout \S+\): CANCELLED in the result file; now PAID \(told before: [A-Z]+\); 2500\.75 PHP/);
    const json = JSON.parse(await printed(() => status(cliConfig(p), batchId, 20, true))) as Record<string, unknown>[];
    expect(json[0]?.['corrections']).toHaveLength(n);

    // A restart tells nothing again.
    await daemon.stop();
    const again = await pipelineDaemon(p, sections);
    await again.daemon.start();
    await new Promise((r) => setTimeout(r, 1500));
    await again.daemon.stop();
    const stored = (await listBatchEvents(p.db, batchId)).filter((e) => e.type === 'corrected');
    expect(stored.map((e) => e.data['correction'])).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(correctedEvents(receiver)).toHaveLength(n);
  });
  it("a PAID row whose reference the service paid a second time: the second payout, its amount and what to do, never 'now PAID'", async () => {
    // The sandbox lets a second create of a reference through, as a service without duplicate checks would.
    const p = await startPipeline({
      startMs: Date.now(),
      sandbox: { duplicatePolicy: 'allow', settlement: { minDelayMs: 0, maxDelayMs: 5 } },
    });
    const { receiver, secretFile } = await webhookReceiver(p.dir);
    const { daemon, inbox } = await pipelineDaemon(p, await notifySections(smtp, login, secretFile, receiver));
    await writeFile(join(inbox, 'dbl.csv'), csvFile([csvRow('DB-1'), csvRow('DB-2', { payoutAmount: '2500.75' })]));
    await daemon.start();
    const batchId = (await firstAcceptedBatch(p, daemon)).id;
    await waitFor(() => receiver.types().includes('batch.completed'), 'the batch to complete and be told', 15_000);
    expect(await p.states(batchId)).toEqual(['PAID', 'PAID']);

    const own = (await p.row('DB-2')).payoutId as string;
    const second = (await p.client.createPayout(payoutRequest('DB-2', { payoutAmount: '2500.75' }))).payoutId;
    // Settled PAID now, unless the sandbox's own settlement (PAID, within 5 ms) came first.
    p.sandbox.settle({ payoutId: second }, 'PAID');
    expect((await p.client.queryByPayoutIds([second])).records?.[0]?.status).toBe('PAID');
    const h = await daemonReceiver(p, daemon);
    await deliver(h, { payoutId: second, merchantReferenceId: 'DB-2', status: 'PAID' });
    // The service's answer, as the result file's reason column tells it.
    const answered = `${second} (PAID) under this row's reference besides payout ${own}`;
    await waitFor(
      () => correctedEvents(receiver).some((e) => JSON.stringify(e.data['rows']).includes(answered)),
      'a batch.corrected event with the answer',
      15_000,
    );
    const last = correctedEvents(receiver).at(-1) as ReceivedEvent;
    expect(last.data['rows']).toEqual([
      expect.objectContaining({
        line: 3,
        merchantReferenceId: 'DB-2',
        payoutId: own,
        status: 'PAID',
        newOutcome: 'OTHER_PAYOUTS',
        otherPayouts: [{ payoutId: second, status: 'PAID', amount: '2500.75', currency: 'PHP' }],
        payoutAmount: '2500.75',
        payoutCurrency: 'PHP',
      }),
    ]);

    const row = `line 3 DB-2 (payout ${own}): PAID in the result file; now OTHER_PAYOUTS (told before: `;
    const others =
      `a second payout under this reference: ${second} PAID, 2500.75 PHP; the reference is paid twice: ` +
      "do not book it as this row's payment, and do not send this row again; check it with the payout service before booking the row";
    const file = last.data['correctionFile'] as string;
    await waitFor(
      () => smtp.mail.mails.some((m) => mailText(m.raw).includes(`Correction ${String(last.data['correction'])}: ${file}`)),
      'the mail',
    );
    const text = mailText(
      (smtp.mail.mails.find((m) => mailText(m.raw).includes(`Correction ${String(last.data['correction'])}: ${file}`)) as { raw: string })
        .raw,
    );
    expect(text).toContain(row);
    expect(text).toContain(others);
    expect(text).toContain("OTHER_PAYOUTS: the payout service does not contradict the row's own payout");

    const shown = await printed(() => status(cliConfig(p), batchId, 20, false));
    expect(shown).toContain(row);
    expect(shown).toContain(others);
  });
});

/**
 * A PAID row the service now reports CANCELLED, step by step: correction 1 (payoutd is asking) stops after its file,
 * before it counts; after the answer, a restarted finisher counts it and writes correction 2, and later passes add
 * nothing. Each correction is one event, each delivered once.
 */
async function paidThenCancelled(o: PipelineOptions): Promise<void> {
  const { p, h, batchId, payoutIds } = await finalRows({ 'CP-1': 'PAID', 'CP-2': 'PAID' }, o);
  const outbox = join(p.dir, 'outbox');
  await mkdir(outbox, { recursive: true });
  const { receiver, secretFile } = await webhookReceiver(p.dir);
  const config = loadConfig(
    { env: {}, cwd: p.dir },
    { paths: { inbox: p.dir, outbox, stateDir: p.dir }, notify: { statusFiles: true, webhooks: [{ url: receiver.url, secretFile }] } },
  );
  const dispatcher = new NotificationDispatcher(
    { db: p.db, config, clock: p.clock, logger: p.logger, outboxName },
    { instanceId: 'a', leaseMs: 60_000, alone: true },
  );
  expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
  const name = outboxName(await p.batch(batchId));
  p.clock.advance(60_000);

  const payoutId = payoutIds.get('CP-2') as string;
  expect(p.sandbox.reverse(payoutId, 'CANCELLED')).toBe(true);
  await deliver(h, { payoutId, merchantReferenceId: 'CP-2', status: 'CANCELLED' });
  await checkOwed(p, 'CP-2');
  // Correction 1 (payoutd is asking) stops after its file, before it counts: no event yet.
  await stoppingFinisher(p, outbox, 'after-correction-file').pass();
  expect((await listBatchEvents(p.db, batchId)).map((e) => e.type)).not.toContain('corrected');

  p.clock.advance(1000);
  await p.poll(); // the service answers: CANCELLED
  const restarted = stoppingFinisher(p, outbox);
  await restarted.pass();
  await restarted.pass();
  await stoppingFinisher(p, outbox).pass();
  const stored = (await listBatchEvents(p.db, batchId)).filter((e) => e.type === 'corrected');
  expect(stored.map((e) => e.data['correctionFile'])).toEqual([`${name}.result.corrected-1.csv`, `${name}.result.corrected-2.csv`]);
  expect(stored[0]?.data['rows']).toEqual([
    expect.objectContaining({ line: 3, merchantReferenceId: 'CP-2', status: 'PAID', oldOutcome: 'PAID', newOutcome: 'UNCONFIRMED' }),
  ]);
  expect(stored[1]?.data).toMatchObject({ supersedes: `${name}.result.corrected-1.csv`, rowsChanged: 1 });
  expect(stored[1]?.data['rows']).toEqual([
    expect.objectContaining({ line: 3, status: 'PAID', oldOutcome: 'UNCONFIRMED', newOutcome: 'CANCELLED', payoutAmount: '101.5' }),
  ]);

  await deliveryPass(dispatcher);
  p.clock.advance(10_000);
  await deliveryPass(dispatcher);
  expect(correctedEvents(receiver).map((e) => e.data['correction'])).toEqual([1, 2]);
  expect(receiver.forged).toBe(0);
}

describe('a PAID row the service now reports CANCELLED, step by step', () => {
  it('each correction is one event, named by its file, after a stop before it counted and a second pass alike', () =>
    paidThenCancelled({}));
});

describe.skipIf(!pgReachable)('the same on PostgreSQL', () => {
  const schema = useTestSchema();

  it('each correction is one event, after a stop before it counted and a second pass alike', () =>
    paidThenCancelled({ database: latestSchema(schema) }));
});

/**
 * A finished batch's row (`state`) whose reference the service now holds a second payout under, of `amount`
 * (`second`, as it reports it): a signed payout.updated event names that payout, the check of the reference is
 * answered, and a finisher writes the correction. `ownNow`: the service reverses the row's own payout first.
 */
async function secondPayout(
  o: PipelineOptions,
  state: 'PAID' | 'CANCELLED',
  second: { status: 'PAID' | 'PENDING'; amount: string },
  ownNow?: 'PAID',
): Promise<{ p: Pipeline; batchId: string; own: string; other: string; rows: EventJson[] }> {
  const { p, h, batchId, payoutIds } = await finalRows({ 'SP-1': state }, { ...o, sandbox: { duplicatePolicy: 'allow' } });
  const outbox = join(p.dir, 'outbox');
  await mkdir(outbox, { recursive: true });
  expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
  p.clock.advance(60_000);
  const own = payoutIds.get('SP-1') as string;
  if (ownNow) expect(p.sandbox.reverse(own, ownNow)).toBe(true);
  const other = (await p.client.createPayout(payoutRequest('SP-1', { payoutAmount: second.amount }))).payoutId;
  if (second.status === 'PAID') expect(p.sandbox.settle({ payoutId: other }, 'PAID')).toBe(1);
  await deliver(h, { payoutId: other, merchantReferenceId: 'SP-1', status: second.status });
  await checkOwed(p, 'SP-1');
  p.clock.advance(1000);
  await p.poll();
  await stoppingFinisher(p, outbox).pass();
  const told = (await listBatchEvents(p.db, batchId)).filter((e) => e.type === 'corrected');
  expect(told).toHaveLength(1);
  return { p, batchId, own, other, rows: told[0]?.data['rows'] as EventJson[] };
}

describe("a row's reference the service holds another payout under: the row's own outcome, and the other payout apart", () => {
  it('a PAID row, a second payout PENDING: OTHER_PAYOUTS with it, not "now PENDING"', async () => {
    const { p, batchId, own, other, rows } = await secondPayout({}, 'PAID', { status: 'PENDING', amount: '101.5' });
    expect(rows).toEqual([
      expect.objectContaining({
        status: 'PAID',
        oldOutcome: 'PAID',
        newOutcome: 'OTHER_PAYOUTS',
        otherPayouts: [{ payoutId: other, status: 'PENDING', amount: '101.5', currency: 'PHP' }],
      }),
    ]);
    const shown = await printed(() => status(cliConfig(p), batchId, 20, false));
    expect(shown).toContain(
      `line 2 SP-1 (payout ${own}): PAID in the result file; now OTHER_PAYOUTS (told before: PAID); 100.5 PHP, deduction `,
    );
    expect(shown).toContain(`; a second payout under this reference: ${other} PENDING, 101.5 PHP: do not book it as this row's payment`);
    expect(shown).not.toContain('the reference is paid twice');
  });

  it("a CANCELLED row whose reference another payout of another amount paid: that payout and its amount, the row's own outcome CANCELLED", async () => {
    const { p, batchId, own, other, rows } = await secondPayout({}, 'CANCELLED', { status: 'PAID', amount: '7.25' });
    expect(rows).toEqual([
      expect.objectContaining({
        payoutId: own,
        status: 'CANCELLED',
        oldOutcome: 'CANCELLED',
        newOutcome: 'OTHER_PAYOUTS',
        otherPayouts: [{ payoutId: other, status: 'PAID', amount: '7.25', currency: 'PHP' }],
        payoutAmount: '100.5',
      }),
    ]);
    const shown = await printed(() => status(cliConfig(p), batchId, 20, false));
    expect(shown).toContain(`now OTHER_PAYOUTS (told before: CANCELLED); 100.5 PHP`);
    expect(shown).toContain(`a second payout under this reference: ${other} PAID, 7.25 PHP: do not book it as this row's payment`);
  });

  it("a CANCELLED row the service now reports PAID, and another payout PAID beside it: the row's own PAID, and paid twice", async () => {
    const { other, rows } = await secondPayout({}, 'CANCELLED', { status: 'PAID', amount: '7.25' }, 'PAID');
    expect(rows).toEqual([
      expect.objectContaining({
        status: 'CANCELLED',
        newOutcome: 'PAID',
        otherPayouts: [{ payoutId: other, status: 'PAID', amount: '7.25', currency: 'PHP' }],
      }),
    ]);
    expect(correctedRowText(correctionNoticeOf({ rows }).rows[0] as CorrectedRow)).toContain(
      `a second payout under this reference: ${other} PAID, 7.25 PHP; the reference is paid twice`,
    );
  });
});

describe.skipIf(!pgReachable)('another payout under the reference, on PostgreSQL', () => {
  const schema = useTestSchema();

  it('the other payout and its amount are kept beside the note and told', async () => {
    const { other, rows } = await secondPayout({ database: latestSchema(schema) }, 'CANCELLED', { status: 'PAID', amount: '7.25' });
    expect(rows).toEqual([
      expect.objectContaining({
        newOutcome: 'OTHER_PAYOUTS',
        otherPayouts: [{ payoutId: other, status: 'PAID', amount: '7.25', currency: 'PHP' }],
      }),
    ]);
  });
});

describe.skipIf(!hasOpenssl())('a correction whose retry file cannot be written', () => {
  const login = { user: 'payoutd', password: 'smtp-pw-Kc41Rb' };
  const smtp = useMailReceiver(login);

  it('says so in its event and mail: the earlier retry file still offers the row the service now reports PAID', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'RW-1': 'CANCELLED', 'RW-2': 'CANCELLED' });
    const outbox = join(p.dir, 'outbox');
    await mkdir(outbox, { recursive: true });
    expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
    const name = outboxName(await p.batch(batchId));
    expect(await readdir(outbox)).toContain(`${name}.retry.csv`);
    p.clock.advance(60_000);

    const payoutId = payoutIds.get('RW-2') as string;
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await deliver(h, { payoutId, merchantReferenceId: 'RW-2', status: 'PAID' });
    await checkOwed(p, 'RW-2');
    p.clock.advance(1000);
    await p.poll();
    // A folder where the correction's retry file goes: its write fails, as on a full disk, after the result file's.
    await mkdir(join(outbox, `${name}.retry.corrected-1.csv`));
    await stoppingFinisher(p, outbox).pass();
    const told = (await listBatchEvents(p.db, batchId)).filter((e) => e.type === 'corrected');
    expect(told.map((e) => e.data)).toEqual([
      expect.objectContaining({ correction: 1, retryFile: null, retryFileError: 'RETRY_FILE_NOT_WRITTEN' }),
    ]);
    // What finance is warned of: the retry file before still offers the row.
    expect(await readFile(join(outbox, `${name}.retry.csv`), 'utf8')).toContain('RW-2');

    const { receiver, secretFile } = await webhookReceiver(p.dir);
    const config = loadConfig(
      { env: {}, cwd: p.dir },
      { paths: { inbox: p.dir, outbox, stateDir: p.dir }, ...(await notifySections(smtp, login, secretFile, receiver)) },
    );
    const dispatcher = new NotificationDispatcher(
      { db: p.db, config, clock: p.clock, logger: p.logger, outboxName },
      { instanceId: 'a', leaseMs: 60_000, alone: true },
    );
    const mail = (): string | undefined =>
      smtp.mail.mails.map((m) => mailText(m.raw)).find((t) => t.includes(`Correction 1: ${name}.result.corrected-1.csv`));
    await waitFor(async () => {
      await deliveryPass(dispatcher);
      return mail() !== undefined && correctedEvents(receiver).length > 0;
    }, 'the mail and the webhook');
    expect(correctedEvents(receiver)[0]?.data).toMatchObject({ retryFile: null, retryFileError: 'RETRY_FILE_NOT_WRITTEN' });
    expect(mail()).toContain(
      "Retry files: the retry file of this correction could not be written (payoutd's log says why; RETRY_FILE_NOT_WRITTEN): " +
        'retry files of this batch in the outbox, and copies taken before, may still offer a row this correction changed: ' +
        `do not retry from them; write one with payoutd retry-file --batch ${batchId} before retrying its CANCELLED rows`,
    );
  });
});

/**
 * Delivery of batch events to real receivers: an HTTP endpoint verifying
 * each delivery with the `standardwebhooks` package, an SMTP server that
 * requires STARTTLS and a login, and the status files in the outbox. The
 * dispatcher runs on a ManualClock (retries and give-up are decided by it);
 * signatures carry the wall clock, as the receiver checks.
 */
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { applyLiveOptions, loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import { createLogger } from '../../src/log/index.js';
import { BatchOutbox, outboxName } from '../../src/daemon/outbox.js';
import { BatchFinisher } from '../../src/daemon/finisher.js';
import { shownStateOf } from '../../src/domain/batch-events.js';
import { NotificationDispatcher, recordBatchEvent, type DeliveryOutcomeLabel } from '../../src/notify/index.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import {
  cancelReadyRows,
  cancelReturnedRows,
  claimChannelEvents,
  countBatchesByState,
  countEventsByDelivery,
  getBatch,
  holdBatch,
  insertBatch,
  listBatchEvents,
  receivedBatch,
  releaseBatchHold,
  updateBatch,
  type BatchRecord,
} from '../../src/store/index.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { openTestDatabase } from '../support/database.js';
import { hasOpenssl } from '../support/tls.js';
import { waitFor } from '../inbox/helpers.js';
import { deliveryPass, EventReceiver, newSigningSecret, useMailReceiver } from './receivers.js';

const START = Date.UTC(2026, 10, 27, 9, 0, 0);
/** The lease of the tests of several instances. */
const SHARED_LEASE_MS = 3000;

interface World {
  dir: string;
  db: Database;
  clock: ManualClock;
  logLines: string[];
  outcomes: [string, DeliveryOutcomeLabel][];
  config: ResolvedConfig;
  dispatcher: NotificationDispatcher;
}

let world: World | null = null;

async function setUp(notify: Record<string, unknown>, extra: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): Promise<World> {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-notify-'));
  const outbox = join(dir, 'outbox');
  await mkdir(outbox);
  const db = await openTestDatabase(dir);
  const clock = new ManualClock(START);
  const logLines: string[] = [];
  const logger = createLogger('debug', { write: (line: string) => void logLines.push(line) });
  const config = loadConfig({ env, cwd: dir }, { paths: { inbox: dir, outbox, stateDir: dir }, notify, ...extra });
  const outcomes: [string, DeliveryOutcomeLabel][] = [];
  const dispatcher = new NotificationDispatcher(
    { db, config, clock, logger, outboxName, onDelivery: (c, o) => outcomes.push([c, o]) },
    { instanceId: 'test', leaseMs: 60_000, alone: true },
  );
  world = { dir, db, clock, logLines, outcomes, config, dispatcher };
  return world;
}

afterEach(async () => {
  if (!world) return;
  await closeDatabase(world.db);
  await rm(world.dir, { recursive: true, force: true });
  world = null;
});

/** The names a mail lists under "Outbox files:". */
function outboxFilesOf(raw: string): string[] {
  const section = raw.split(/Outbox files:\r?\n/)[1] ?? '';
  return [...section.matchAll(/^ {2}(\S+)\r?$/gm)].map((m) => m[1] as string);
}

/** The finisher of the world's batches: it writes their result files and records their final notices. */
function finisherOf(w: World): BatchFinisher {
  return new BatchFinisher(
    {
      db: w.db,
      clock: w.clock,
      logger: createLogger('silent'),
      outbox: new BatchOutbox(w.db, w.config.paths.outbox, false),
      continued: { dir: w.config.paths.outbox, bom: false, maxRecordBytes: 65536, encoding: 'utf-8' },
    },
    { instanceId: 'test', leaseMs: 60_000, shared: false },
  );
}

async function newBatch(w: World, id: string, fileName = `${id}.csv`): Promise<BatchRecord> {
  const b = receivedBatch(
    { id, fileName, storedPath: `/claimed/${id}`, controlPath: null, sha256: id.padEnd(64, '0'), size: 120, mtimeMs: 1, doneMarker: false },
    w.clock.now(),
  );
  await insertBatch(w.db, { ...b, state: 'ACTIVE', rowCount: 2, validCount: 2, acceptedAt: w.clock.now() });
  await insertRows(
    w.db,
    [1, 2].map((i) => ({
      batchId: id,
      line: i + 1,
      merchantReferenceId: `${id}-${i}`,
      state: 'READY' as const,
      requestValues: null,
      payoutCurrency: 'PHP',
      payoutAmount: i === 1 ? '1500.50' : '99.95',
      deductionCurrency: 'USDT',
      reasonCode: null,
      reason: null,
    })),
    w.clock.now(),
  );
  // The first row paid (a test shortcut: its moves are the submitter's and the poller's business).
  await w.db('payouts').where({ batch_id: id, line: 2 }).update({ state: 'PAID' });
  return (await getBatch(w.db, id)) as BatchRecord;
}

const SHORT = {
  code: 'INSUFFICIENT_BALANCE' as const,
  reason: 'the USDT balance 10 does not cover the batch (1600.45 PHP, about 30 USDT)',
  until: START + 60_000,
};

describe('webhooks to a real receiver (standardwebhooks verifies)', () => {
  let receiver: EventReceiver;
  let secretFile: string;

  beforeEach(async () => {
    const secret = newSigningSecret();
    receiver = new EventReceiver(secret);
    await receiver.start();
    secretFile = join(await mkdtemp(join(tmpdir(), 'payoutd-secret-')), 'erp-secret');
    await writeFile(secretFile, `${secret}\n`, { mode: 0o600 });
  });
  afterEach(() => receiver.stop());

  it('delivers each event signed; a receiver down for a while gets every event once back, each id once', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], retry: { baseMs: 1000, maxMs: 60_000 } });
    await newBatch(w, 'B1', 'payroll nov.csv');
    await holdBatch(w.db, 'B1', SHORT, w.clock.now());
    await deliveryPass(w.dispatcher);
    expect(receiver.forged).toBe(0);
    expect(receiver.types()).toEqual(['batch.received', 'batch.held']);
    const held = receiver.events[1];
    expect(held?.data).toMatchObject({ batchId: 'B1', file: 'payroll nov.csv', code: 'INSUFFICIENT_BALANCE', reason: SHORT.reason });
    expect(held?.timestamp).toBe(new Date(START).toISOString());
    // The status file took them too (a channel of its own, on by default).
    expect(w.outcomes.filter(([c]) => c === 'status-file').map(([, o]) => o)).toEqual(['delivered', 'delivered']);

    // Down: the next events wait, retried with backoff, the payouts untouched by it.
    await receiver.stop();
    w.clock.advance(5_000);
    await releaseBatchHold(w.db, 'B1', w.clock.now(), 'balance-covered');
    await w.db.transaction((trx) => recordBatchEvent(trx, { batchId: 'B1', type: 'progress', data: { percent: 50 }, at: w.clock.now() }));
    await deliveryPass(w.dispatcher);
    expect(await deliveryPass(w.dispatcher), 'nothing due before the backoff').toBe(0);
    for (let i = 0; i < 5; i++) {
      w.clock.advance(60_000);
      await deliveryPass(w.dispatcher);
    }
    expect(receiver.events).toHaveLength(2);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2, PENDING: 2 });
    // One attempt per pass for a receiver that is down, not one per event.
    const failedPerPass = w.outcomes.filter(([c, o]) => c === 'webhook:erp' && o === 'failed').length;
    expect(failedPerPass).toBe(6);

    // Back on the same port: every missed event arrives, in order.
    await receiver.start();
    w.clock.advance(60_000);
    expect(await deliveryPass(w.dispatcher)).toBe(2);
    expect(receiver.types()).toEqual(['batch.received', 'batch.held', 'batch.released', 'batch.progress']);
    expect(receiver.events[2]?.data).toMatchObject({ code: 'INSUFFICIENT_BALANCE', by: 'balance-covered' });

    // A receiver that took an event but answered 500 gets it again; its id lets it keep one.
    receiver.answer = 500;
    await holdBatch(w.db, 'B1', SHORT, w.clock.now());
    await deliveryPass(w.dispatcher);
    receiver.answer = 204;
    w.clock.advance(60_000);
    await deliveryPass(w.dispatcher);
    expect(receiver.deliveries).toBe(receiver.events.length + 1);
    expect(receiver.types()).toEqual(['batch.received', 'batch.held', 'batch.released', 'batch.progress', 'batch.held']);
    const ids = (await listBatchEvents(w.db, 'B1')).map((e) => e.id);
    expect(receiver.events.map((e) => e.id)).toEqual(ids);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 5 });
  });

  it('after an outage, the events of a batch arrive in order: later ones wait behind those waiting for a retry', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], statusFiles: false });
    await newBatch(w, 'B11');
    await holdBatch(w.db, 'B11', SHORT, w.clock.now());
    receiver.answer = 503;
    expect(await deliveryPass(w.dispatcher)).toBe(2);
    // Back a second later, before the backoff (notify.retry.baseMs 5 s) of the first two ends; two more events happen.
    receiver.answer = 204;
    w.clock.advance(1_000);
    await releaseBatchHold(w.db, 'B11', w.clock.now(), 'balance-covered');
    await w.db.transaction((trx) => recordBatchEvent(trx, { batchId: 'B11', type: 'completed', data: {}, at: w.clock.now() }));
    expect(await deliveryPass(w.dispatcher)).toBe(2);
    expect(await deliveryPass(w.dispatcher), 'the waiting ones are not due again before the events they wait behind').toBe(0);
    // Waiting is no failed attempt.
    expect(w.outcomes).toEqual([['webhook:erp', 'failed']]);
    w.clock.advance(5_000);
    expect(await deliveryPass(w.dispatcher)).toBe(4);
    expect(receiver.takenTypes()).toEqual(['batch.received', 'batch.held', 'batch.released', 'batch.completed']);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 4 });
  });

  /** A second receiver, `treasury`, with its secret in a file beside erp's. */
  async function treasuryReceiver(): Promise<{ treasury: EventReceiver; treasurySecret: string }> {
    const secret = newSigningSecret();
    const treasury = new EventReceiver(secret);
    await treasury.start();
    const treasurySecret = join(join(secretFile, '..'), 'treasury-secret');
    await writeFile(treasurySecret, secret, { mode: 0o600 });
    return { treasury, treasurySecret };
  }

  it('order is kept per channel: a channel that is down holds back no other channel', async () => {
    const { treasury, treasurySecret } = await treasuryReceiver();
    try {
      const w = await setUp({
        webhooks: [
          { url: receiver.url, name: 'erp', secretFile },
          { url: treasury.url, name: 'treasury', secretFile: treasurySecret },
        ],
        statusFiles: false,
      });
      await newBatch(w, 'B12');
      receiver.answer = 503;
      await deliveryPass(w.dispatcher);
      receiver.answer = 204;
      w.clock.advance(1_000);
      await holdBatch(w.db, 'B12', SHORT, w.clock.now());
      await deliveryPass(w.dispatcher);
      // Treasury took both at once; erp's held waits behind its received.
      expect(treasury.types()).toEqual(['batch.received', 'batch.held']);
      expect(receiver.takenTypes()).toEqual([]);
      w.clock.advance(5_000);
      await deliveryPass(w.dispatcher);
      expect(receiver.takenTypes()).toEqual(['batch.received', 'batch.held']);
      expect(treasury.deliveries, 'each event once to the channel that took it').toBe(2);
      expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2 });
    } finally {
      await treasury.stop();
    }
  });

  it('each channel keeps its own backoff: a receiver down for long does not lengthen the retries of another', async () => {
    const { treasury, treasurySecret } = await treasuryReceiver();
    try {
      const erp = { url: receiver.url, name: 'erp', secretFile };
      const notify = { statusFiles: false, retry: { baseMs: 1000, maxMs: 600_000 } };
      const w = await setUp({ ...notify, webhooks: [erp] });
      await newBatch(w, 'B13');
      await receiver.stop();
      for (let i = 0; i < 6; i++) {
        await deliveryPass(w.dispatcher);
        w.clock.advance(600_000);
      }
      // A second webhook, added by a SIGHUP, refuses its first attempt: erp fails its seventh at the same pass.
      treasury.answer = 503;
      const webhooks = [erp, { url: treasury.url, name: 'treasury', secretFile: treasurySecret }];
      applyLiveOptions(w.config, loadConfig({ env: {}, cwd: w.dir }, { paths: w.config.paths, notify: { ...notify, webhooks } }));
      await deliveryPass(w.dispatcher);
      // Treasury is tried again after its own first backoff step, not after erp's seventh.
      treasury.answer = 204;
      w.clock.advance(1_000);
      await deliveryPass(w.dispatcher);
      expect(treasury.takenTypes()).toEqual(['batch.received']);
      expect(w.outcomes.filter(([c]) => c === 'webhook:erp').map(([, o]) => o)).toEqual(Array(7).fill('failed'));
      expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
    } finally {
      await treasury.stop();
    }
  });

  it('started again without a channel, or with fewer events for one, owes them none of the events left: those are done', async () => {
    const { treasury, treasurySecret } = await treasuryReceiver();
    try {
      const erp = { url: receiver.url, name: 'erp', secretFile };
      const w = await setUp({ statusFiles: false, webhooks: [erp, { url: treasury.url, name: 'treasury', secretFile: treasurySecret }] });
      await receiver.stop();
      treasury.answer = 503;
      await newBatch(w, 'B41');
      await holdBatch(w.db, 'B41', SHORT, w.clock.now());
      await deliveryPass(w.dispatcher);
      expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 2 });
      // The next process: treasury is gone, erp takes only `held`.
      const config = loadConfig(
        { env: {}, cwd: w.dir },
        { paths: w.config.paths, notify: { statusFiles: false, webhooks: [{ ...erp, events: ['held'] }] } },
      );
      const next = new NotificationDispatcher(
        { db: w.db, config, clock: w.clock, logger: createLogger('silent'), outboxName },
        { instanceId: 'next', leaseMs: 60_000, alone: true },
      );
      await deliveryPass(next);
      expect(await countEventsByDelivery(w.db), 'received, owed to none now').toEqual({ DELIVERED: 1, PENDING: 1 });
      await receiver.start();
      w.clock.advance(600_000);
      await deliveryPass(next);
      expect(receiver.types()).toEqual(['batch.held']);
      expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2 });
      expect(treasury.takenTypes()).toEqual([]);
    } finally {
      await treasury.stop();
    }
  });

  it('a database of an older build: a channel it recorded as having taken a pending event does not get it again', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }] });
    const applied = async (): Promise<string[]> => (await w.db('payoutd_migrations').orderBy('id').pluck('name')) as string[];
    while ((await applied()).at(-1) !== '0037_report_ends') await w.db.migrate.down();
    await newBatch(w, 'B14');
    // As the older build left it: the status file written, the webhook refused three times, tried again in 30 s.
    await w.db('batch_events').update({ delivered_to: '["status-file"]', attempts: 3, next_attempt_at: START + 30_000 });
    await w.db.migrate.latest();
    expect(await deliveryPass(w.dispatcher), 'nothing due before the backoff the older build set').toBe(0);
    w.clock.advance(30_000);
    expect(await deliveryPass(w.dispatcher)).toBe(1);
    expect(receiver.types()).toEqual(['batch.received']);
    expect(w.outcomes).toEqual([['webhook:erp', 'delivered']]);
    const rows = (await w.db('batch_event_deliveries').orderBy('channel').select('channel', 'state', 'attempts')) as unknown[];
    expect(rows).toEqual([
      { channel: 'status-file', state: 'DELIVERED', attempts: 3 },
      { channel: 'webhook:erp', state: 'DELIVERED', attempts: 3 },
    ]);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 1 });
  });

  it('gives up after notify.retryFor, logs it at error and counts it', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], retryFor: 3_600_000, statusFiles: false });
    await receiver.stop();
    await newBatch(w, 'B2');
    await deliveryPass(w.dispatcher);
    for (let i = 0; i < 8; i++) {
      w.clock.advance(600_000);
      await deliveryPass(w.dispatcher);
    }
    expect(await countEventsByDelivery(w.db)).toEqual({ GAVE_UP: 1 });
    expect(w.outcomes.filter(([, o]) => o === 'gave_up')).toEqual([['webhook:erp', 'gave_up']]);
    const line = w.logLines
      .map((l) => JSON.parse(l) as { level: string; msg: string; err?: string })
      .find((l) => l.msg.startsWith('NOTIFICATION UNDELIVERABLE'));
    expect(line?.level).toBe('error');
    expect(line?.err).toMatch(/webhook:erp: NOTIFY_HTTP_UNREACHABLE/);
    // No secret and no payload in the logs.
    const secret = (await readFile(secretFile, 'utf8')).trim();
    expect(w.logLines.filter((l) => l.includes(secret.slice(6, 20)))).toEqual([]);
  });

  it('with many events owed to a receiver that is down, an idle pass reads only due records and new events', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], retry: { baseMs: 60_000, maxMs: 600_000 } });
    await receiver.stop();
    for (const id of ['B31', 'B32', 'B33', 'B34']) {
      await newBatch(w, id);
      for (let i = 0; i < 30; i++) {
        await w.db.transaction((trx) => recordBatchEvent(trx, { batchId: id, type: 'progress', data: {}, at: w.clock.now() }));
      }
    }
    // The status files take every event; erp's wait for its retry, or behind an earlier event of their batch.
    let handled = 1;
    while (handled > 0) handled = await deliveryPass(w.dispatcher);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 124 });
    // Nothing is due: what a pass reads is each of its statements' plan on the one SQLite connection.
    const statements: { sql: string; bindings: unknown[] }[] = [];
    const seen = (q: { sql: string; bindings: unknown[] }): void => void statements.push(q);
    w.db.on('query', seen);
    expect(await deliveryPass(w.dispatcher)).toBe(0);
    w.db.removeListener('query', seen);
    const reads: string[] = [];
    for (const q of statements.filter((st) => /^\s*select/i.test(st.sql))) {
      const plan = (await w.db.raw(`explain query plan ${q.sql}`, q.bindings as Knex.RawBinding[])) as { detail: string }[];
      // Each step as the table and the index range it reads (a SCAN, or a range over every pending event, reads more).
      reads.push(
        ...plan.map((p) => /^SEARCH (\w+) USING (?:COVERING )?INDEX \w+ (\(.*\))$/.exec(p.detail)?.slice(1).join(' ') ?? p.detail),
      );
    }
    // The events stored since the last pass, then each channel's due records; not the events or records owed.
    expect(reads).toEqual([
      'batch_events (deliveries_made_at=?)',
      'batch_event_deliveries (channel=? AND state=? AND next_attempt_at<?)',
      'batch_event_deliveries (channel=? AND state=? AND next_attempt_at<?)',
    ]);
  });

  it('a stop during an attempt leaves the event owed as it was: no failed attempt, no backoff, not given up however old', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], statusFiles: false, retryFor: 3_600_000 });
    await newBatch(w, 'B51');
    w.clock.advance(3_600_001);
    const release = receiver.holdNextDelivery();
    const stop = new AbortController();
    const pass = deliveryPass(w.dispatcher, stop.signal);
    await waitFor(() => receiver.held === 1, 'the delivery held at the receiver');
    stop.abort(new Error('stopping'));
    await pass;
    release();
    const rows = (await w
      .db('batch_event_deliveries')
      .select('state', 'attempts', 'next_attempt_at', 'last_error', 'lease_owner')) as unknown[];
    expect(rows).toEqual([{ state: 'PENDING', attempts: 0, next_attempt_at: START, last_error: null, lease_owner: null }]);
    expect(w.outcomes).toEqual([]);
    expect(w.logLines.filter((l) => /will retry|UNDELIVERABLE/.test(l))).toEqual([]);
    // The next start delivers it.
    expect(await deliveryPass(w.dispatcher)).toBe(1);
    expect(w.outcomes).toEqual([['webhook:erp', 'delivered']]);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 1 });
  });

  it('a SIGHUP that adds a webhook applies at the next pass (notify options are live)', async () => {
    const w = await setUp({ statusFiles: false });
    await newBatch(w, 'B7');
    await deliveryPass(w.dispatcher);
    expect(await countEventsByDelivery(w.db), 'taken by no channel: done').toEqual({ DELIVERED: 1 });
    const next = loadConfig(
      { env: {}, cwd: w.dir },
      { paths: w.config.paths, notify: { statusFiles: false, webhooks: [{ url: receiver.url, name: 'erp', secretFile }] } },
    );
    const changes = applyLiveOptions(w.config, next);
    // Applied, and reported without its value (a URL may carry a token).
    expect(changes).toEqual([{ path: 'notify.webhooks', live: true, hidden: true }]);
    await holdBatch(w.db, 'B7', SHORT, w.clock.now());
    await deliveryPass(w.dispatcher);
    expect(receiver.types()).toEqual(['batch.held']);
  });

  it('a receiver that never answers costs one notify.timeoutMs per pass, not a stuck loop', async () => {
    const sockets: Socket[] = [];
    const silent = createServer(() => undefined);
    silent.on('connection', (s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`;
    try {
      const w = await setUp({ webhooks: [{ url, name: 'silent', secretFile }], timeoutMs: 300, statusFiles: false });
      await newBatch(w, 'B8');
      await holdBatch(w.db, 'B8', SHORT, w.clock.now());
      const started = Date.now();
      expect(await deliveryPass(w.dispatcher)).toBe(2);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(w.outcomes).toEqual([['webhook:silent', 'failed']]);
      expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 2 });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('alone on SQLite, events a killed process left claimed are delivered at once, not after its lease', async () => {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], statusFiles: false });
    await newBatch(w, 'B9');
    // The process killed mid-delivery: its claim stays, for an hour.
    await w.dispatcher.prepare();
    const claim = { channel: 'webhook:erp', instanceId: 'killed', leaseMs: 3_600_000, now: w.clock.now(), limit: 10 };
    expect(await claimChannelEvents(w.db, claim)).toHaveLength(1);
    expect(await deliveryPass(w.dispatcher)).toBe(1);
    expect(receiver.types()).toEqual(['batch.received']);
  });

  /**
   * Two instances sharing the database (lease SHARED_LEASE_MS) and a batch event of each of two batches: a has
   * claimed both and is held at the receiver with the first; b is beside it.
   */
  async function aHeldAtFirstOf(
    first: string,
    second: string,
  ): Promise<{ w: World; release: () => void; aPass: Promise<number>; b: NotificationDispatcher }> {
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile }], statusFiles: false });
    const instance = (id: string): NotificationDispatcher =>
      new NotificationDispatcher(
        { db: w.db, config: w.config, clock: w.clock, logger: createLogger('silent'), outboxName },
        { instanceId: id, leaseMs: SHARED_LEASE_MS, alone: false },
      );
    await newBatch(w, first);
    await newBatch(w, second);
    const release = receiver.holdNextDelivery();
    const aPass = deliveryPass(instance('a'));
    await waitFor(() => receiver.held === 1, 'the first delivery held');
    return { w, release, aPass, b: instance('b') };
  }

  it('with several instances, a delivery pass that outlasts its lease keeps its events: each delivered once', async () => {
    const { w, release, aPass, b } = await aHeldAtFirstOf('B21', 'B22');
    // a's lease runs out meanwhile.
    w.clock.advance(SHARED_LEASE_MS + 1);
    await waitFor(
      async () =>
        Number((await w.db('batch_event_deliveries').where('lease_expires_at', '>', w.clock.now()).count({ n: '*' }))[0]?.n) === 2,
      'the claims renewed past the moved clock',
    );
    expect(await deliveryPass(b), 'nothing for another instance to take').toBe(0);
    release();
    expect(await aPass).toBe(2);
    expect(receiver.deliveries).toBe(2);
    expect(receiver.types()).toEqual(['batch.received', 'batch.received']);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2 });
  });

  it('with several instances, an event taken over while the pass stalled is not delivered again by it', async () => {
    const { w, release, aPass, b } = await aHeldAtFirstOf('B23', 'B24');
    // b took the second event over (as after a renewal that could not be written) and delivered it.
    const second = (await listBatchEvents(w.db, 'B24'))[0];
    await w.db('batch_event_deliveries').where({ event_seq: second?.seq, channel: 'webhook:erp' }).update({ lease_owner: 'b' });
    expect(await deliveryPass(b)).toBe(1);
    release();
    await aPass;
    expect(receiver.deliveries).toBe(2);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2 });
  });

  it('a webhook without a name is named by its host: no path or query text (a token) in logs, errors or metrics', async () => {
    const port = new URL(receiver.url).port;
    const token = 'xoxTok3nPathPart';
    const url = `http://127.0.0.1:${port}/services/T0PAYOUT/B0NOTIFY/${token}?sig=QueryS3cret`;
    const w = await setUp({ webhooks: [{ url, secretFile }], statusFiles: false });
    await newBatch(w, 'B10');
    // Refused (HTTP 500), then unreachable: both errors are logged and kept as the channel's last error.
    receiver.answer = 500;
    await deliveryPass(w.dispatcher);
    await receiver.stop();
    w.clock.advance(60_000);
    await deliveryPass(w.dispatcher);
    const channel = `webhook:127.0.0.1:${port}`;
    expect(w.outcomes).toEqual([
      [channel, 'failed'],
      [channel, 'failed'],
    ]);
    const [row] = (await w.db('batch_event_deliveries').select('channel', 'last_error')) as { channel: string; last_error: string }[];
    expect(row?.channel).toBe(channel);
    expect(row?.last_error).toMatch(new RegExp(`^NOTIFY_HTTP_UNREACHABLE: ${channel} not reached`));
    const said = [...w.logLines, row?.last_error].join('\n');
    expect(said).toContain(`${channel} answered HTTP 500`);
    for (const part of [token, 'services', 'QueryS3cret', 'sig=']) expect(said).not.toContain(part);
  });

  it('a wrong signing secret is refused by the receiver, and the event stays owed', async () => {
    const other = join(join(secretFile, '..'), 'other');
    await writeFile(other, newSigningSecret(), { mode: 0o600 });
    const w = await setUp({ webhooks: [{ url: receiver.url, name: 'erp', secretFile: other }], statusFiles: false });
    await newBatch(w, 'B3');
    await deliveryPass(w.dispatcher);
    expect(receiver.forged).toBe(1);
    expect(receiver.events).toEqual([]);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
  });
});

describe('status files in the outbox', () => {
  it('a held batch: state HELD, the reason, rows and amounts by status, percent, last update', async () => {
    const w = await setUp({}, { outbox: { xlsx: true } });
    const b = await newBatch(w, 'B4', 'big.csv');
    await holdBatch(w.db, 'B4', SHORT, w.clock.now());
    await deliveryPass(w.dispatcher);
    const path = join(w.config.paths.outbox, `${outboxName(b)}.status.csv`);
    const text = (await readFile(path, 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/).slice(0, 12)).toEqual([
      'item,status,currency,value',
      'batch,,,B4',
      'file,,,big.csv',
      'state,,,HELD',
      'hold,,,INSUFFICIENT_BALANCE',
      `hold reason,,,"${SHORT.reason}"`,
      'rows,,,2',
      'rows final,,,1',
      'percent done,,,50.0',
      'rows per minute,,,',
      'estimated end,,,',
      `last update,,,${new Date(START).toISOString()}`,
    ]);
    expect(text).toContain(
      'rows by status,PAID,,1\r\namount by status,PAID,PHP,1500.5\r\nrows by status,PENDING,,1\r\namount by status,PENDING,PHP,99.95',
    );
    expect(existsSync(path.replace(/\.csv$/, '.xlsx'))).toBe(true);
  });

  it('a batch cancelled while a payout is in flight: state CANCELLED, as payoutd status shows it', async () => {
    const w = await setUp({});
    const b = await newBatch(w, 'B6', 'wrong-month.csv');
    // Claimed for a create, which may be on the wire: the cancel follows it to its end.
    await w.db('payouts').where({ batch_id: 'B6', line: 3 }).update({ state: 'CREATING' });
    await holdBatch(w.db, 'B6', SHORT, w.clock.now());
    // The cancel ends the hold (its `released` event) and records its own `cancelled` one: each rewrites the status file.
    await cancelReadyRows(w.db, 'B6', 'cancelled by an operator: wrong month', w.clock.now());
    expect(await deliveryPass(w.dispatcher), 'received, held, released, cancelled').toBe(4);
    const text = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/).slice(3, 6)).toEqual(['state,,,CANCELLED', 'hold,,,', 'hold reason,,,']);
    expect(text).toContain('rows by status,PENDING,,1');
  });
  it('a batch cancelled without a hold: its cancelled event says so, and the status file reads CANCELLED', async () => {
    const w = await setUp({});
    const b = await newBatch(w, 'B9', 'dup-run.csv');
    expect(await deliveryPass(w.dispatcher), 'received').toBe(1);
    const done = await cancelReadyRows(w.db, 'B9', 'cancelled by an operator: wrong month', w.clock.now(), 'ben');
    expect(done).toEqual({ notSubmitted: 1, claimed: 0, unknown: 0 });
    const last = (await listBatchEvents(w.db, 'B9')).at(-1);
    expect([last?.type, last?.data]).toEqual([
      'cancelled',
      { by: 'ben', reason: 'cancelled by an operator: wrong month', notSubmitted: 1, claimed: 0, unknown: 0 },
    ]);
    expect(await deliveryPass(w.dispatcher), 'cancelled').toBe(1);
    const text = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/)[3]).toBe('state,,,CANCELLED');
    // A second cancel changes nothing, and says when, by whom and why the batch was cancelled.
    await expect(cancelReadyRows(w.db, 'B9', 'cancelled by an operator: dup run', w.clock.now() + 5000, 'ann')).rejects.toThrow(
      `batch B9 was already cancelled at ${new Date(START).toISOString()} by ben (cancelled by an operator: wrong month); nothing changed`,
    );
    expect((await getBatch(w.db, 'B9'))?.cancelReason).toBe('cancelled by an operator: wrong month');
    expect((await listBatchEvents(w.db, 'B9')).map((e) => e.type)).toEqual(['received', 'cancelled']);
  });

  it('a cancel of a batch whose every row was already sent is refused: nothing recorded, the status file unchanged', async () => {
    const w = await setUp({});
    const b = await newBatch(w, 'B10', 'all-sent.csv');
    await w.db('payouts').where({ batch_id: 'B10', line: 3 }).update({ state: 'PENDING', payout_id: 'P-B10-2' });
    expect(await deliveryPass(w.dispatcher), 'received').toBe(1);
    const refused = await cancelReadyRows(w.db, 'B10', 'cancelled by an operator: wrong month', w.clock.now(), 'ben').catch(
      (err: unknown) => err as { code?: string; message?: string },
    );
    expect(refused).toMatchObject({
      code: 'BATCH_NOTHING_TO_CANCEL',
      message:
        'batch B10 has no row left to cancel: every row was already sent to the payout service (1 PENDING, 1 PAID); nothing changed and no cancel is recorded',
    });
    const after = (await getBatch(w.db, 'B10')) as BatchRecord;
    expect([after.cancelledAt, after.cancelReason]).toEqual([null, null]);
    expect((await listBatchEvents(w.db, 'B10')).map((e) => e.type)).toEqual(['received']);
    const text = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/)[3]).toBe('state,,,ACTIVE');
  });

  it('a batch cancelled with a create in flight that is then paid ends COMPLETE, not CANCELLED', async () => {
    const w = await setUp({});
    const b = await newBatch(w, 'B11', 'paid-anyway.csv');
    await w.db('payouts').where({ batch_id: 'B11', line: 3 }).update({ state: 'CREATING' });
    expect(await cancelReadyRows(w.db, 'B11', 'cancelled by an operator: wrong month', w.clock.now())).toEqual({
      notSubmitted: 0,
      claimed: 1,
      unknown: 0,
    });
    // Still followed: the cancel may yet stop it.
    expect(shownStateOf((await getBatch(w.db, 'B11')) as BatchRecord)).toBe('CANCELLED');
    await w.db('payouts').where({ batch_id: 'B11', line: 3 }).update({ state: 'PAID', payout_id: 'P-B11-2' });
    const finisher = finisherOf(w);
    await finisher.pass();
    const done = (await getBatch(w.db, 'B11')) as BatchRecord;
    expect([done.state, shownStateOf(done)]).toEqual(['COMPLETE', 'COMPLETE']);
    const completed = (await listBatchEvents(w.db, 'B11')).find((e) => e.type === 'completed');
    expect(completed?.data['shownState']).toBe('COMPLETE');
    expect(completed?.data['reason']).toBeUndefined();
    expect(await countBatchesByState(w.db)).toEqual({ COMPLETE: 1 });
    await deliveryPass(w.dispatcher);
    const text = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/)[3]).toBe('state,,,COMPLETE');
  });

  it('/metrics counts a cancelled batch under the word status shows, whatever its kept counts hold', async () => {
    const w = await setUp({});
    for (const id of ['C1', 'C2', 'C3', 'C4', 'C5']) {
      await newBatch(w, id, `${id}.csv`);
      await cancelReadyRows(w.db, id, 'cancelled by an operator: wrong month', w.clock.now());
    }
    // Counts kept with a zero NOT_SUBMITTED, counts that cannot be read, counts with rows left unsent, none kept.
    const kept: [string, string | null][] = [
      ['C1', '{"NOT_SUBMITTED":0,"PAID":2}'],
      ['C2', '{not json'],
      ['C3', '{"NOT_SUBMITTED":1,"PAID":1}'],
      ['C4', null],
      ['C5', '{"PAID":1,"NOT_SUBMITTED":0}'],
    ];
    for (const [id, counts] of kept) await w.db('batches').where({ id }).update({ state: 'COMPLETE', final_counts_json: counts });
    const shown = await Promise.all(kept.map(async ([id]) => shownStateOf((await getBatch(w.db, id)) as BatchRecord)));
    expect(shown).toEqual(['COMPLETE', 'CANCELLED', 'CANCELLED', 'CANCELLED', 'COMPLETE']);
    expect(await countBatchesByState(w.db)).toEqual({ COMPLETE: 2, CANCELLED: 3 });
  });
});

describe.skipIf(!hasOpenssl())('email through a real SMTP server (STARTTLS, login)', () => {
  const login = { user: 'payoutd', password: 'smtp-pw-Hq73Vd' };
  const smtp = useMailReceiver(login);

  it('mails each event but progress, in plain text with the totals and the outbox files; the password from a systemd credential', async () => {
    const credentials = join(smtp.certDir, 'credentials');
    await mkdir(credentials);
    await writeFile(join(credentials, 'smtp-password'), `${login.password}\n`);
    const email = {
      host: '127.0.0.1',
      port: smtp.mail.port,
      caFile: join(smtp.certDir, 'cert.pem'),
      user: login.user,
      passwordCredential: 'smtp-password',
      from: 'payoutd@example.com',
      to: ['finance@example.com', 'ops@example.com'],
    };
    const w = await setUp({ email, statusFiles: false }, {}, { CREDENTIALS_DIRECTORY: credentials });
    const b = await newBatch(w, 'B5', 'payroll.csv');
    await updateBatch(w.db, 'B5', { ackWrittenAt: w.clock.now() }, w.clock.now());
    await holdBatch(w.db, 'B5', SHORT, w.clock.now());
    await w.db.transaction((trx) => recordBatchEvent(trx, { batchId: 'B5', type: 'progress', data: {}, at: w.clock.now() }));
    await deliveryPass(w.dispatcher);
    expect(smtp.mail.mails).toHaveLength(2);
    const held = smtp.mail.mails[1];
    expect(held?.secure, 'upgraded by STARTTLS before the mail').toBe(true);
    expect(held?.user).toBe('payoutd');
    expect(held?.to).toEqual(['finance@example.com', 'ops@example.com']);
    const events = await listBatchEvents(w.db, 'B5');
    const raw = (held?.raw ?? '').replace(/=\r\n/g, '');
    expect(raw).toMatch(/Subject: payoutd: payroll.csv held: the USDT balance 10/);
    expect(raw).toContain(`Message-ID: <${events[1]?.id}@payoutd>`);
    expect(raw).toContain('Content-Type: text/plain');
    expect(raw).toContain('State: HELD');
    expect(raw).toContain('PAID: 1 row(s), 1500.5 PHP');
    expect(raw).toContain('PENDING: 1 row(s), 99.95 PHP');
    expect(raw).toContain(`${outboxName(b)}.ack.csv`);
    // statusFiles is off: no status file is written, so the mail names none (nor result files, not written yet).
    expect(outboxFilesOf(raw)).toEqual([`${outboxName(b)}.ack.csv`]);
    expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 3 });
    expect(w.logLines.filter((l) => l.includes(login.password))).toEqual([]);
  });

  /** Email settings for the test server, the password in a file. */
  async function passwordEmail(): Promise<Record<string, unknown>> {
    const passwordFile = join(smtp.certDir, 'pw');
    await writeFile(passwordFile, login.password, { mode: 0o600 });
    const to = ['f@example.com'];
    return {
      host: '127.0.0.1',
      port: smtp.mail.port,
      caFile: join(smtp.certDir, 'cert.pem'),
      user: login.user,
      passwordFile,
      from: 'p@example.com',
      to,
    };
  }

  it('an empty password file is said to be empty (SECRET_EMPTY), not a refused login; the mail waits for it', async () => {
    const email = await passwordEmail();
    await writeFile(email.passwordFile as string, ' \n');
    const w = await setUp({ email, statusFiles: false });
    await newBatch(w, 'B11', 'payroll.csv');
    expect(await deliveryPass(w.dispatcher)).toBe(1);
    expect(smtp.mail.mails).toHaveLength(0);
    const said = `SECRET_EMPTY: notify.email.passwordFile ${String(email.passwordFile)} is empty (or holds only white space)`;
    expect(w.logLines.filter((l) => l.includes(said))).not.toEqual([]);
    expect(w.logLines.filter((l) => l.includes('EAUTH'))).toEqual([]);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
    // Written, the secret is used at the next attempt.
    await writeFile(email.passwordFile as string, login.password);
    w.clock.advance(3_600_000);
    expect(await deliveryPass(w.dispatcher)).toBe(1);
    expect(smtp.mail.mails).toHaveLength(1);
  });

  it('a file refused whole names only its ack in the mail: no result, summary or status file is written for it', async () => {
    const w = await setUp({ email: await passwordEmail(), statusFiles: false });
    const b = receivedBatch(
      {
        id: 'B8',
        fileName: 'invoice.pdf',
        storedPath: '/claimed/B8',
        controlPath: null,
        sha256: 'B8'.padEnd(64, '0'),
        size: 15,
        mtimeMs: 1,
        doneMarker: false,
      },
      w.clock.now(),
    );
    // As intake leaves a file refused whole: REJECTED with no rows, its ack written and nothing else.
    await insertBatch(w.db, { ...b, state: 'REJECTED', rowCount: 0, ackWrittenAt: w.clock.now() });
    await w.db.transaction((trx) =>
      recordBatchEvent(trx, { batchId: 'B8', type: 'rejected', data: { reason: 'NOT_CSV' }, at: w.clock.now() }),
    );
    expect(await deliveryPass(w.dispatcher)).toBe(2);
    const raws = smtp.mail.mails.map((m) => m.raw.replace(/=\r\n/g, ''));
    expect(raws.some((r) => /Subject: payoutd: invoice.pdf rejected/.test(r))).toBe(true);
    for (const raw of raws) expect(outboxFilesOf(raw)).toEqual([`${outboxName(b)}.ack.csv`]);
  });

  it('a batch still being read shows no percent done: the status file leaves it empty, the mail says none', async () => {
    const w = await setUp({ email: await passwordEmail() });
    const b = receivedBatch(
      {
        id: 'B10',
        fileName: 'big.csv',
        storedPath: '/claimed/B10',
        controlPath: null,
        sha256: 'B10'.padEnd(64, '0'),
        size: 9,
        mtimeMs: 1,
        doneMarker: false,
      },
      w.clock.now(),
    );
    await insertBatch(w.db, { ...b, state: 'VALIDATING' });
    await deliveryPass(w.dispatcher);
    const text = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
    expect(text.split(/\r?\n/).slice(3, 9)).toEqual([
      'state,,,VALIDATING',
      'hold,,,',
      'hold reason,,,',
      'rows,,,0',
      'rows final,,,0',
      'percent done,,,',
    ]);
    const raw = (smtp.mail.mails[0]?.raw ?? '').replace(/=\r\n/g, '');
    expect(raw).toMatch(/^Rows: 0, final: 0\r?$/m);
    expect(raw).not.toContain('100.0%');
  });

  /** A webhook receiver started, its secret in `<name>-secret` beside the certificate. */
  async function webhookReceiver(name: string): Promise<{ receiver: EventReceiver; secretFile: string }> {
    const secret = newSigningSecret();
    const receiver = new EventReceiver(secret);
    const secretFile = join(smtp.certDir, `${name}-secret`);
    await writeFile(secretFile, `${secret}\n`, { mode: 0o600 });
    await receiver.start();
    return { receiver, secretFile };
  }

  it('a batch cancelled while a payout was in flight ends CANCELLED: its final mail, webhook and status file say so', async () => {
    const { receiver, secretFile } = await webhookReceiver('erp');
    try {
      const w = await setUp({ email: await passwordEmail(), webhooks: [{ url: receiver.url, name: 'erp', secretFile }] });
      const b = await newBatch(w, 'B7', 'wrong-month.csv');
      await w.db('payouts').where({ batch_id: 'B7', line: 3 }).update({ state: 'CREATING' });
      await cancelReadyRows(w.db, 'B7', 'cancelled by an operator: wrong month', w.clock.now());
      // The create in flight never left (its fence put it back READY): the cancel stops it; the finisher
      // writes the result files and records the final notice.
      await w.db('payouts').where({ batch_id: 'B7', line: 3 }).update({ state: 'READY' });
      expect(await cancelReturnedRows(w.db, w.clock.now())).toBe(1);
      const finisher = finisherOf(w);
      await finisher.pass();
      expect((await getBatch(w.db, 'B7'))?.state).toBe('COMPLETE');
      await deliveryPass(w.dispatcher);

      // Receivers keep the event type they know; the data says how the batch ended.
      const completed = receiver.events.find((e) => e.type === 'batch.completed');
      expect(completed?.data).toMatchObject({ shownState: 'CANCELLED', reason: 'cancelled by an operator: wrong month' });
      const last = smtp.mail.mails.at(-1);
      // Unfolded: the subject is folded onto a second line.
      const raw = (last?.raw ?? '').replace(/=\r\n/g, '').replace(/\r\n /g, ' ');
      expect(raw).toMatch(/Subject: payoutd: wrong-month.csv CANCELLED: cancelled by an operator: wrong month/);
      expect(raw).toContain('State: CANCELLED');
      // Its result files are written and status files are on; its ack was never recorded written here.
      expect(outboxFilesOf((last?.raw ?? '').replace(/=\r\n/g, ''))).toEqual(
        ['status', 'result', 'summary'].map((k) => `${outboxName(b)}.${k}.csv`),
      );
      expect(raw).not.toMatch(/COMPLETE|completed/);
      const status = (await readFile(join(w.config.paths.outbox, `${outboxName(b)}.status.csv`), 'utf8')).replace(/^\uFEFF/, '');
      expect(status.split(/\r?\n/)[3]).toBe('state,,,CANCELLED');
      // The same word payoutd status shows for it.
      expect(shownStateOf((await getBatch(w.db, 'B7')) as BatchRecord)).toBe('CANCELLED');
    } finally {
      await receiver.stop();
    }
  });

  it('a webhook held by a slow receiver holds back no mail, of the same event or a later one', async () => {
    const { receiver: chat, secretFile } = await webhookReceiver('chat');
    try {
      const w = await setUp({
        email: await passwordEmail(),
        webhooks: [{ url: chat.url, name: 'chat', secretFile }],
        statusFiles: false,
        timeoutMs: 60_000,
      });
      await newBatch(w, 'B15', 'payroll.csv');
      const release = chat.holdNextDelivery();
      const first = deliveryPass(w.dispatcher);
      await waitFor(() => chat.held === 1, 'the webhook delivery held at the receiver');
      await waitFor(() => smtp.mail.mails.length === 1, 'the mail of the same event, sent while the webhook is held');
      // A later event goes out by mail too, the webhook still held (passes meanwhile leave the busy webhook to itself).
      await holdBatch(w.db, 'B15', SHORT, w.clock.now());
      await waitFor(async () => {
        await deliveryPass(w.dispatcher);
        return smtp.mail.mails.length === 2;
      }, 'the mail of the later event, sent while the webhook is held');
      expect(chat.events).toEqual([]);
      release();
      await first;
      await deliveryPass(w.dispatcher);
      expect(chat.types()).toEqual(['batch.received', 'batch.held']);
      const ids = (await listBatchEvents(w.db, 'B15')).map((e) => e.id);
      expect(smtp.mail.mails.map((m) => /Message-ID: <(evt_\w+)@payoutd>/.exec(m.raw)?.[1])).toEqual(ids);
      expect(chat.deliveries, 'each event once to each channel').toBe(2);
      expect(await countEventsByDelivery(w.db)).toEqual({ DELIVERED: 2 });
    } finally {
      await chat.stop();
    }
  });

  it('a wrong password: the mail is not sent, and the event stays owed', async () => {
    const passwordFile = join(smtp.certDir, 'pw');
    await writeFile(passwordFile, 'not-the-password', { mode: 0o600 });
    const email = {
      host: '127.0.0.1',
      port: smtp.mail.port,
      caFile: join(smtp.certDir, 'cert.pem'),
      user: 'payoutd',
      passwordFile,
      from: 'p@example.com',
      to: ['f@example.com'],
    };
    const w = await setUp({ email, statusFiles: false });
    await newBatch(w, 'B6');
    await deliveryPass(w.dispatcher);
    expect(smtp.mail.mails).toEqual([]);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
    expect(w.outcomes).toEqual([['email', 'failed']]);
  });
});

describe('email to an SMTP server that stalls after EHLO', () => {
  let server: TcpServer;
  let sockets: Socket[];
  let port: number;

  beforeEach(async () => {
    sockets = [];
    // Greets, answers EHLO (offering STARTTLS), then never answers again.
    server = createTcpServer((socket) => {
      sockets.push(socket);
      socket.write('220 stall.example ESMTP\r\n');
      socket.on('data', (chunk: Buffer) => {
        if (/^EHLO /i.test(chunk.toString())) socket.write('250-stall.example\r\n250 STARTTLS\r\n');
      });
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const email = (): Record<string, unknown> => ({ host: '127.0.0.1', port, from: 'p@example.com', to: ['f@example.com'] });

  /** The pass, or 'still running' when it has not ended within `ms` (it is awaited after the server lets go). */
  async function passWithin(w: World, ms: number, signal?: AbortSignal): Promise<number | 'still running'> {
    const pass = deliveryPass(w.dispatcher, signal);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)));
    const first = await Promise.race([pass, late]);
    clearTimeout(timer);
    if (first === 'still running') {
      for (const s of sockets) s.destroy();
      await pass.catch(() => undefined);
    }
    return first;
  }

  it('an attempt ends after notify.timeoutMs; the event stays owed', async () => {
    const w = await setUp({ email: email(), timeoutMs: 300, statusFiles: false });
    await newBatch(w, 'B13');
    expect(await passWithin(w, 5_000)).toBe(1);
    expect(w.outcomes).toEqual([['email', 'failed']]);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
  });

  it('the daemon stopping ends the attempt at once, however long notify.timeoutMs is', async () => {
    const w = await setUp({ email: email(), timeoutMs: 600_000, statusFiles: false });
    await newBatch(w, 'B14');
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 300);
    expect(await passWithin(w, 5_000, stop.signal)).toBe(1);
    expect(await countEventsByDelivery(w.db)).toEqual({ PENDING: 1 });
  });
});

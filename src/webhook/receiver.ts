/**
 * WebhookReceiver: the merchant end of spec 6. Verifies each delivery over the bytes received, remembers its
 * eventId and marks the payout due for a query in one transaction, then answers 2xx. It never changes a payout's state; one
 * that contradicts a row already final, or names another payout under one of our references, makes a query of
 * the service owed, and the row is kept out of retry files until the service has answered.
 */
import { readFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { safeError } from '../log/logger.js';
import { hmacKeyBytes } from '../signing/signatures.js';
import {
  type Database,
  type FinalRowNamed,
  type PayoutNamed,
  type RowHoldingPayout,
  finalRowsNamed,
  forgetWebhookEventsBefore,
  markServiceCheck,
  pollSoon,
  reaskUnknownOfReference,
  recordWebhookEvent,
  renewServiceCheck,
  rowsHoldingOtherPayout,
  triedRowsNamed,
} from '../store/index.js';
import { CHECKED_FINAL_STATES, checkOwedNote } from '../domain/service-check.js';
import { WebhookConfigError, WebhookStartError } from './errors.js';
import { parseWebhookEvent, type PayoutUpdatedEvent } from './event.js';
import { answer, readBody, requestPath, TOO_LARGE } from './http.js';
import { NonceWindow } from '../signing/nonces.js';
import { resolveReceiverOptions, type ResolvedReceiverOptions, type WebhookReceiverOptions, type WebhookVerdict } from './options.js';
import { verifyDelivery } from './verify.js';

/**
 * The default follow-up of new events, on `db` (the transaction recording them): make the payout's PENDING row due
 * for a query now. A row already final stays as recorded (spec 3 shows no move out of PAID or CANCELLED); an event
 * saying otherwise, or naming another payout under one of our references, makes a query of the service owed (the
 * poller asks it, src/poll/checks.ts): the row stays out of retry files until the service has answered. A row of
 * the event's reference without a payout after a create of it was tried may be that payout's: it is asked about by
 * reference before anything is sent for it (src/store/unfollowed-payouts.ts). True when the poller has something to
 * do now (woken once the transaction is committed, so it sees what was written).
 */
export async function followUpNamed(db: Database, clock: Clock, logger: Logger, n: PayoutNamed): Promise<boolean> {
  // Without a reference the receiver has said the payout waits for its regular poll.
  if (n.merchantReferenceId === null) return false;
  const fields = { eventId: n.eventId, payoutId: n.payoutId, merchantReferenceId: n.merchantReferenceId, status: n.status };
  const now = clock.now();
  // First: on PostgreSQL a reconcile recording its answer holds the row until it commits, and what it made of the
  // row (final, say) is then found below; asked after those, such a row would be missed by every step.
  const reasked = await reaskUnknownOfReference(db, n.merchantReferenceId, now);
  if (reasked > 0) {
    logger.info(
      fields,
      'webhook accepted: a create under this reference awaits its outcome; its reference is asked again at the next ' +
        'submit pass, as an answer already on its way may be older than this event',
    );
  }
  // Before pollSoon, which finds only PENDING rows: these rows hold no payout, and a create's answer being recorded
  // holds the row until it commits (what it made of the row is then found below).
  const tried = await triedRowsNamed(db, { ...n, merchantReferenceId: n.merchantReferenceId, status: reportedOf(n) }, now);
  if (tried.unknown > 0) {
    logger.info(
      fields,
      'webhook accepted: a row of this reference without a payout had a create tried; it is not created again before ' +
        'its reference is asked at the next submit pass',
    );
  }
  for (const row of tried.ended) {
    logger.error(
      { ...fields, batchId: row.batchId, line: row.line },
      `a payout.updated event named a payout under the reference of a row recorded ${row.state} without a payout after a ` +
        'create of it was tried; the payout service may have paid it: payoutd asks it by reference, and the row stays ' +
        'out of retry files',
    );
  }
  // The rows following the payout are still looked at: another row of the reference asked about must not hide
  // that the payout's own row was recorded otherwise.
  let wake = tried.ended.length > 0;
  if ((await pollSoon(db, [n], now)) > 0) {
    logger.info(fields, 'webhook accepted: payout due for a query');
    return true;
  }
  const final = await finalRowsNamed(db, [n]);
  for (const row of final) wake = (await finalRowNamed(db, logger, row, n, now)) || wake;
  // A row asked about above may be the payout's own: rows holding another payout are not told of it as a second one.
  if (final.length === 0 && reasked + tried.unknown + tried.ended.length === 0) {
    const others = await rowsHoldingOtherPayout(db, n.merchantReferenceId, n.payoutId);
    if (others.length === 0) logger.info(fields, 'webhook accepted: no PENDING row of this payout here; nothing made due');
    for (const row of others) wake = (await otherPayoutNamed(db, logger, row, n, now)) || wake;
  }
  return wake;
}

/** The event's status as notes and logs write it. */
function reportedOf(event: PayoutNamed): string {
  return event.status ?? 'no status';
}

/**
 * A final row a new event named: nothing to do if the event agrees; else an ERROR, and a query of the payout owed
 * (the event's word never moves the row). True when a query was made owed.
 */
async function finalRowNamed(db: Database, logger: Logger, row: FinalRowNamed, event: PayoutNamed, now: number): Promise<boolean> {
  const reported = event.status ?? null;
  const fields = { batchId: row.batchId, line: row.line, merchantReferenceId: row.merchantReferenceId, payoutId: row.payoutId };
  if (reported === null || reported === row.state || !CHECKED_FINAL_STATES.includes(row.state)) {
    // A check owed of the row may have an answer on its way that is older than this event: asked again instead.
    if (await renewServiceCheck(db, row, now)) {
      logger.info(
        { ...fields, eventId: event.eventId, state: row.state, status: reported },
        'webhook accepted: a check of this row is owed; it is asked again, as an answer already on its way may be older than this event',
      );
      return true;
    }
    // A REJECTED row's payout was never counted as its own (src/submit/outcome.ts): what it became changes nothing.
    logger.info(
      { ...fields, eventId: event.eventId, state: row.state, status: reported },
      'webhook accepted: the row is already final; nothing to do',
    );
    return false;
  }
  logger.error(
    { ...fields, eventId: event.eventId, recordedState: row.state, reportedStatus: reported },
    `a payout.updated event reports ${reported} for a payout recorded ${row.state}; the row stays ${row.state} and out of retry files ` +
      'while payoutd asks the payout service for this payout',
  );
  const note = checkOwedNote('PAYOUT', row, { payoutId: row.payoutId, status: reported });
  return markServiceCheck(db, row, 'PAYOUT', note, now);
}

/**
 * A row holding the event's reference with another payout: the service may hold a second payout for one of our
 * references. An ERROR naming both, and a query of the reference owed. True when it was made owed.
 */
async function otherPayoutNamed(db: Database, logger: Logger, row: RowHoldingPayout, event: PayoutNamed, now: number): Promise<boolean> {
  logger.error(
    {
      batchId: row.batchId,
      line: row.line,
      merchantReferenceId: row.merchantReferenceId,
      payoutId: event.payoutId,
      rowPayoutId: row.payoutId,
      state: row.state,
      eventId: event.eventId,
      status: event.status,
    },
    `a payout.updated event names payout ${event.payoutId} under reference ${row.merchantReferenceId}, whose row holds payout ` +
      `${row.payoutId}: the service may hold a second payout for this reference; payoutd asks the payout service for the ` +
      'payouts of this reference',
  );
  const note = checkOwedNote('REFERENCE', row, { payoutId: event.payoutId, status: reportedOf(event) });
  return markServiceCheck(db, row, 'REFERENCE', note, now);
}

const ACK = { received: true } as const;
const DAY_MS = 86_400_000;
const FORGET_EVERY_MS = 3_600_000;

export class WebhookReceiver {
  private readonly o: ResolvedReceiverOptions;
  private readonly key: Buffer;
  private readonly nonces: NonceWindow;
  /** Runs inside the transaction recording the event; true when the poller should be woken after it commits. */
  private readonly followUp: (named: PayoutNamed, trx: Database) => Promise<boolean | void> | boolean | void;
  private readonly inFlight = new Set<Promise<void>>();
  private server: Server | null = null;
  private stopping = false;
  private boundPort: number | null = null;
  private lastForgetAt: number | null = null;

  constructor(private readonly deps: WebhookReceiverOptions) {
    this.o = resolveReceiverOptions(deps);
    try {
      this.key = hmacKeyBytes(this.o.secret, this.o.keyEncoding);
    } catch {
      // hmacKeyBytes names no secret either; restated under the option's name.
      throw new WebhookConfigError('WEBHOOK_CONFIG_INVALID', `\`webhook.secret\` is not valid ${this.o.keyEncoding} text`);
    }
    this.nonces = new NonceWindow(this.o.nonceWindowSeconds * 1000, this.o.nonceCapacity);
    this.followUp = deps.onPayoutUpdated ?? ((named, trx) => followUpNamed(trx, deps.clock, deps.logger, named));
  }

  /** The bound port (after start). */
  get port(): number | null {
    return this.boundPort;
  }

  async start(): Promise<{ url: string }> {
    if (this.server) throw new WebhookStartError('WEBHOOK_ALREADY_STARTED', 'the webhook receiver is already running');
    const { host, port, path, tls, requestTimeoutMs } = this.o;
    const serverOptions: ServerOptions = {
      requestTimeout: requestTimeoutMs,
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, requestTimeoutMs),
      keepAliveTimeout: 5_000,
    };
    const handler = (req: IncomingMessage, res: ServerResponse): void => this.onRequest(req, res);
    let server: Server;
    if (tls) {
      const cert = await readTlsFile('certFile', tls.certFile);
      const key = await readTlsFile('keyFile', tls.keyFile);
      try {
        server = createHttpsServer({ ...serverOptions, cert, key }, handler);
      } catch (err) {
        // OpenSSL's reason ("unsupported", "key values mismatch") carries no key material.
        throw new WebhookStartError('WEBHOOK_TLS_INVALID', `webhook.tls: certificate or key unusable (${(err as Error).message})`);
      }
    } else {
      server = createHttpServer(serverOptions, handler);
    }
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        reject(new WebhookStartError('WEBHOOK_LISTEN_FAILED', `cannot listen on ${host}:${port}: ${err.code ?? err.message}`));
      };
      server.once('error', onError);
      server.listen(port, host, () => {
        server.off('error', onError);
        resolve();
      });
    });
    server.on('error', (err) => this.deps.logger.error({ err: safeError(err) }, 'webhook server error'));
    this.server = server;
    this.stopping = false;
    this.boundPort = (server.address() as AddressInfo).port;
    const url = `${tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${this.boundPort}${path}`;
    this.deps.logger.info({ url, tls: tls !== null }, 'webhook receiver listening');
    return { url };
  }

  /** Stops listening; work in flight gets `stopGraceMs`, then every socket is closed. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = null;
    this.stopping = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await within(Promise.allSettled([...this.inFlight]), this.o.stopGraceMs);
    server.closeAllConnections();
    await closed;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    // While stopping, each answer also ends its connection.
    if (this.stopping) res.setHeader('Connection', 'close');
    const task = this.handle(req, res).catch((err: unknown) => {
      this.verdict('error');
      this.deps.logger.error({ err: safeError(err) }, 'webhook request failed');
      answer(res, 500, { error: 'internal error' });
    });
    this.inFlight.add(task);
    void task.finally(() => this.inFlight.delete(task));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { logger, clock } = this.deps;
    const path = requestPath(req.url);
    if (path !== this.o.path) {
      answer(res, 404, { error: 'not found' });
      return;
    }
    if (req.method !== 'POST') {
      answer(res, 405, { error: 'method not allowed' }, { Allow: 'POST' });
      return;
    }
    let raw: Buffer | typeof TOO_LARGE;
    try {
      raw = await readBody(req, this.o.maxBodyBytes);
    } catch {
      // The sender went away mid-body: there is no one to answer; it will retry.
      logger.debug({ remote: req.socket.remoteAddress }, 'webhook request aborted by the client');
      return;
    }
    if (raw === TOO_LARGE) {
      this.refuse(req, 'too_large', `body over ${this.o.maxBodyBytes} bytes`);
      answer(res, 413, { error: 'payload too large' }, { Connection: 'close' });
      return;
    }
    const bodyText = raw.toString('utf8');
    const now = clock.now();
    const check = verifyDelivery(
      { path: this.o.signedPath ?? path, bodyText, headers: req.headers },
      this.key,
      {
        canonical: this.o.canonicalJson,
        timestampSkewSeconds: this.o.timestampSkewSeconds,
        headers: this.o.headers,
        timestampUnit: this.o.timestampUnit,
        stringToSign: this.o.stringToSign,
      },
      now,
    );
    if (!check.ok) {
      this.refuse(req, check.verdict, check.reason);
      answer(res, 401, { error: 'unauthorized' });
      return;
    }
    // Checked and recorded in the same tick, so two concurrent copies cannot both pass.
    if (this.nonces.has(check.nonce, now)) {
      this.refuse(req, 'replayed', 'X-NONCE already used within the window');
      answer(res, 401, { error: 'unauthorized' });
      return;
    }
    this.nonces.record(check.nonce, now);

    const event = parseWebhookEvent(bodyText);
    if (event.kind === 'malformed') {
      this.refuse(req, 'malformed', event.reason);
      answer(res, 400, { error: 'malformed event' });
      return;
    }
    if (event.kind === 'other') {
      this.verdict('unknown_event');
      logger.info({ event: event.event, eventId: event.eventId }, 'webhook event kind not handled; acknowledged');
      answer(res, 200, ACK);
      return;
    }
    let recorded: { first: boolean; wake: boolean };
    try {
      recorded = await this.recordAndFollowUp(event, now);
    } catch (err) {
      // Neither recorded nor followed up: not acknowledged, so the sender delivers it again later.
      this.verdict('error');
      logger.error(
        { err: safeError(err), eventId: event.eventId, payoutId: event.payoutId },
        'webhook event could not be recorded and followed up; answered 500',
      );
      answer(res, 500, { error: 'internal error' });
      return;
    }
    if (!recorded.first) {
      this.verdict('duplicate');
      logger.info({ eventId: event.eventId, payoutId: event.payoutId }, 'webhook duplicate: already recorded; acknowledged');
      answer(res, 200, ACK);
      return;
    }
    this.verdict('accepted');
    answer(res, 200, ACK);
    if (recorded.wake) this.deps.wake?.();
    await this.forgetOldEvents(now);
  }

  /**
   * Records a new event and runs its follow-up in one transaction, before the answer: an event answered 200 is
   * followed up, and one whose follow-up failed is not recorded, so the sender's retry is not taken as a duplicate.
   */
  private async recordAndFollowUp(event: PayoutUpdatedEvent, now: number): Promise<{ first: boolean; wake: boolean }> {
    const { db, logger } = this.deps;
    const named = {
      payoutId: event.payoutId,
      merchantReferenceId: event.merchantReferenceId,
      status: event.status,
      eventId: event.eventId,
    };
    const recorded = await recordWebhookEvent(db, event, now, async (trx) => {
      // A payout is found by its reference (see pollSoon): without one, the event cannot hasten its query. With one,
      // the follow-up says what it did.
      if (event.merchantReferenceId === null)
        logger.info(named, 'webhook accepted: it names no merchantReferenceId, so the payout waits for its regular poll');
      else logger.debug(named, 'webhook accepted');
      return (await this.followUp(named, trx)) === true;
    });
    return recorded === null ? { first: false, wake: false } : { first: true, wake: recorded.followedUp };
  }

  /** At most hourly, and only when events arrive: the retention is days, so the timing is loose. */
  private async forgetOldEvents(now: number): Promise<void> {
    if (this.lastForgetAt !== null && now - this.lastForgetAt < FORGET_EVERY_MS) return;
    this.lastForgetAt = now;
    try {
      const n = await forgetWebhookEventsBefore(this.deps.db, now - this.o.eventRetentionDays * DAY_MS);
      if (n > 0) this.deps.logger.info({ forgotten: n, retentionDays: this.o.eventRetentionDays }, 'old webhook event ids forgotten');
    } catch (err) {
      this.deps.logger.warn({ err: safeError(err) }, 'could not forget old webhook event ids; will try again later');
    }
  }

  /** One log line per refused delivery: what failed, never a header value or the secret. */
  private refuse(req: IncomingMessage, verdict: WebhookVerdict, reason: string): void {
    this.verdict(verdict);
    this.deps.logger.warn({ verdict, reason, remote: req.socket.remoteAddress }, 'webhook delivery refused');
  }

  private verdict(v: WebhookVerdict): void {
    try {
      this.deps.onVerdict?.(v);
    } catch {
      // A metrics hook must never turn a delivery into an error.
    }
  }
}

async function readTlsFile(option: 'certFile' | 'keyFile', path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    throw new WebhookStartError(
      'WEBHOOK_TLS_UNREADABLE',
      `cannot read webhook.tls.${option} ${path}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
}

/** Resolves when `p` settles or after `ms`, whichever is first. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  try {
    await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

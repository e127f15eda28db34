/**
 * Shared setup for the webhook receiver tests: a real SQLite file per
 * receiver, a pino logger whose lines are captured, a signer that builds
 * deliveries exactly as the contract says (to forge or to replay them), a
 * plain node:http sender, a recording proxy that sits between the sandbox
 * and the receiver, and a PENDING payout row to watch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, createServer, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import type { DestinationStream } from 'pino';
import { ManualClock } from '../../src/domain/clock.js';
import { canonicalStringify, minifyBodyText } from '../../src/json/index.js';
import { createLogger } from '../../src/log/index.js';
import { signHmac, webhookStringToSign } from '../../src/signing/index.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import type { PayoutNamed } from '../../src/store/settlement.js';
import { WebhookReceiver, type WebhookReceiverOptions, type WebhookVerdict } from '../../src/webhook/index.js';
import { openTestDatabase } from '../support/database.js';

export const SECRET = 'whsec-Zq8LmX3vR7tKp2Nw';
export const PATH = '/payoutd/webhook';
export const START_MS = Date.UTC(2026, 0, 1, 12);

// ---- cleanup -------------------------------------------------------------------

const closers: (() => Promise<void>)[] = [];

/** Registers a cleanup, run in reverse order by closeAll (afterEach). */
export function onClose(fn: () => Promise<void>): void {
  closers.push(fn);
}

export async function closeAll(): Promise<void> {
  for (const fn of closers.splice(0).reverse()) await fn();
}

// ---- database and logs -----------------------------------------------------------

export async function tempDb(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), 'payoutd-webhook-'));
  const db = await openTestDatabase(dir);
  onClose(async () => {
    await closeDatabase(db);
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

export interface Captured {
  lines: string[];
  stream: DestinationStream;
}

export function captureLines(): Captured {
  const lines: string[] = [];
  return { lines, stream: { write: (s: string) => void lines.push(s) } };
}

export function parsedLines(c: Captured): Record<string, unknown>[] {
  return c.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

// ---- receiver --------------------------------------------------------------------

export interface Harness {
  receiver: WebhookReceiver;
  url: string;
  db: Database;
  clock: ManualClock;
  logs: Captured;
  verdicts: WebhookVerdict[];
  /** Payout ids handed to onPayoutUpdated, in order (when the default follow-up is not used). */
  followUps: string[][];
}

export interface HarnessOptions extends Partial<Omit<WebhookReceiverOptions, 'clock' | 'logger' | 'db'>> {
  clock?: ManualClock;
  db?: Database;
  /** Keep the default follow-up (pollSoon + wake) instead of recording calls. */
  defaultFollowUp?: boolean;
}

export async function startReceiver(o: HarnessOptions = {}): Promise<Harness> {
  const { clock = new ManualClock(START_MS), db: givenDb, defaultFollowUp = false, ...rest } = o;
  const db = givenDb ?? (await tempDb());
  const logs = captureLines();
  const verdicts: WebhookVerdict[] = [];
  const followUps: string[][] = [];
  const receiver = new WebhookReceiver({
    host: '127.0.0.1',
    port: 0,
    secret: SECRET,
    clock,
    db,
    logger: createLogger('debug', logs.stream),
    onVerdict: (v) => verdicts.push(v),
    ...(defaultFollowUp ? {} : { onPayoutUpdated: (named: PayoutNamed) => void followUps.push([named.payoutId]) }),
    ...rest,
  });
  const { url } = await receiver.start();
  onClose(() => receiver.stop());
  return { receiver, url, db, clock, logs, verdicts, followUps };
}

// ---- signing deliveries ---------------------------------------------------------------

export interface SignOptions {
  secret?: string;
  /** The path put in the string to sign. */
  path?: string;
  timestamp?: string;
  nonce?: string;
}

/** Headers of a delivery of `body`, signed as the contract says (over the minified body). */
export function signedHeaders(body: string, clock: ManualClock, o: SignOptions = {}): Record<string, string> {
  const timestamp = o.timestamp ?? String(Math.floor(clock.now() / 1000));
  const nonce = o.nonce ?? randomUUID().replaceAll('-', '');
  const minifiedBody = minifyBodyText(body);
  const signature = signHmac(
    Buffer.from(o.secret ?? SECRET, 'utf8'),
    webhookStringToSign({ path: o.path ?? PATH, minifiedBody, timestamp, nonce }),
  );
  signaturesSent.push(signature);
  return { 'Content-Type': 'application/json', 'X-TIMESTAMP': timestamp, 'X-NONCE': nonce, 'X-SIGNATURE': signature };
}

/** Every signature this file's signer produced (for the log leak check). */
export const signaturesSent: string[] = [];

export function eventBody(
  over: { event?: string; eventId?: string; payoutId?: string; status?: string; merchantReferenceId?: string } = {},
): string {
  return canonicalStringify({
    event: over.event ?? 'payout.updated',
    eventId: over.eventId ?? `EV${randomUUID().replaceAll('-', '')}`,
    timestamp: new Date(START_MS).toISOString(),
    data: {
      payoutId: over.payoutId ?? `PO${randomUUID().slice(0, 8)}`,
      merchantReferenceId: over.merchantReferenceId ?? `REF-${randomUUID().slice(0, 8)}`,
      status: over.status ?? 'PAID',
      completeTime: new Date(START_MS).toISOString(),
    },
  });
}

// ---- sending -------------------------------------------------------------------------

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

export interface SendOptions {
  method?: string;
  /** Path to send to, instead of the URL's. */
  path?: string;
  headers?: OutgoingHttpHeaders;
  body?: string | Buffer;
  /** Send the body in chunks without Content-Length. */
  chunked?: boolean;
}

/** One request over node:http (no keep-alive, so every test ends with no sockets open). */
export function send(url: string, o: SendOptions = {}): Promise<Answer> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body, 'utf8');
    const headers: OutgoingHttpHeaders = { ...o.headers, Connection: 'close' };
    if (body !== undefined && !o.chunked) headers['Content-Length'] = String(body.length);
    const req = httpRequest(
      { host: target.hostname, port: target.port, method: o.method ?? 'POST', path: o.path ?? target.pathname, headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (body !== undefined && o.chunked) {
      for (let i = 0; i < body.length; i += 8192) req.write(body.subarray(i, i + 8192));
      req.end();
    } else {
      req.end(body);
    }
  });
}

// ---- a recording proxy between the sandbox and the receiver ------------------------------

export interface Recorded {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What the receiver answered. */
  status: number;
}

export interface Recorder {
  /** The URL to register as the merchant's webhookUrl (same path as the receiver's). */
  url: string;
  seen: Recorded[];
  /** Called when the receiver's answer came back, before it is relayed. */
  onAnswer?: (r: Recorded) => void;
}

/** Forwards every request to `targetUrl`'s origin unchanged (same path, headers, body) and records the exchange. */
export async function startRecorder(targetUrl: string): Promise<Recorder> {
  const target = new URL(targetUrl);
  const recorder: Recorder = { url: '', seen: [] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string' && k !== 'host' && k !== 'connection') headers[k] = v;
      send(`${target.origin}${req.url ?? '/'}`, { method: req.method, headers, body }).then(
        (a) => {
          const r = { path: req.url ?? '', headers, body, status: a.status };
          recorder.seen.push(r);
          recorder.onAnswer?.(r);
          res.writeHead(a.status, { 'Content-Type': 'application/json' });
          res.end(a.text);
        },
        () => {
          res.writeHead(502);
          res.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  recorder.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${target.pathname}`;
  onClose(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return recorder;
}

// ---- payout rows ------------------------------------------------------------------------

let batchSeq = 0;

/** A PENDING payout row (and its batch) with this payoutId, next poll far away. */
export async function insertPendingRow(db: Database, payoutId: string, merchantReferenceId: string, nextPollAt: number): Promise<void> {
  const batchId = `B${++batchSeq}-${randomUUID().slice(0, 8)}`;
  await db('batches').insert({
    id: batchId,
    file_name: 'payouts.csv',
    stored_path: '/tmp/payouts.csv',
    sha256: 'a'.repeat(64),
    size: 1,
    mtime_ms: START_MS,
    state: 'ACTIVE',
    received_at: START_MS,
    updated_at: START_MS,
  });
  await db('payouts').insert({
    batch_id: batchId,
    line: 2,
    merchant_reference_id: merchantReferenceId,
    state: 'PENDING',
    payout_id: payoutId,
    created_at_ms: START_MS,
    next_poll_at: nextPollAt,
    updated_at: START_MS,
  });
}

export async function payoutRow(
  db: Database,
  payoutId: string,
): Promise<{ state: string; next_poll_at: number; service_status: string | null }> {
  return (await db('payouts').where({ payout_id: payoutId }).first()) as {
    state: string;
    next_poll_at: number;
    service_status: string | null;
  };
}

export async function eventRows(
  db: Database,
): Promise<{ event_id: string; payout_id: string; status: string; merchant_reference_id: string }[]> {
  return (await db('webhook_events').orderBy('received_at').select()) as {
    event_id: string;
    payout_id: string;
    status: string;
    merchant_reference_id: string;
  }[];
}

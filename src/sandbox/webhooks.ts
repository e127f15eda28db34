/**
 * `payout.updated` delivery (spec 6), at least once: retried on the schedule with the same eventId and body, a
 * fresh nonce and timestamp, signed as the `webhook` options say. Faults drop, duplicate or delay events;
 * deliveries run with bounded concurrency.
 */
import { randomUUID } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import pLimit from 'p-limit';
import type { Clock } from '../domain/clock.js';
import type { PayoutStatus } from '../domain/payout.js';
import { canonicalStringify, type CanonicalOptions } from '../json/canonical.js';
import { hmacKeyBytes, signHmac, webhookStringToSign, type HmacKeyEncoding } from '../signing/signatures.js';
import { webhookTimestamp } from '../signing/webhook-scheme.js';
import type { SandboxLogger } from './logger.js';
import type { SandboxFaults, WebhookOptions } from './options.js';
import type { Random } from './random.js';
import type { SandboxStats } from './stats.js';
import type { TimerSet } from './timers.js';

/** Where a merchant's events go and the key that signs them. */
export interface WebhookTarget {
  merchantCode: string;
  url: string;
  /** URL path, the `path` of the webhook string to sign. */
  path: string;
  /** The merchant's webhook secret as key bytes (`webhook.keyEncoding`). */
  key: Buffer;
}

export interface PayoutUpdate {
  payoutId: string;
  merchantReferenceId: string;
  status: PayoutStatus;
  completeTime: string | null;
}

interface Delivery {
  target: WebhookTarget;
  eventId: string;
  body: string;
  /** Retries done so far. */
  retries: number;
}

export interface WebhookDeps {
  clock: Clock;
  random: Random;
  timers: TimerSet;
  stats: SandboxStats;
  logger: SandboxLogger;
  canonical: CanonicalOptions;
  options: WebhookOptions;
  faults: () => SandboxFaults;
}

/** Deliveries in flight at once. */
const CONCURRENCY = 64;

export function webhookTarget(merchantCode: string, url: string, secret: string, keyEncoding: HmacKeyEncoding): WebhookTarget {
  return { merchantCode, url, path: new URL(url).pathname, key: hmacKeyBytes(secret, keyEncoding) };
}

class DeliveryTimeout extends Error {
  override readonly name = 'DeliveryTimeout';
}

/** One POST; resolves with the status once the (drained) answer ended, rejects on error or deadline. */
function post(url: string, headers: Record<string, string>, body: string, agents: Agents, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const https = target.protocol === 'https:';
    const options: RequestOptions = {
      method: 'POST',
      headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
      agent: https ? agents.https : agents.http,
    };
    const req = (https ? httpsRequest : httpRequest)(target, options);
    // One deadline for the whole exchange (spec 6: 2xx within 15 seconds).
    const deadline = setTimeout(() => req.destroy(new DeliveryTimeout('no answer in time')), timeoutMs);
    deadline.unref();
    req.on('response', (res) => {
      res.on('error', (err) => {
        clearTimeout(deadline);
        reject(err);
      });
      res.on('end', () => {
        clearTimeout(deadline);
        resolve(res.statusCode ?? 0);
      });
      // Drain the (small) answer so the connection can be reused.
      res.resume();
    });
    req.on('error', (err) => {
      clearTimeout(deadline);
      reject(err);
    });
    req.end(body);
  });
}

interface Agents {
  http: HttpAgent;
  https: HttpsAgent;
}

export class WebhookDispatcher {
  private readonly limit = pLimit(CONCURRENCY);
  // Own agents, so close() can destroy every socket the sandbox opened.
  private readonly agents: Agents = {
    http: new HttpAgent({ keepAlive: true, maxSockets: CONCURRENCY }),
    https: new HttpsAgent({ keepAlive: true, maxSockets: CONCURRENCY }),
  };
  private closed = false;

  constructor(private readonly deps: WebhookDeps) {}

  /** Emits one `payout.updated` event (subject to the webhook faults). */
  send(target: WebhookTarget, update: PayoutUpdate): void {
    if (this.closed) return;
    const { random, stats, logger, clock } = this.deps;
    const faults = this.deps.faults();
    if (random.chance(faults.webhookLossRate)) {
      stats.webhooksLost++;
      logger.debug({ payoutId: update.payoutId, merchantCode: target.merchantCode }, 'webhook event lost (fault)');
      return;
    }
    const eventId = `EV${random.hex(24)}`;
    const body = canonicalStringify(
      { event: 'payout.updated', eventId, timestamp: new Date(clock.now()).toISOString(), data: { ...update } },
      this.deps.canonical,
    );
    const copies = random.chance(faults.webhookDuplicateRate) ? 2 : 1;
    if (copies === 2) stats.webhooksDuplicated++;
    for (let i = 0; i < copies; i++) {
      const delay = faults.webhookReorderMs > 0 ? random.int(0, faults.webhookReorderMs) : 0;
      this.later({ target, eventId, body, retries: 0 }, delay);
    }
  }

  close(): void {
    this.closed = true;
    this.limit.clearQueue();
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private later(delivery: Delivery, delayMs: number): void {
    if (delayMs <= 0) this.enqueue(delivery);
    else this.deps.timers.after(delayMs, () => this.enqueue(delivery));
  }

  private enqueue(delivery: Delivery): void {
    if (this.closed) return;
    void this.limit(() => this.attempt(delivery));
  }

  private async attempt(delivery: Delivery): Promise<void> {
    if (this.closed) return;
    const { clock, stats, logger, options } = this.deps;
    const { target } = delivery;
    const timestamp = webhookTimestamp(clock.now(), options.timestampUnit);
    const nonce = randomUUID().replaceAll('-', '');
    const stringToSign = webhookStringToSign({ path: target.path, minifiedBody: delivery.body, timestamp, nonce }, options.stringToSign);
    const signature = signHmac(target.key, stringToSign);
    stats.webhooksSent++;
    let outcome: string;
    try {
      const names = options.headers;
      const headers = {
        'Content-Type': 'application/json',
        [names.timestamp]: timestamp,
        [names.nonce]: nonce,
        [names.signature]: signature,
      };
      const status = await post(target.url, headers, delivery.body, this.agents, options.timeoutMs);
      if (status >= 200 && status < 300) {
        stats.webhooksDelivered++;
        logger.debug({ eventId: delivery.eventId, merchantCode: target.merchantCode, status }, 'webhook delivered');
        return;
      }
      outcome = `HTTP ${status}`;
    } catch (err) {
      outcome = err instanceof DeliveryTimeout ? 'timeout' : 'connection error';
    }
    if (this.closed) return;
    stats.webhookAttemptsFailed++;
    const wait = options.retryScheduleMs[delivery.retries];
    if (wait === undefined) {
      stats.webhooksFailed++;
      logger.warn(
        { eventId: delivery.eventId, merchantCode: target.merchantCode, outcome, attempts: delivery.retries + 1 },
        'webhook given up',
      );
      return;
    }
    logger.debug({ eventId: delivery.eventId, merchantCode: target.merchantCode, outcome, retryInMs: wait }, 'webhook attempt failed');
    this.later({ ...delivery, retries: delivery.retries + 1 }, wait);
  }
}

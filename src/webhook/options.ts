/** Options of the webhook receiver (docs/webhooks.md) and their validation; errors never show the secret's text. */
import type { Logger } from 'pino';
import type { Clock } from '../domain/clock.js';
import { isUrlPath } from '../domain/url-path.js';
import type { CanonicalOptions } from '../json/canonical.js';
import type { HmacKeyEncoding } from '../signing/signatures.js';
import {
  DEFAULT_WEBHOOK_SCHEME,
  webhookSchemeSchema,
  type WebhookHeaders,
  type WebhookSchemeInput,
  type WebhookStringToSignForm,
  type WebhookTimestampUnit,
} from '../signing/webhook-scheme.js';
import type { Database, PayoutNamed } from '../store/index.js';
import { WebhookConfigError } from './errors.js';

/** What became of one delivery (metrics). `error`: the event could not be recorded (500, the sender retries). */
export type WebhookVerdict =
  'accepted' | 'duplicate' | 'bad_signature' | 'stale' | 'replayed' | 'malformed' | 'too_large' | 'unknown_event' | 'error';

export interface WebhookTlsOptions {
  /** PEM certificate (chain) file. */
  certFile: string;
  /** PEM private key file. */
  keyFile: string;
}

export interface WebhookReceiverOptions {
  /** Listen address. Default 127.0.0.1 (behind a reverse proxy). */
  host?: string;
  /** Listen port; 0 = a free port (tests). */
  port: number;
  /** The URL path deliveries are POSTed to. Default '/payoutd/webhook'. */
  path?: string;
  /** The path the service posts to and signs, when a reverse proxy rewrites it. Default: the request's path. */
  signedPath?: string;
  /** Serve HTTPS with these files; without it, plain HTTP behind a TLS-terminating reverse proxy. */
  tls?: WebhookTlsOptions;
  /** The merchant's webhook secret (HMAC key text). */
  secret: string;
  /** How the secret text becomes key bytes (contract default utf8). */
  keyEncoding?: HmacKeyEncoding;
  /** Names of the timestamp, nonce and signature headers (contract X-TIMESTAMP, X-NONCE, X-SIGNATURE). */
  headers?: WebhookSchemeInput['headers'];
  /** Unit of the timestamp header (contract seconds); timestampSkewSeconds stays in seconds. */
  timestampUnit?: WebhookTimestampUnit;
  /** Parts of the string to sign, in order, and their separator (contract POST:path:bodySha256:timestamp:nonce). */
  stringToSign?: WebhookSchemeInput['stringToSign'];
  /** Bodies over this many bytes answer 413. Default 64 KiB. */
  maxBodyBytes?: number;
  /** Accepted distance of X-TIMESTAMP from the clock. Default 300. */
  timestampSkewSeconds?: number;
  /** A verified nonce seen this recently is a replay. Default 600; at least twice the skew. */
  nonceWindowSeconds?: number;
  /** Most nonces kept (oldest evicted beyond). Default 100 000. */
  nonceCapacity?: number;
  /** Whole-request deadline (slow clients). Default 10 000 ms. */
  requestTimeoutMs?: number;
  /** Recorded eventIds are kept this long for deduplication. Default 30 days (the sender's retries end in minutes). */
  eventRetentionDays?: number;
  /** On stop, how long requests and callbacks in flight may take before sockets are cut. Default 5 000 ms. */
  stopGraceMs?: number;
  /** Key order used to minify the received text (contract: canonicalJson.sortKeys). Default sorted. */
  canonicalJson?: CanonicalOptions;
  clock: Clock;
  logger: Logger;
  db: Database;
  /**
   * Called for each new event before it is answered, inside the transaction recording it (`trx`); a throw answers
   * 500 and leaves the event unrecorded. True wakes the poller once committed. Default: followUpNamed.
   */
  onPayoutUpdated?: (named: PayoutNamed, trx: Database) => Promise<boolean | void> | boolean | void;
  /** Wakes the settlement poller when the follow-up of an event asks for it. */
  wake?: () => void;
  /** Metrics hook: one call per delivery that reached verification or later. */
  onVerdict?: (verdict: WebhookVerdict) => void;
}

export const WEBHOOK_DEFAULTS = {
  host: '127.0.0.1',
  path: '/payoutd/webhook',
  keyEncoding: DEFAULT_WEBHOOK_SCHEME.keyEncoding as HmacKeyEncoding,
  maxBodyBytes: 64 * 1024,
  timestampSkewSeconds: 300,
  nonceWindowSeconds: 600,
  nonceCapacity: 100_000,
  requestTimeoutMs: 10_000,
  eventRetentionDays: 30,
  stopGraceMs: 5_000,
  canonicalJson: { sortKeys: true } as CanonicalOptions,
} as const;

export interface ResolvedReceiverOptions {
  host: string;
  port: number;
  path: string;
  signedPath: string | null;
  tls: WebhookTlsOptions | null;
  secret: string;
  keyEncoding: HmacKeyEncoding;
  headers: WebhookHeaders;
  timestampUnit: WebhookTimestampUnit;
  stringToSign: WebhookStringToSignForm;
  maxBodyBytes: number;
  timestampSkewSeconds: number;
  nonceWindowSeconds: number;
  nonceCapacity: number;
  requestTimeoutMs: number;
  eventRetentionDays: number;
  stopGraceMs: number;
  canonicalJson: CanonicalOptions;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `${JSON.stringify(value.slice(0, 60))} (string)`;
  return `${String(value)} (${value === null ? 'null' : typeof value})`;
}

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `from ${min} and up` : `from ${min} to ${max}`;
    throw new WebhookConfigError(
      'WEBHOOK_CONFIG_INVALID',
      `Expected \`webhook.${name}\` to be an integer ${range}, got ${describe(value)}`,
    );
  }
  return value;
}

function urlPath(name: string, value: unknown): string {
  if (typeof value !== 'string' || !isUrlPath(value)) {
    throw new WebhookConfigError(
      'WEBHOOK_CONFIG_INVALID',
      `Expected \`webhook.${name}\` to be a URL path starting with "/" (no query), got ${describe(value)}`,
    );
  }
  return value;
}

export function resolveReceiverOptions(o: WebhookReceiverOptions): ResolvedReceiverOptions {
  const d = WEBHOOK_DEFAULTS;
  if (typeof o.secret !== 'string' || o.secret === '') {
    // The secret's text is never echoed, only its absence.
    throw new WebhookConfigError('WEBHOOK_CONFIG_INVALID', 'Expected `webhook.secret` to be a non-empty string');
  }
  const keyEncoding = o.keyEncoding ?? d.keyEncoding;
  if (keyEncoding !== 'utf8' && keyEncoding !== 'base64' && keyEncoding !== 'hex') {
    throw new WebhookConfigError(
      'WEBHOOK_CONFIG_INVALID',
      `Expected \`webhook.keyEncoding\` to be utf8, base64 or hex, got ${describe(keyEncoding)}`,
    );
  }
  const scheme = webhookSchemeSchema.safeParse({
    keyEncoding,
    headers: o.headers,
    timestampUnit: o.timestampUnit,
    stringToSign: o.stringToSign,
  });
  if (!scheme.success) {
    const issue = scheme.error.issues[0];
    const at = ['webhook', ...(issue?.path ?? []).map(String)].join('.');
    throw new WebhookConfigError('WEBHOOK_CONFIG_INVALID', `\`${at}\` ${issue?.message ?? 'is invalid'}`);
  }
  const host = o.host ?? d.host;
  if (typeof host !== 'string' || host === '') {
    throw new WebhookConfigError('WEBHOOK_CONFIG_INVALID', `Expected \`webhook.host\` to be a non-empty string, got ${describe(host)}`);
  }
  const timestampSkewSeconds = integer('timestampSkewSeconds', o.timestampSkewSeconds ?? d.timestampSkewSeconds, 1);
  const nonceWindowSeconds = integer('nonceWindowSeconds', o.nonceWindowSeconds ?? d.nonceWindowSeconds, 1);
  // A delivery stays acceptable from ts - skew to ts + skew, so its nonce must be remembered that long.
  if (nonceWindowSeconds < 2 * timestampSkewSeconds) {
    throw new WebhookConfigError(
      'WEBHOOK_CONFIG_INVALID',
      `Expected \`webhook.nonceWindowSeconds\` to be at least twice timestampSkewSeconds (${2 * timestampSkewSeconds}), got ${nonceWindowSeconds} (number): a replay could slip through`,
    );
  }
  const tls = o.tls ?? null;
  if (tls !== null && (typeof tls.certFile !== 'string' || tls.certFile === '' || typeof tls.keyFile !== 'string' || tls.keyFile === '')) {
    throw new WebhookConfigError('WEBHOOK_CONFIG_INVALID', 'Expected `webhook.tls` to name both certFile and keyFile');
  }
  return {
    host,
    port: integer('port', o.port, 0, 65535),
    path: urlPath('path', o.path ?? d.path),
    signedPath: o.signedPath === undefined ? null : urlPath('signedPath', o.signedPath),
    tls,
    secret: o.secret,
    keyEncoding,
    headers: scheme.data.headers,
    timestampUnit: scheme.data.timestampUnit,
    stringToSign: scheme.data.stringToSign,
    maxBodyBytes: integer('maxBodyBytes', o.maxBodyBytes ?? d.maxBodyBytes, 1),
    timestampSkewSeconds,
    nonceWindowSeconds,
    nonceCapacity: integer('nonceCapacity', o.nonceCapacity ?? d.nonceCapacity, 1),
    requestTimeoutMs: integer('requestTimeoutMs', o.requestTimeoutMs ?? d.requestTimeoutMs, 1),
    eventRetentionDays: integer('eventRetentionDays', o.eventRetentionDays ?? d.eventRetentionDays, 1),
    stopGraceMs: integer('stopGraceMs', o.stopGraceMs ?? d.stopGraceMs, 0),
    canonicalJson: { sortKeys: (o.canonicalJson ?? d.canonicalJson).sortKeys !== false },
  };
}

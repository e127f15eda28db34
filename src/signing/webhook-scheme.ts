/**
 * How a webhook delivery is signed where spec 6 shows nothing: header names, timestamp unit, the parts of the
 * string to sign and the key bytes, contract.md's answers as defaults. One schema serves the daemon's `webhook`
 * settings, the receiver's options and the sandbox's sender, so the two ends cannot default to different answers.
 */
import { z } from 'zod';

/** What the string to sign may be built from; `method` is always POST, `bodySha256` the hex SHA-256 of the minified body. */
export const WEBHOOK_SIGNED_PARTS = ['method', 'path', 'bodySha256', 'timestamp', 'nonce'] as const;
export type WebhookSignedPart = (typeof WEBHOOK_SIGNED_PARTS)[number];

// An HTTP field name (RFC 9110 token).
const HEADER_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,64}$/;
// Headers the transport itself sets or reads: a signature field under one of these names would be overwritten.
const TRANSPORT_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);

const HEADER_NAME = { error: 'must be an HTTP header name such as X-SIGNATURE (no spaces or colons, at most 64 characters)' };
const headerName = (def: string) =>
  z
    .string(HEADER_NAME)
    .regex(HEADER_TOKEN, HEADER_NAME)
    .refine((n) => !TRANSPORT_HEADERS.has(n.toLowerCase()), { error: 'is a header HTTP itself uses; choose another name' })
    .default(def);

const headersSchema = z
  .strictObject({ timestamp: headerName('X-TIMESTAMP'), nonce: headerName('X-NONCE'), signature: headerName('X-SIGNATURE') })
  // Header names are case-insensitive: two fields under one name could not both be read.
  .refine((h) => new Set([h.timestamp, h.nonce, h.signature].map((n) => n.toLowerCase())).size === 3, {
    error: 'timestamp, nonce and signature need a header name each',
  })
  .prefault({});

const REQUIRED_PARTS: readonly WebhookSignedPart[] = ['bodySha256', 'timestamp', 'nonce'];
const SEPARATOR = { error: 'must be 1 to 8 printable characters (or a line break)' };

const stringToSignSchema = z
  .strictObject({
    parts: z
      .array(z.enum(WEBHOOK_SIGNED_PARTS))
      .refine((p) => new Set(p).size === p.length, { error: 'names a part twice' })
      // Without these a delivery could be altered, or replayed once its nonce is forgotten.
      .refine((p) => REQUIRED_PARTS.every((r) => p.includes(r)), { error: 'must include bodySha256, timestamp and nonce' })
      .default(() => [...WEBHOOK_SIGNED_PARTS]),
    separator: z
      .string(SEPARATOR)
      .regex(/^[\x20-\x7e\n]{1,8}$/, SEPARATOR)
      .default(':'),
  })
  .prefault({});

/** The signing settings, spread into the daemon's `webhook` block and the sandbox's `webhook` options. */
export const webhookSchemeFields = {
  /** (contract) How the secret text becomes HMAC key bytes. */
  keyEncoding: z.enum(['utf8', 'base64', 'hex']).default('utf8'),
  /** (contract) The names of the three signature headers. */
  headers: headersSchema,
  /** (contract) The unit of the timestamp header; the accepted skew stays in seconds. */
  timestampUnit: z.enum(['seconds', 'milliseconds']).default('seconds'),
  /** (contract) The parts of the string to sign, in order, and what joins them. */
  stringToSign: stringToSignSchema,
};

export const webhookSchemeSchema = z.strictObject(webhookSchemeFields);

export type WebhookScheme = z.output<typeof webhookSchemeSchema>;
export type WebhookSchemeInput = z.input<typeof webhookSchemeSchema>;
export type WebhookHeaders = WebhookScheme['headers'];
export type WebhookTimestampUnit = WebhookScheme['timestampUnit'];
export type WebhookStringToSignForm = WebhookScheme['stringToSign'];

export const DEFAULT_WEBHOOK_SCHEME: WebhookScheme = webhookSchemeSchema.parse({});

/** The timestamp header's text for a moment. */
export function webhookTimestamp(nowMs: number, unit: WebhookTimestampUnit): string {
  return String(unit === 'seconds' ? Math.floor(nowMs / 1000) : Math.floor(nowMs));
}

/** The scheme's own fields of a larger options object (the rest dropped). */
export function webhookSchemeOf(o: WebhookScheme): WebhookScheme {
  return { keyEncoding: o.keyEncoding, headers: o.headers, timestampUnit: o.timestampUnit, stringToSign: o.stringToSign };
}

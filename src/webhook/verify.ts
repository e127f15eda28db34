/**
 * Verification of one webhook delivery, pure: the headers, the timestamp window, and the HMAC-SHA512 signature
 * over the scheme's string to sign (contract: `POST:<path>:<sha256 of the minified body>:<ts>:<nonce>`).
 * Reasons name what failed, never a header's value.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { minifyBodyText, type CanonicalOptions } from '../json/canonical.js';
import { verifyHmac, webhookStringToSign } from '../signing/signatures.js';
import {
  webhookTimestamp,
  type WebhookHeaders,
  type WebhookStringToSignForm,
  type WebhookTimestampUnit,
} from '../signing/webhook-scheme.js';

export interface DeliveryToVerify {
  /** The URL path the sender signed. */
  path: string;
  /** The body bytes as received, decoded as UTF-8. */
  bodyText: string;
  headers: IncomingHttpHeaders;
}

export interface VerifyOptions {
  canonical: CanonicalOptions;
  timestampSkewSeconds: number;
  headers: WebhookHeaders;
  timestampUnit: WebhookTimestampUnit;
  stringToSign: WebhookStringToSignForm;
}

export type VerifyResult = { ok: true; nonce: string } | { ok: false; verdict: 'bad_signature' | 'stale'; reason: string };

// Seconds or milliseconds since the epoch; 15 digits keeps Number() exact.
const TIMESTAMP = /^\d{1,15}$/;
// Printable ASCII without spaces; the spec recommends 32, the sandbox allows 128.
const NONCE = /^[\x21-\x7e]{1,128}$/;
// Base64 of a SHA-512 MAC is 88 characters; anything far longer is not one.
const SIGNATURE = /^[\x21-\x7e]{1,512}$/;

/** A header as a single string; repeated headers (an array) count as malformed. */
function single(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return typeof v === 'string' ? v : undefined;
}

function refuse(verdict: 'bad_signature' | 'stale', reason: string): VerifyResult {
  return { ok: false, verdict, reason };
}

/** The minified body the sender hashed (spec 5.3 rules, numbers kept as text). */
export function minifiedBodyOf(bodyText: string, canonical: CanonicalOptions): string {
  try {
    return minifyBodyText(bodyText, canonical);
  } catch {
    // minifyBodyText falls back on its own; this guards against odd input ever turning into a crash here.
    return bodyText.trim();
  }
}

export function verifyDelivery(d: DeliveryToVerify, key: Buffer, o: VerifyOptions, nowMs: number): VerifyResult {
  const names = o.headers;
  // Node gives incoming header names in lower case.
  const timestamp = single(d.headers, names.timestamp.toLowerCase());
  const nonce = single(d.headers, names.nonce.toLowerCase());
  const signature = single(d.headers, names.signature.toLowerCase());
  if (timestamp === undefined || !TIMESTAMP.test(timestamp)) {
    return refuse('bad_signature', `${names.timestamp} missing or not whole ${o.timestampUnit}`);
  }
  if (nonce === undefined || !NONCE.test(nonce)) return refuse('bad_signature', `${names.nonce} missing or malformed`);
  if (signature === undefined || !SIGNATURE.test(signature)) return refuse('bad_signature', `${names.signature} missing or malformed`);
  // The window is whole seconds either way; milliseconds are compared exactly against it.
  const offBy = Number(webhookTimestamp(nowMs, o.timestampUnit)) - Number(timestamp);
  const window = o.timestampUnit === 'seconds' ? o.timestampSkewSeconds : o.timestampSkewSeconds * 1000;
  if (Math.abs(offBy) > window) {
    const unit = o.timestampUnit === 'seconds' ? 's' : 'ms';
    return refuse('stale', `${names.timestamp} is ${offBy} ${unit} ${offBy > 0 ? 'behind' : 'ahead of'} the receiver clock`);
  }
  const minifiedBody = minifiedBodyOf(d.bodyText, o.canonical);
  const stringToSign = webhookStringToSign({ path: d.path, minifiedBody, timestamp, nonce }, o.stringToSign);
  if (!verifyHmac(key, stringToSign, signature)) return refuse('bad_signature', 'signature does not match');
  return { ok: true, nonce };
}

/** The strings to sign and the signatures of spec 5.3 (RSA), 5.4 (HMAC) and the webhook scheme; pure, pinned by tests. */
import { PayoutdError } from '../domain/errors.js';
import { DEFAULT_WEBHOOK_SCHEME, type WebhookSignedPart, type WebhookStringToSignForm } from './webhook-scheme.js';
import { createHash, createHmac, createSign, createVerify, timingSafeEqual, type KeyObject } from 'node:crypto';

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Fields of the RSA string to sign (spec 5.3). */
export interface TokenCallParts {
  method: string;
  path: string;
  minifiedBody: string;
  apiKey: string;
  merchantCode: string;
  timestamp: string;
  nonce: string;
}

/** METHOD:path:sha256(body):apiKey:merchantCode:timestamp:nonce */
export function tokenStringToSign(p: TokenCallParts): string {
  return [p.method.toUpperCase(), p.path, sha256Hex(p.minifiedBody), p.apiKey, p.merchantCode, p.timestamp, p.nonce].join(':');
}

/** Fields of the HMAC string to sign (spec 5.4). */
export interface BusinessCallParts {
  method: string;
  path: string;
  accessToken: string;
  minifiedBody: string;
  timestamp: string;
  nonce: string;
}

/** METHOD:path:accessToken:sha256(body):timestamp:nonce */
export function businessStringToSign(p: BusinessCallParts): string {
  return [p.method.toUpperCase(), p.path, p.accessToken, sha256Hex(p.minifiedBody), p.timestamp, p.nonce].join(':');
}

/** Fields of the webhook string to sign (contract: Webhook); which of them are signed is `webhook.stringToSign`. */
export interface WebhookParts {
  path: string;
  minifiedBody: string;
  timestamp: string;
  nonce: string;
}

/** The form's parts joined by its separator; the contract's form is POST:path:sha256(body):timestamp:nonce. */
export function webhookStringToSign(p: WebhookParts, form: WebhookStringToSignForm = DEFAULT_WEBHOOK_SCHEME.stringToSign): string {
  const value: Record<WebhookSignedPart, () => string> = {
    method: () => 'POST',
    path: () => p.path,
    bodySha256: () => sha256Hex(p.minifiedBody),
    timestamp: () => p.timestamp,
    nonce: () => p.nonce,
  };
  return form.parts.map((part) => value[part]()).join(form.separator);
}

/** SHA256withRSA, Base64. */
export function signRsa(privateKey: KeyObject, stringToSign: string): string {
  return createSign('RSA-SHA256').update(stringToSign, 'utf8').sign(privateKey, 'base64');
}

export function verifyRsa(publicKey: KeyObject, stringToSign: string, signatureB64: string): boolean {
  try {
    return createVerify('RSA-SHA256').update(stringToSign, 'utf8').verify(publicKey, signatureB64, 'base64');
  } catch {
    // A malformed signature is simply not a valid one.
    return false;
  }
}

/** How the secretKey text becomes HMAC key bytes (contract: Signing key bytes). */
export type HmacKeyEncoding = 'utf8' | 'base64' | 'hex';

export class HmacKeyError extends PayoutdError {
  override readonly name = 'HmacKeyError';
}

const HEX_KEY = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64_KEY = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Key bytes of a secret; Buffer.from decodes loosely, so the text must be valid in its encoding and non-empty. */
export function hmacKeyBytes(secret: string, encoding: HmacKeyEncoding): Buffer {
  if ((encoding === 'hex' && !HEX_KEY.test(secret)) || (encoding === 'base64' && !BASE64_KEY.test(secret))) {
    throw new HmacKeyError('HMAC_KEY_INVALID', `the HMAC secret is not valid ${encoding} text`);
  }
  const key = Buffer.from(secret, encoding);
  if (key.length === 0) throw new HmacKeyError('HMAC_KEY_INVALID', 'the HMAC secret is empty');
  return key;
}

/** HmacSHA512, Base64. */
export function signHmac(key: Buffer, stringToSign: string): string {
  return createHmac('sha512', key).update(stringToSign, 'utf8').digest('base64');
}

/** Constant-time comparison of two signature texts, hashed first so lengths neither throw nor leak. */
export function signaturesEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a, 'utf8').digest();
  const hb = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(ha, hb);
}

export function verifyHmac(key: Buffer, stringToSign: string, signatureB64: string): boolean {
  return signaturesEqual(signHmac(key, stringToSign), signatureB64);
}

/**
 * Known-answer tests for src/signing: strings to sign and signatures of spec
 * 5.3 (RSA), 5.4 (HMAC) and the contract's webhook scheme. Every expected value
 * comes from the openssl command line (test/fixtures/signing/regenerate.sh),
 * never from our own code, so a shared mistake cannot make both sides agree.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { minifyBodyText } from '../../src/json/index.js';
import {
  businessStringToSign,
  hmacKeyBytes,
  parsePkcs8RsaPrivateKey,
  parsePublicKey,
  publicKeyBase64,
  sha256Hex,
  signaturesEqual,
  signHmac,
  signRsa,
  tokenStringToSign,
  verifyHmac,
  verifyRsa,
  webhookStringToSign,
} from '../../src/signing/index.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/signing/', import.meta.url));

const common = {
  path: z.string(),
  rawBody: z.string(),
  minifiedBody: z.string(),
  timestamp: z.string(),
  nonce: z.string(),
  bodySha256: z.string().regex(/^[0-9a-f]{64}$/),
  stringToSign: z.string(),
  signature: z.string(),
};
const Vectors = z.object({
  publicKeyBase64: z.string(),
  token: z.object({ ...common, method: z.string(), apiKey: z.string(), merchantCode: z.string() }),
  business: z.object({ ...common, method: z.string(), accessToken: z.string(), secretKey: z.string() }),
  businessEmptyBody: z.object({ ...common, method: z.string(), accessToken: z.string(), secretKey: z.string() }),
  businessEncodedKey: z.object({
    ...common,
    method: z.string(),
    accessToken: z.string(),
    secretKeyHex: z.string(),
    secretKeyBase64: z.string(),
    signatureIfBase64TextUsedAsUtf8: z.string(),
  }),
  webhook: z.object({ ...common, webhookSecret: z.string() }),
});

// Every value in the file is a string, so JSON.parse loses nothing here.
const v = Vectors.parse(JSON.parse(readFileSync(FIXTURES + 'vectors.json', 'utf8')));
const privateKey = parsePkcs8RsaPrivateKey(readFileSync(FIXTURES + 'key.pem', 'utf8'), 'fixture key.pem');
const publicKey = parsePublicKey(readFileSync(FIXTURES + 'public.pem', 'utf8'));

/** The same signature with one byte of its binary form changed. */
function flipByte(signatureB64: string, index: number): string {
  const bytes = Buffer.from(signatureB64, 'base64');
  bytes[index] = (bytes[index] ?? 0) ^ 0x01;
  return bytes.toString('base64');
}

/** The same text with one character replaced by its neighbour. */
function flipChar(text: string, index: number): string {
  const c = text.charCodeAt(index);
  return text.slice(0, index) + String.fromCharCode(c ^ 0x01) + text.slice(index + 1);
}

describe('minified bodies and their sha256 (openssl)', () => {
  const all = [v.token, v.business, v.businessEmptyBody, v.businessEncodedKey, v.webhook];

  it.each(all.map((x) => [x.path, x] as const))('minifies and hashes the body of %s', (_path, x) => {
    expect(minifyBodyText(x.rawBody)).toBe(x.minifiedBody);
    expect(sha256Hex(x.minifiedBody)).toBe(x.bodySha256);
  });

  it('hashes the empty body as the empty string', () => {
    expect(v.businessEmptyBody.bodySha256).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hashes the UTF-8 bytes of non-ASCII text', () => {
    expect(v.business.minifiedBody).toContain('José');
    expect(sha256Hex(v.business.minifiedBody)).toBe(v.business.bodySha256);
  });
});

describe('token calls: SHA256withRSA (spec 5.3)', () => {
  const t = v.token;
  const parts = {
    method: t.method,
    path: t.path,
    minifiedBody: t.minifiedBody,
    apiKey: t.apiKey,
    merchantCode: t.merchantCode,
    timestamp: t.timestamp,
    nonce: t.nonce,
  };

  it('builds the string to sign openssl signed', () => {
    expect(tokenStringToSign(parts)).toBe(t.stringToSign);
  });

  it('upper-cases the method', () => {
    expect(tokenStringToSign({ ...parts, method: t.method.toLowerCase() })).toBe(t.stringToSign);
  });

  it('signs byte for byte like openssl (PKCS#1 v1.5 is deterministic)', () => {
    expect(signRsa(privateKey, t.stringToSign)).toBe(t.signature);
  });

  it('exports the public key as openssl does (Base64 SPKI DER)', () => {
    expect(publicKeyBase64(privateKey)).toBe(v.publicKeyBase64);
    expect(publicKeyBase64(publicKey)).toBe(v.publicKeyBase64);
  });

  it('verifies the openssl signature with the PEM and the Base64 public key', () => {
    expect(verifyRsa(publicKey, t.stringToSign, t.signature)).toBe(true);
    expect(verifyRsa(parsePublicKey(v.publicKeyBase64), t.stringToSign, t.signature)).toBe(true);
  });

  it('rejects a signature with one byte changed, anywhere', () => {
    for (const index of [0, 100, 255]) {
      expect(verifyRsa(publicKey, t.stringToSign, flipByte(t.signature, index))).toBe(false);
    }
  });

  it('rejects a string to sign with one byte changed', () => {
    expect(verifyRsa(publicKey, flipChar(t.stringToSign, 0), t.signature)).toBe(false);
    expect(verifyRsa(publicKey, t.stringToSign + ' ', t.signature)).toBe(false);
  });

  it('rejects empty, truncated and non-Base64 signatures without throwing', () => {
    expect(verifyRsa(publicKey, t.stringToSign, '')).toBe(false);
    expect(verifyRsa(publicKey, t.stringToSign, t.signature.slice(0, 100))).toBe(false);
    expect(verifyRsa(publicKey, t.stringToSign, '%%% not base64 %%%')).toBe(false);
  });
});

describe('business calls: HmacSHA512 (spec 5.4)', () => {
  const partsOf = (b: typeof v.business | typeof v.businessEmptyBody | typeof v.businessEncodedKey) => ({
    method: b.method,
    path: b.path,
    accessToken: b.accessToken,
    minifiedBody: b.minifiedBody,
    timestamp: b.timestamp,
    nonce: b.nonce,
  });

  it('builds the string to sign and signs with the UTF-8 secretKey like openssl', () => {
    const b = v.business;
    expect(businessStringToSign(partsOf(b))).toBe(b.stringToSign);
    expect(businessStringToSign({ ...partsOf(b), method: 'post' })).toBe(b.stringToSign);
    expect(signHmac(hmacKeyBytes(b.secretKey, 'utf8'), b.stringToSign)).toBe(b.signature);
  });

  it('signs an empty body as the empty string', () => {
    const b = v.businessEmptyBody;
    expect(businessStringToSign(partsOf(b))).toBe(b.stringToSign);
    expect(signHmac(hmacKeyBytes(b.secretKey, 'utf8'), b.stringToSign)).toBe(b.signature);
  });

  it('takes key bytes from hex or base64 text (contract alternatives)', () => {
    const b = v.businessEncodedKey;
    const fromHex = hmacKeyBytes(b.secretKeyHex, 'hex');
    const fromBase64 = hmacKeyBytes(b.secretKeyBase64, 'base64');
    expect(fromHex.length).toBe(32);
    expect(fromBase64.equals(fromHex)).toBe(true);
    expect(hmacKeyBytes(b.secretKeyHex.toUpperCase(), 'hex').equals(fromHex)).toBe(true);
    expect(businessStringToSign(partsOf(b))).toBe(b.stringToSign);
    expect(signHmac(fromHex, b.stringToSign)).toBe(b.signature);
    expect(signHmac(fromBase64, b.stringToSign)).toBe(b.signature);
  });

  it('gives a different signature when the encoded text is used as UTF-8', () => {
    const b = v.businessEncodedKey;
    expect(signHmac(hmacKeyBytes(b.secretKeyBase64, 'utf8'), b.stringToSign)).toBe(b.signatureIfBase64TextUsedAsUtf8);
    expect(b.signatureIfBase64TextUsedAsUtf8).not.toBe(b.signature);
  });

  it('verifyHmac accepts the openssl signature and rejects any change', () => {
    const b = v.business;
    const key = hmacKeyBytes(b.secretKey, 'utf8');
    expect(verifyHmac(key, b.stringToSign, b.signature)).toBe(true);
    expect(verifyHmac(key, b.stringToSign, flipByte(b.signature, 0))).toBe(false);
    expect(verifyHmac(key, b.stringToSign, flipByte(b.signature, 63))).toBe(false);
    expect(verifyHmac(key, flipChar(b.stringToSign, 5), b.signature)).toBe(false);
    expect(verifyHmac(hmacKeyBytes(flipChar(b.secretKey, 0), 'utf8'), b.stringToSign, b.signature)).toBe(false);
    expect(verifyHmac(key, b.stringToSign, '')).toBe(false);
  });

  it('refuses a secret that is not valid in the chosen encoding', () => {
    expect(() => hmacKeyBytes('whsec_not_hex', 'hex')).toThrow();
    expect(() => hmacKeyBytes('abc', 'hex')).toThrow();
    expect(() => hmacKeyBytes('!!!!', 'base64')).toThrow();
  });
});

describe('webhooks: HmacSHA512 over POST:path:sha256:timestamp:nonce (contract)', () => {
  const w = v.webhook;
  const parts = { path: w.path, minifiedBody: w.minifiedBody, timestamp: w.timestamp, nonce: w.nonce };

  it('builds the string to sign and signs with the UTF-8 webhook secret like openssl', () => {
    expect(webhookStringToSign(parts)).toBe(w.stringToSign);
    expect(Buffer.byteLength(w.webhookSecret, 'utf8')).toBeGreaterThan(w.webhookSecret.length);
    expect(signHmac(hmacKeyBytes(w.webhookSecret, 'utf8'), w.stringToSign)).toBe(w.signature);
  });

  it('verifies the received text after re-minifying it', () => {
    const key = hmacKeyBytes(w.webhookSecret, 'utf8');
    const sts = webhookStringToSign({ ...parts, minifiedBody: minifyBodyText(w.rawBody) });
    expect(verifyHmac(key, sts, w.signature)).toBe(true);
    const tampered = minifyBodyText(w.rawBody.replace('"PAID"', '"CANCELLED"'));
    expect(verifyHmac(key, webhookStringToSign({ ...parts, minifiedBody: tampered }), w.signature)).toBe(false);
  });
});

describe('signaturesEqual', () => {
  it('is true only for identical texts', () => {
    expect(signaturesEqual(v.business.signature, v.business.signature)).toBe(true);
    expect(signaturesEqual('', '')).toBe(true);
    expect(signaturesEqual(v.business.signature, flipChar(v.business.signature, 10))).toBe(false);
    expect(signaturesEqual('é', 'e\u0301')).toBe(false);
  });

  it('compares texts of different lengths without throwing', () => {
    expect(() => signaturesEqual('abc', 'abcd')).not.toThrow();
    expect(signaturesEqual('abc', 'abcd')).toBe(false);
    expect(signaturesEqual('', v.business.signature)).toBe(false);
    expect(signaturesEqual(v.business.signature, v.business.signature + '=')).toBe(false);
  });
});

/**
 * Merchant key files (src/signing/keys.ts): which private key files are
 * refused and why, that no refusal quotes key material, and that public keys
 * travel as Base64 SPKI DER. Key files are openssl-made fixtures
 * (test/fixtures/signing), copied into a temporary folder because git does
 * not keep file modes.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PayoutdError } from '../../src/domain/errors.js';
import {
  generateMerchantKeyPair,
  KeyFileError,
  loadPrivateKeyFile,
  parsePkcs8RsaPrivateKey,
  parsePublicKey,
  publicKeyBase64,
  signRsa,
  verifyRsa,
} from '../../src/signing/index.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/signing/', import.meta.url));
const fixture = (name: string) => readFileSync(FIXTURES + name, 'utf8');

const RSA_PKCS8 = fixture('key.pem');
const RSA_PKCS1 = fixture('key-pkcs1.pem');
const RSA_ENCRYPTED = fixture('key-encrypted.pem');
const EC_PKCS8 = fixture('key-ec.pem');
const PUBLIC_PEM = fixture('public.pem');
const PUBLIC_B64 = (JSON.parse(fixture('vectors.json')) as { publicKeyBase64: string }).publicKeyBase64;

let dir: string;
let counter = 0;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'payoutd-keys-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `text` to a fresh file with exactly `mode` (chmod, so umask does not interfere). */
function keyFile(text: string, mode: number): string {
  const path = join(dir, `key-${++counter}.pem`);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

/** The error thrown by `fn`, which must be a KeyFileError. */
function refusal(fn: () => unknown): KeyFileError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(KeyFileError);
    expect(err).toBeInstanceOf(PayoutdError);
    return err as KeyFileError;
  }
  throw new Error('expected a KeyFileError, nothing was thrown');
}

/** Fails if any line of the PEM body (the key material) shows up in the error. */
function expectNoKeyMaterial(err: KeyFileError, pem: string): void {
  const bodyLines = pem.split('\n').filter((line) => line.length >= 16 && !line.startsWith('-----'));
  expect(bodyLines.length).toBeGreaterThan(0);
  const shown = [err.message, String(err), JSON.stringify(err.toLog()), err.stack ?? ''].join('\n');
  for (const line of bodyLines) {
    expect(shown).not.toContain(line);
    expect(shown).not.toContain(line.slice(0, 16));
  }
}

describe('loadPrivateKeyFile', () => {
  it('accepts a 0600 unencrypted PKCS#8 RSA key', () => {
    const key = loadPrivateKeyFile(keyFile(RSA_PKCS8, 0o600));
    expect(key.type).toBe('private');
    expect(key.asymmetricKeyType).toBe('rsa');
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(publicKeyBase64(key)).toBe(PUBLIC_B64);
  });

  it('accepts a 0400 key (owner read only)', () => {
    expect(loadPrivateKeyFile(keyFile(RSA_PKCS8, 0o400)).asymmetricKeyType).toBe('rsa');
  });

  it.each([
    ['0644', 0o644],
    ['0640', 0o640],
    ['0604', 0o604],
    ['0660', 0o660],
  ] as const)('refuses mode %s with the chmod hint and no key text', (label, mode) => {
    const path = keyFile(RSA_PKCS8, mode);
    const err = refusal(() => loadPrivateKeyFile(path));
    expect(err.code).toBe('KEY_PERMISSIONS');
    expect(err.message).toContain('chmod 600');
    expect(err.message).toContain(path);
    expect(err.message).toContain(`mode ${label}`);
    expectNoKeyMaterial(err, RSA_PKCS8);
  });

  it('refuses a missing file', () => {
    const err = refusal(() => loadPrivateKeyFile(join(dir, 'absent.pem')));
    expect(err.code).toBe('KEY_MISSING');
    expect(err.message).toContain('ENOENT');
  });

  it('refuses a PKCS#1 key with the conversion command', () => {
    const err = refusal(() => loadPrivateKeyFile(keyFile(RSA_PKCS1, 0o600)));
    expect(err.code).toBe('KEY_NOT_PKCS8');
    expect(err.message).toContain('PKCS#1');
    expect(err.message).toContain('openssl pkcs8 -topk8 -nocrypt');
    expectNoKeyMaterial(err, RSA_PKCS1);
  });

  it('refuses an EC key in PKCS#8 form', () => {
    const err = refusal(() => loadPrivateKeyFile(keyFile(EC_PKCS8, 0o600)));
    expect(err.code).toBe('KEY_NOT_RSA');
    expect(err.message).toContain('ec');
    expectNoKeyMaterial(err, EC_PKCS8);
  });

  it('refuses an encrypted PKCS#8 key', () => {
    const err = refusal(() => loadPrivateKeyFile(keyFile(RSA_ENCRYPTED, 0o600)));
    expect(err.code).toBe('KEY_ENCRYPTED');
    expectNoKeyMaterial(err, RSA_ENCRYPTED);
  });

  it('refuses a public key given in place of the private key', () => {
    expect(refusal(() => loadPrivateKeyFile(keyFile(PUBLIC_PEM, 0o600))).code).toBe('KEY_NOT_PKCS8');
  });

  it('refuses garbage, armoured or not, without quoting it', () => {
    const plain = 'this is not a key at all, just some text\n';
    expect(refusal(() => loadPrivateKeyFile(keyFile(plain, 0o600))).code).toBe('KEY_NOT_PKCS8');
    expect(refusal(() => loadPrivateKeyFile(keyFile('', 0o600))).code).toBe('KEY_NOT_PKCS8');

    const armoured = '-----BEGIN PRIVATE KEY-----\nQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n-----END PRIVATE KEY-----\n';
    const err = refusal(() => loadPrivateKeyFile(keyFile(armoured, 0o600)));
    expect(err.code).toBe('KEY_UNREADABLE');
    expectNoKeyMaterial(err, armoured);

    // A real key with its body damaged: the parser must not echo any of it.
    const lines = RSA_PKCS8.split('\n');
    lines[5] = '!!!!' + (lines[5] ?? '').slice(4);
    const damaged = lines.join('\n');
    const err2 = refusal(() => loadPrivateKeyFile(keyFile(damaged, 0o600)));
    expect(err2.code).toBe('KEY_UNREADABLE');
    expectNoKeyMaterial(err2, damaged);
  });
});

describe('parsePkcs8RsaPrivateKey', () => {
  it('names the source, not the key, in its errors', () => {
    const err = refusal(() => parsePkcs8RsaPrivateKey(RSA_PKCS1, 'config privateKeyFile'));
    expect(err.message.startsWith('config privateKeyFile:')).toBe(true);
    expectNoKeyMaterial(err, RSA_PKCS1);
  });
});

describe('public keys', () => {
  const privateKey = parsePkcs8RsaPrivateKey(RSA_PKCS8, 'fixture');

  it('publicKeyBase64 round-trips through parsePublicKey (Base64 DER and PEM)', () => {
    const b64 = publicKeyBase64(privateKey);
    expect(b64).toBe(PUBLIC_B64);
    expect(b64).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const fromB64 = parsePublicKey(b64);
    const fromPem = parsePublicKey(PUBLIC_PEM);
    expect(fromB64.type).toBe('public');
    expect(publicKeyBase64(fromB64)).toBe(b64);
    expect(publicKeyBase64(fromPem)).toBe(b64);
    expect(fromB64.equals(fromPem)).toBe(true);
  });

  it('parsePublicKey tolerates surrounding whitespace', () => {
    expect(publicKeyBase64(parsePublicKey(`\n  ${PUBLIC_B64}\n`))).toBe(PUBLIC_B64);
    expect(publicKeyBase64(parsePublicKey(`\n${PUBLIC_PEM}\n\n`))).toBe(PUBLIC_B64);
  });
});

describe('generateMerchantKeyPair', () => {
  it('makes a 2048-bit PKCS#8 RSA pair that signs, verifies and loads from a 0600 file', () => {
    const pair = generateMerchantKeyPair();
    expect(pair.privateKeyPem).toContain('-----BEGIN PRIVATE KEY-----');
    expect(pair.publicKeyPem).toContain('-----BEGIN PUBLIC KEY-----');

    const key = loadPrivateKeyFile(keyFile(pair.privateKeyPem, 0o600));
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(publicKeyBase64(key)).toBe(pair.publicKeyBase64);
    expect(publicKeyBase64(parsePublicKey(pair.publicKeyPem))).toBe(pair.publicKeyBase64);

    const signature = signRsa(key, 'POST:/apis/v1/access-token:x');
    expect(verifyRsa(parsePublicKey(pair.publicKeyBase64), 'POST:/apis/v1/access-token:x', signature)).toBe(true);
    // A different key pair does not verify it.
    expect(verifyRsa(parsePublicKey(PUBLIC_B64), 'POST:/apis/v1/access-token:x', signature)).toBe(false);
  });

  it('honours a different modulus length', () => {
    const pair = generateMerchantKeyPair(1024);
    const key = parsePkcs8RsaPrivateKey(pair.privateKeyPem, 'generated');
    expect(key.asymmetricKeyDetails?.modulusLength).toBe(1024);
  });
});

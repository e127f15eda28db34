/** Loading and making merchant RSA keys; a key file others can read, or not unencrypted PKCS#8 RSA, is refused. */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import { PayoutdError } from '../domain/errors.js';

export class KeyFileError extends PayoutdError {
  override readonly name = 'KeyFileError';
}

/** Parses a PKCS#8 PEM text; `source` names it in errors (never the key itself). */
export function parsePkcs8RsaPrivateKey(pem: string, source: string): KeyObject {
  if (pem.includes('BEGIN RSA PRIVATE KEY')) {
    throw new KeyFileError(
      'KEY_NOT_PKCS8',
      `${source}: this is a PKCS#1 key ("BEGIN RSA PRIVATE KEY"); convert it with ` +
        '`openssl pkcs8 -topk8 -nocrypt -in old.pem -out new.pem`',
    );
  }
  if (pem.includes('BEGIN ENCRYPTED PRIVATE KEY')) {
    throw new KeyFileError(
      'KEY_ENCRYPTED',
      `${source}: the key is encrypted; payoutd needs an unencrypted PKCS#8 key (protect it with file permissions or systemd credentials)`,
    );
  }
  if (!pem.includes('-----BEGIN PRIVATE KEY-----')) {
    throw new KeyFileError('KEY_NOT_PKCS8', `${source}: not a PKCS#8 PEM private key (expected "-----BEGIN PRIVATE KEY-----")`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch {
    // The parser's message could quote key material; give our own.
    throw new KeyFileError('KEY_UNREADABLE', `${source}: the PEM block could not be parsed as a private key`);
  }
  if (key.asymmetricKeyType !== 'rsa') {
    throw new KeyFileError(
      'KEY_NOT_RSA',
      `${source}: the key is ${key.asymmetricKeyType ?? 'of unknown type'}, but the API signs with RSA (SHA256withRSA)`,
    );
  }
  return key;
}

/**
 * What is wrong with the mode of a file that holds a secret (the private key, an API key, a signing secret, a
 * password), or null: group and others must have no access. A file in `credentialsDir` ($CREDENTIALS_DIRECTORY) is
 * exempt: systemd keeps that directory to the service, whatever the files' modes. Said after the file's name.
 */
export function secretFileModeProblem(path: string, mode: number, credentialsDir: string | null | undefined): string | null {
  const guarded = credentialsDir !== undefined && credentialsDir !== null && resolve(path).startsWith(`${resolve(credentialsDir)}${sep}`);
  if (guarded || (mode & 0o077) === 0) return null;
  return `has mode ${(mode & 0o777).toString(8).padStart(4, '0')}; it must not be readable by group or others (chmod 600 ${path})`;
}

/** Reads the merchant private key, refusing one readable by others outside `credentialsDir` ($CREDENTIALS_DIRECTORY). */
export function loadPrivateKeyFile(path: string, options: { credentialsDir?: string } = {}): KeyObject {
  let mode: number;
  try {
    mode = statSync(path).mode;
  } catch (err) {
    throw new KeyFileError('KEY_MISSING', `private key file ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const problem = secretFileModeProblem(path, mode, options.credentialsDir);
  if (problem !== null) throw new KeyFileError('KEY_PERMISSIONS', `private key file ${path} ${problem}`);
  return parsePkcs8RsaPrivateKey(readFileSync(path, 'utf8'), path);
}

/** Base64 of the SPKI DER: the PEM without armour and line breaks (spec 5.1). */
export function publicKeyBase64(key: KeyObject): string {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return (pub.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');
}

/** Accepts a public key as Base64 DER (onboarding form) or as PEM. */
export function parsePublicKey(text: string): KeyObject {
  const trimmed = text.trim();
  if (trimmed.includes('-----BEGIN')) return createPublicKey({ key: trimmed, format: 'pem' });
  return createPublicKey({ key: Buffer.from(trimmed, 'base64'), format: 'der', type: 'spki' });
}

export interface MerchantKeyPair {
  privateKeyPem: string;
  publicKeyPem: string;
  publicKeyBase64: string;
}

export function generateMerchantKeyPair(bits = 2048): MerchantKeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
    publicKeyBase64: publicKeyBase64(publicKey),
  };
}

/**
 * Signatures of outgoing webhooks as the Standard Webhooks specification
 * makes them, so a receiver can verify them with any of its libraries:
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`,
 * the key being the bytes of the `whsec_<base64>` secret.
 */
import { createHmac } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { secretInFile, type SecretFileRead } from '../config/index.js';
import { NotifyError } from './errors.js';

const PREFIX = 'whsec_';

/** The key bytes of a `whsec_…` secret; refuses anything else (a key of the wrong form would sign uselessly). */
export function signingKey(secret: string, where: string): Buffer {
  const text = secret.trim();
  const body = text.startsWith(PREFIX) ? text.slice(PREFIX.length) : null;
  const key = body !== null && /^[A-Za-z0-9+/]+={0,2}$/.test(body) ? Buffer.from(body, 'base64') : null;
  if (key === null || key.length < 16) {
    throw new NotifyError('NOTIFY_SECRET_FORM', `${where}: the signing secret must be whsec_ followed by at least 16 bytes in base64`);
  }
  return key;
}

/**
 * A secret kept in a file, or in the systemd credential of that name (`$CREDENTIALS_DIRECTORY`); read at each use.
 * `where`: the option the secret is, `notify.email.password`: its file is `<where>File`, its credential `<where>Credential`.
 * One group or others can read is SECRET_PERMISSIONS, an empty one SECRET_EMPTY, as for the other secrets (src/config).
 */
export function readSecretFile(
  where: string,
  file: string | undefined,
  credential: string | undefined,
  credentialsDir: string | null,
): string {
  const path = file ?? (credential !== undefined && credentialsDir !== null ? join(credentialsDir, credential) : null);
  if (path === null)
    throw new NotifyError('NOTIFY_SECRET_MISSING', `${where}: no secret file, and no credentials directory for ${credential}`);
  let read: SecretFileRead;
  try {
    read = { path, mode: statSync(path).mode, text: readFileSync(path, 'utf8') };
  } catch (err) {
    throw new NotifyError(
      'NOTIFY_SECRET_UNREADABLE',
      `${where}: ${path} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
    );
  }
  return secretInFile(read, file !== undefined ? `${where}File` : `${where}Credential`, credentialsDir);
}

/** The three headers of a signed delivery. `timestampSeconds`: when it is sent (the receiver checks it is recent). */
export function standardWebhookHeaders(key: Buffer, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature}` };
}

/**
 * Password hashes for console users: node's scrypt with a random salt per
 * password, stored as `scrypt$N$r$p$salt$hash` (base64) so the cost can be
 * raised later without making older hashes unreadable. Compared in
 * constant time.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { ConsoleError } from './errors.js';

const COST = { N: 16384, r: 8, p: 1 } as const;
const KEY_BYTES = 32;
/** Passwords shorter than this are refused when set. */
export const MIN_PASSWORD_LENGTH = 10;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFC'), salt, KEY_BYTES, { ...options, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

export function checkPasswordRules(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new ConsoleError('PASSWORD_TOO_SHORT', `the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
}

export async function hashPassword(password: string): Promise<string> {
  checkPasswordRules(password);
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `password` matches `stored`; false for a hash in a form this code did not write. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) return false;
  const expected = Buffer.from(parts[5] as string, 'base64');
  const key = await derive(password, Buffer.from(parts[4] as string, 'base64'), { N, r, p });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash no password matches: verified against when a name is unknown, so the answer takes as long. */
export const DECOY_HASH = `scrypt$${COST.N}$${COST.r}$${COST.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(KEY_BYTES).toString('base64')}`;

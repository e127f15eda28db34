/**
 * Who is asking: a session cookie from a console sign-in, or the user header
 * of a trusted reverse proxy (only when the connection comes from one of
 * `console.trustedProxies`). Sign-in with a password counts each attempt
 * before its check and locks a user out after `lockout.maxFailures` in a
 * row without a success. Every state-changing request must carry the CSRF token of its identity: a session's own random
 * token, or for a proxy user an HMAC of the name under a per-process key.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import {
  beginSignIn,
  deleteConsoleSession,
  endSignIn,
  getConsoleSession,
  getConsoleUser,
  uncountSignIn,
  type Database,
} from '../store/index.js';
import { DECOY_HASH, verifyPassword } from './passwords.js';
import { isRole, type Role } from './roles.js';

export const SESSION_COOKIE = 'payoutd_session';
/** Before sign-in: the double-submitted token of the sign-in form. */
export const PRE_SESSION_COOKIE = 'payoutd_pre';

export interface Identity {
  user: string;
  role: Role;
  csrfToken: string;
  via: 'session' | 'proxy';
  /** The session's cookie hash, to end it at sign-out. */
  sessionHash?: string;
}

export interface AccessOptions {
  db: Database;
  now(): number;
  sessionMs: number;
  trustedProxies: readonly string[];
  userHeader: string;
  lockout: { maxFailures: number; lockMs: number };
}

/**
 * A refusal says why for the log: `unknown-user` when no user has the name given (which may be a password typed
 * into the wrong box, so it is never logged); the page shows it as a wrong name or password, like `bad-credentials`.
 */
export type SignInResult = { ok: true; cookieValue: string } | { ok: false; why: 'unknown-user' | 'bad-credentials' | 'locked' };

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A connection's peer as written in trustedProxies: IPv4 addresses without their IPv6 wrapping. */
export function peerAddress(req: IncomingMessage): string {
  const a = req.socket.remoteAddress ?? '';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}

export function cookiesOf(req: IncomingMessage): Map<string, string> {
  const out = new Map<string, string>();
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return out;
}

export function sameToken(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class ConsoleAccess {
  private readonly proxyKey = randomBytes(32);

  constructor(private readonly options: AccessOptions) {}

  /** The identity of a request, or null (not signed in, an unknown or removed user, a header from an untrusted peer). */
  async identify(req: IncomingMessage): Promise<Identity | null> {
    const o = this.options;
    const header = req.headers[o.userHeader.toLowerCase()];
    if (typeof header === 'string' && header !== '' && o.trustedProxies.includes(peerAddress(req))) {
      const user = await getConsoleUser(o.db, header);
      if (!user || !isRole(user.role)) return null;
      return { user: user.name, role: user.role, csrfToken: this.proxyCsrf(user.name), via: 'proxy' };
    }
    const cookie = cookiesOf(req).get(SESSION_COOKIE);
    if (!cookie) return null;
    const sessionHash = sha256(cookie);
    const session = await getConsoleSession(o.db, sessionHash, o.now());
    if (!session) return null;
    const user = await getConsoleUser(o.db, session.userName);
    if (!user || !isRole(user.role)) return null;
    return { user: user.name, role: user.role, csrfToken: session.csrfToken, via: 'session', sessionHash };
  }

  private proxyCsrf(user: string): string {
    return createHmac('sha256', this.proxyKey).update(`csrf:${user}`).digest('hex');
  }

  /**
   * Checks a password; on success starts a session and returns its cookie value (shown to no one else).
   * The attempt is counted before the check (src/store/console-access.ts: beginSignIn), so no more than
   * `lockout.maxFailures` passwords are checked before a lock, however many arrive at once; a counted attempt
   * whose password matches signs in, whatever lock the others set meanwhile.
   */
  async signIn(name: string, password: string): Promise<SignInResult> {
    const o = this.options;
    const start = name === '' ? ({ kind: 'unknown-user' } as const) : await beginSignIn(o.db, name, o.lockout, o.now());
    if (start.kind === 'locked') return { ok: false, why: 'locked' };
    if (start.kind !== 'counted') {
      // The hash is checked even for an unknown name, so timing does not tell which names exist.
      await verifyPassword(password, DECOY_HASH);
      return { ok: false, why: start.kind === 'unknown-user' ? 'unknown-user' : 'bad-credentials' };
    }
    if (!(await verifyPassword(password, start.passwordHash))) return { ok: false, why: 'bad-credentials' };
    const now = o.now();
    const cookieValue = randomBytes(32).toString('base64url');
    let ended: 'ok' | 'changed';
    try {
      ended = await endSignIn(o.db, start, {
        idHash: sha256(cookieValue),
        userName: name,
        csrfToken: randomBytes(32).toString('hex'),
        createdAt: now,
        expiresAt: now + o.sessionMs,
      });
    } catch (err) {
      // The right password must not count towards a lock-out because the database was busy; the original
      // error is still the answer, and a failure to take the count back is no worse than not trying.
      await uncountSignIn(o.db, name, start, o.lockout, now).catch(() => undefined);
      throw err;
    }
    if (ended !== 'ok') return { ok: false, why: 'bad-credentials' };
    return { ok: true, cookieValue };
  }

  async signOut(identity: Identity): Promise<void> {
    if (identity.sessionHash) await deleteConsoleSession(this.options.db, identity.sessionHash);
  }
}

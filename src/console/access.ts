/**
 * Who is asking: a session cookie from a console sign-in, or the user header
 * of a trusted reverse proxy (only when the connection comes from one of
 * `console.trustedProxies`). Sign-in with a password counts each attempt
 * before its check and locks a name out from a client address after
 * `lockout.maxFailures` in a row from there without a success. Every
 * state-changing request must carry the CSRF token of its identity: a
 * session's own random token, or for a proxy user an HMAC of the name under
 * a per-process key.
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
  type SignInLockout,
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
  lockout: SignInLockout;
}

/**
 * A refusal says why for the log: `unknown-user` when no user has the name given. `known` false: no such
 * user, so the name may be a password typed into the wrong box and is never logged. The page shows
 * `unknown-user` as a wrong name or password, like `bad-credentials`, and `locked` alike for either.
 */
export type SignInResult =
  { ok: true; cookieValue: string } | { ok: false; why: 'unknown-user' | 'bad-credentials' | 'locked'; known: boolean };

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

const unwrapped = (a: string): string => (a.startsWith('::ffff:') ? a.slice(7) : a);

/** A connection's peer as written in trustedProxies: IPv4 addresses without their IPv6 wrapping. */
export function peerAddress(req: IncomingMessage): string {
  return unwrapped(req.socket.remoteAddress ?? '');
}

/**
 * The client a sign-in's failures are counted for: the connection's peer, or behind one of `trustedProxies`
 * the address that proxy appended last to X-Forwarded-For (the ones before it are the client's own say).
 */
export function clientAddress(req: IncomingMessage, trustedProxies: readonly string[]): string {
  const peer = peerAddress(req);
  const forwarded = req.headers['x-forwarded-for'];
  if (typeof forwarded !== 'string' || !trustedProxies.includes(peer)) return peer;
  const last = forwarded.split(',').pop()?.trim() ?? '';
  return last === '' ? peer : unwrapped(last).slice(0, 64);
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
   * Checks a password from a client address; on success starts a session and returns its cookie value (shown
   * to no one else). The attempt is counted for the name from that address before the check
   * (src/store/console-access.ts: beginSignIn), so no more than `lockout.maxFailures` passwords are checked
   * before a lock, however many arrive at once; a counted attempt whose password matches signs in, whatever
   * lock the others set meanwhile. An unknown name is counted, locked and checked (against a decoy hash) as
   * a known one, so neither the answer nor its timing tells which names exist.
   */
  async signIn(name: string, password: string, address: string): Promise<SignInResult> {
    const o = this.options;
    const at = { name, address };
    const start = await beginSignIn(o.db, at, o.lockout, o.now());
    if (start.kind === 'locked') return { ok: false, why: 'locked', known: start.known };
    const matched = await verifyPassword(password, start.passwordHash ?? DECOY_HASH);
    const refused = { ok: false, why: start.known ? 'bad-credentials' : 'unknown-user', known: start.known } as const;
    if (!matched || start.passwordHash === null) return refused;
    const now = o.now();
    const cookieValue = randomBytes(32).toString('base64url');
    let ended: 'ok' | 'changed';
    try {
      ended = await endSignIn(o.db, { ...start, passwordHash: start.passwordHash }, address, {
        idHash: sha256(cookieValue),
        userName: name,
        csrfToken: randomBytes(32).toString('hex'),
        createdAt: now,
        expiresAt: now + o.sessionMs,
      });
    } catch (err) {
      // The right password must not count towards a lock-out because the database was busy; the original
      // error is still the answer, and a failure to take the count back is no worse than not trying.
      await uncountSignIn(o.db, at, start, o.lockout, now).catch(() => undefined);
      throw err;
    }
    if (ended !== 'ok') return refused;
    return { ok: true, cookieValue };
  }

  async signOut(identity: Identity): Promise<void> {
    if (identity.sessionHash) await deleteConsoleSession(this.options.db, identity.sessionHash);
  }
}

/**
 * Console users and sign-in on a real SQLite file: scrypt hashes that verify
 * only their password, the lock-out after repeated failures (and its end),
 * sessions that expire and end when the password or role changes, and the
 * proxy's user header believed only from a configured address; sign-in
 * beside another process that holds the write lock.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { clientAddress, ConsoleAccess, SESSION_COOKIE } from '../../src/console/access.js';
import { addUser, hashPassword, listUsers, removeUser, setPassword, setRole, unlockUser, verifyPassword } from '../../src/console/index.js';
import { closeDatabase, type Database } from '../../src/store/index.js';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { checkSignInLockout, HERE, pairOf } from '../store/sign-in-lockout.js';
import { openTestDatabase, TEST_DATABASE_FILE, useTestDatabase, writeLockHeldElsewhere } from '../support/database.js';

/** A request as node:http would hand it over, from `address`, with these headers. */
function request(address: string, headers: Record<string, string>): IncomingMessage {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: address });
  const req = new IncomingMessage(socket);
  for (const [k, v] of Object.entries(headers)) req.headers[k.toLowerCase()] = v;
  return req;
}

describe('console passwords', () => {
  it('a scrypt hash verifies its password and no other, and differs each time (salted)', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery', a)).toBe(true);
    expect(await verifyPassword('correct horse batterY', a)).toBe(false);
    expect(await verifyPassword('correct horse battery', 'plain')).toBe(false);
  });

  it('refuses a short password', async () => {
    await expect(hashPassword('short')).rejects.toMatchObject({ code: 'PASSWORD_TOO_SHORT' });
  });
});

describe('console access', () => {
  const t = useTestDatabase('payoutd-console-access-');
  let now = 1_000_000;
  const access = (trustedProxies: string[] = []): ConsoleAccess =>
    new ConsoleAccess({
      db: t.db,
      now: () => now,
      sessionMs: 60_000,
      trustedProxies,
      userHeader: 'Remote-User',
      lockout: { maxFailures: 3, lockMs: 10_000 },
    });

  it('signs in with the right password, and the cookie identifies the user until the session expires', async () => {
    await addUser(t.db, 'alice', 'uploader', 'correct horse battery', now);
    const a = access();
    const result = await a.signIn('alice', 'correct horse battery', HERE);
    expect(result.ok).toBe(true);
    const cookie = result.ok ? result.cookieValue : '';
    const who = await a.identify(request('127.0.0.1', { cookie: `${SESSION_COOKIE}=${cookie}` }));
    expect(who).toMatchObject({ user: 'alice', role: 'uploader', via: 'session' });
    expect(who?.csrfToken).toMatch(/^[0-9a-f]{64}$/);
    expect(await a.identify(request('127.0.0.1', { cookie: `${SESSION_COOKIE}=${cookie}x` }))).toBeNull();
    now += 60_001;
    expect(await a.identify(request('127.0.0.1', { cookie: `${SESSION_COOKIE}=${cookie}` }))).toBeNull();
  });

  it('locks a user out after repeated failures, even for the right password, until the lock ends or an admin unlocks', async () => {
    await addUser(t.db, 'bob', 'approver', 'correct horse battery', now);
    const a = access();
    for (let i = 0; i < 3; i++)
      expect(await a.signIn('bob', 'wrong password!', HERE)).toEqual({ ok: false, why: 'bad-credentials', known: true });
    expect(await a.signIn('bob', 'correct horse battery', HERE)).toEqual({ ok: false, why: 'locked', known: true });
    expect((await pairOf(t.db, 'bob')).lockedUntil).toBe(now + 10_000);
    now += 10_001;
    expect((await a.signIn('bob', 'correct horse battery', HERE)).ok).toBe(true);
    for (let i = 0; i < 3; i++) await a.signIn('bob', 'wrong password!', HERE);
    expect((await a.signIn('bob', 'correct horse battery', HERE)).ok).toBe(false);
    await unlockUser(t.db, 'bob');
    expect((await a.signIn('bob', 'correct horse battery', HERE)).ok).toBe(true);
  });

  it('a success in between starts the count again', async () => {
    await addUser(t.db, 'carol', 'viewer', 'correct horse battery', now);
    const a = access();
    await a.signIn('carol', 'wrong password!', HERE);
    await a.signIn('carol', 'wrong password!', HERE);
    expect((await a.signIn('carol', 'correct horse battery', HERE)).ok).toBe(true);
    await a.signIn('carol', 'wrong password!', HERE);
    await a.signIn('carol', 'wrong password!', HERE);
    expect((await a.signIn('carol', 'correct horse battery', HERE)).ok).toBe(true);
  });

  it('counts attempts before their check: no more than the limit are checked at once (test/store/sign-in-lockout.ts)', () =>
    checkSignInLockout(t.db));

  it('an unknown name and a proxy-only user cannot sign in with a password', async () => {
    await addUser(t.db, 'dave', 'viewer', null, now);
    const a = access();
    expect(await a.signIn('nobody', 'correct horse battery', HERE)).toEqual({ ok: false, why: 'unknown-user', known: false });
    expect(await a.signIn('dave', '', HERE)).toEqual({ ok: false, why: 'bad-credentials', known: true });
  });

  it('changing the password or the role, or removing the user, ends their sessions', async () => {
    await addUser(t.db, 'erin', 'admin', 'correct horse battery', now);
    const a = access();
    const cookieOf = async (): Promise<string> => {
      const r = await a.signIn('erin', 'correct horse battery', HERE);
      return `${SESSION_COOKIE}=${r.ok ? r.cookieValue : ''}`;
    };
    let cookie = await cookieOf();
    await setRole(t.db, 'erin', 'viewer', now);
    expect(await a.identify(request('127.0.0.1', { cookie }))).toBeNull();
    cookie = await cookieOf();
    expect((await a.identify(request('127.0.0.1', { cookie })))?.role).toBe('viewer');
    await setPassword(t.db, 'erin', 'another good password', now);
    expect(await a.identify(request('127.0.0.1', { cookie }))).toBeNull();
    expect((await a.signIn('erin', 'correct horse battery', HERE)).ok).toBe(false);
    const r = await a.signIn('erin', 'another good password', HERE);
    cookie = `${SESSION_COOKIE}=${r.ok ? r.cookieValue : ''}`;
    await removeUser(t.db, 'erin');
    expect(await a.identify(request('127.0.0.1', { cookie }))).toBeNull();
    expect(await listUsers(t.db, now)).toEqual([]);
  });

  it('counts sign-ins for the connection, or behind a trusted proxy for the address it forwarded last', () => {
    const forwarded = { 'X-Forwarded-For': '203.0.113.7, 198.51.100.2' };
    expect(clientAddress(request('::ffff:10.0.0.5', forwarded), [])).toBe('10.0.0.5');
    expect(clientAddress(request('127.0.0.1', forwarded), ['127.0.0.1'])).toBe('198.51.100.2');
    expect(clientAddress(request('127.0.0.1', {}), ['127.0.0.1'])).toBe('127.0.0.1');
  });

  it('believes the user header only from a trusted proxy, and only for a known user', async () => {
    await addUser(t.db, 'frank', 'approver', null, now);
    const trusting = access(['10.0.0.5']);
    expect(await trusting.identify(request('10.0.0.5', { 'remote-user': 'frank' }))).toMatchObject({ user: 'frank', via: 'proxy' });
    expect(await trusting.identify(request('::ffff:10.0.0.5', { 'remote-user': 'frank' }))).toMatchObject({ user: 'frank' });
    expect(await trusting.identify(request('10.0.0.6', { 'remote-user': 'frank' }))).toBeNull();
    expect(await trusting.identify(request('10.0.0.5', { 'remote-user': 'mallory' }))).toBeNull();
    expect(await access().identify(request('10.0.0.5', { 'remote-user': 'frank' }))).toBeNull();
  });

  it('refuses bad names and roles when adding', async () => {
    await expect(addUser(t.db, '../x', 'viewer', null, now)).rejects.toMatchObject({ code: 'BAD_USER_NAME' });
    await expect(addUser(t.db, 'gina', 'root', null, now)).rejects.toMatchObject({ code: 'BAD_ROLE' });
    await addUser(t.db, 'gina', 'viewer', null, now);
    await expect(addUser(t.db, 'gina', 'viewer', null, now)).rejects.toMatchObject({ code: 'USER_EXISTS' });
  });
});

describe('console sign-in while another process holds the write lock', () => {
  const PASSWORD = 'correct horse battery';
  const LOCKOUT = { maxFailures: 3, lockMs: 60_000 };
  let dir = '';
  let db: Database | null = null;
  const open = async (busyTimeoutMs: number): Promise<{ db: Database; file: string }> => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-console-busy-'));
    db = await openTestDatabase(dir, busyTimeoutMs);
    return { db, file: join(dir, TEST_DATABASE_FILE) };
  };
  afterEach(async () => {
    if (db !== null) await closeDatabase(db);
    db = null;
    await rm(dir, { recursive: true, force: true });
  });
  const accessTo = (d: Database): ConsoleAccess =>
    new ConsoleAccess({ db: d, now: () => Date.now(), sessionMs: 60_000, trustedProxies: [], userHeader: 'Remote-User', lockout: LOCKOUT });

  it('answers a name locked out from an address without waiting for the lock, known or not', async () => {
    const { db: d, file } = await open(50);
    await addUser(d, 'hal', 'viewer', PASSWORD, Date.now());
    const a = accessTo(d);
    for (const name of ['hal', 'nobody']) for (let i = 0; i < LOCKOUT.maxFailures; i++) await a.signIn(name, 'wrong password!', HERE);
    const other = openSqlite(file);
    other.exec('BEGIN IMMEDIATE');
    try {
      expect(await a.signIn('nobody', PASSWORD, HERE)).toEqual({ ok: false, why: 'locked', known: false });
      expect(await a.signIn('hal', PASSWORD, HERE)).toEqual({ ok: false, why: 'locked', known: true });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
  });

  it('takes a right password whose session could not be written back off the count, so retries cannot lock out', async () => {
    // Each wait for the write lock (the session's, then the take-back's) is 2.5 s; the other process holds it 4.5 s
    // from the count: the session's wait ends before it lets go when the check takes under 2 s, the take-back's after.
    const { db: d, file } = await open(2500);
    await addUser(d, 'jo', 'viewer', PASSWORD, Date.now());
    const probe = openSqlite(file, { timeout: 0 });
    let lockExpected = false;
    let readings = 0;
    // The clock's second reading of a sign-in comes after the password check, before the session is written:
    // there it waits until the other process holds the write lock, however long the check took.
    const now = (): number => {
      if (lockExpected && ++readings % 2 === 0) {
        const deadline = Date.now() + 10_000;
        for (;;) {
          try {
            probe.exec('BEGIN IMMEDIATE');
            probe.exec('ROLLBACK');
          } catch {
            break;
          }
          if (Date.now() > deadline) throw new Error('no other process took the write lock');
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
        }
      }
      return Date.now();
    };
    const a = new ConsoleAccess({ db: d, now, sessionMs: 60_000, trustedProxies: [], userHeader: 'Remote-User', lockout: LOCKOUT });
    try {
      lockExpected = true;
      for (let i = 0; i < LOCKOUT.maxFailures; i++) {
        // Taken once this attempt is counted; held past the session's wait, not past the take-back's.
        const holder = await writeLockHeldElsewhere(file, 4500, [], ['select 1 from console_sign_in_failures where failed_attempts > 0']);
        await expect(a.signIn('jo', PASSWORD, HERE)).rejects.toMatchObject({ code: 'DATABASE_BUSY' });
        await holder.released;
        expect(await pairOf(d, 'jo')).toMatchObject({ failedAttempts: 0, lockedUntil: null });
      }
      lockExpected = false;
      expect((await a.signIn('jo', PASSWORD, HERE)).ok).toBe(true);
    } finally {
      probe.close();
    }
  }, 60_000);
});

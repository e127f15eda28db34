/**
 * The console's sign-in lock-out, checked on a real database of either engine (SQLite in test/console,
 * PostgreSQL in test/postgres): attempts sent at once are counted before their check, so no more than
 * the limit are checked; a right password among the attempts checked signs in and lifts its own lock, not
 * one the others set; a right password whose session could not be written is taken back off the count.
 */
import { expect } from 'vitest';
import { ConsoleAccess } from '../../src/console/access.js';
import { addUser, setPassword } from '../../src/console/index.js';
import type { Database } from '../../src/store/db.js';
import { beginSignIn, endSignIn, nameHash, uncountSignIn } from '../../src/store/console-access.js';

const PASSWORD = 'a long enough password';
const LOCKOUT = { maxFailures: 3, lockMs: 60_000 };
/** The client address of these tests' sign-ins. */
export const HERE = '192.0.2.1';

/** A name's count and lock from `address`, as stored. */
export async function pairOf(db: Database, name: string, address = HERE): Promise<{ failedAttempts: number; lockedUntil: number | null }> {
  const row = (await db('console_sign_in_failures')
    .where({ name_hash: nameHash(name), address })
    .first('failed_attempts', 'locked_until')) as { failed_attempts: number; locked_until: number | null } | undefined;
  return { failedAttempts: row?.failed_attempts ?? 0, lockedUntil: row?.locked_until == null ? null : Number(row.locked_until) };
}

export async function checkSignInLockout(db: Database): Promise<void> {
  const now = 1_000_000;
  const access = new ConsoleAccess({
    db,
    now: () => now,
    sessionMs: 1000,
    trustedProxies: [],
    userHeader: 'Remote-User',
    lockout: LOCKOUT,
  });
  const session = (userName: string) => ({
    idHash: `${userName}-session`,
    userName,
    csrfToken: 'c',
    createdAt: now,
    expiresAt: now + 1000,
  });
  const counted = async (name: string) => {
    const start = await beginSignIn(db, { name: name, address: HERE }, LOCKOUT, now);
    if (start.kind !== 'counted') throw new Error(`${name}: not counted but ${start.kind}`);
    return { ...start, passwordHash: start.passwordHash ?? '' };
  };
  for (const name of ['ana', 'bo', 'cy', 'di']) await addUser(db, name, 'viewer', PASSWORD, now);

  // Wrong guesses all at once: the limit's worth are checked, the rest refused unchecked.
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => access.signIn('ana', `wrong guess ${i}`, HERE)));
  expect(answers.filter((a) => !a.ok && a.why === 'bad-credentials')).toHaveLength(LOCKOUT.maxFailures);
  expect(answers.filter((a) => !a.ok && a.why === 'locked')).toHaveLength(12 - LOCKOUT.maxFailures);
  expect(await pairOf(db, 'ana')).toMatchObject({ failedAttempts: 0, lockedUntil: now + LOCKOUT.lockMs });
  expect(await access.signIn('ana', PASSWORD, HERE)).toEqual({ ok: false, why: 'locked', known: true });

  // The right password is being checked while other attempts reach the limit: it was one of the checks
  // allowed, so it signs in, but the lock the others set stays.
  const right = await counted('bo');
  for (let i = 1; i < LOCKOUT.maxFailures; i++) await counted('bo');
  expect(await beginSignIn(db, { name: 'bo', address: HERE }, LOCKOUT, now)).toEqual({ kind: 'locked', known: true });
  expect(await endSignIn(db, right, HERE, session('bo'))).toBe('ok');
  expect(await pairOf(db, 'bo')).toMatchObject({ failedAttempts: 0, lockedUntil: now + LOCKOUT.lockMs });
  expect(await db('console_sessions').where({ user_name: 'bo' })).toHaveLength(1);

  // The right password as the attempt that reaches the limit: it set the lock, and its success lifts it.
  for (let i = 1; i < LOCKOUT.maxFailures; i++) await counted('cy');
  const last = await counted('cy');
  expect(last.ownLock).toBe(now + LOCKOUT.lockMs);
  expect(await endSignIn(db, last, HERE, session('cy'))).toBe('ok');
  expect(await pairOf(db, 'cy')).toMatchObject({ failedAttempts: 0, lockedUntil: null });

  // As many right passwords at once as the limit allows: every one signs in.
  await addUser(db, 'ed', 'viewer', PASSWORD, now);
  const rights = await Promise.all(Array.from({ length: LOCKOUT.maxFailures }, () => access.signIn('ed', PASSWORD, HERE)));
  expect(rights.map((r) => r.ok)).toEqual(Array.from({ length: LOCKOUT.maxFailures }, () => true));
  expect(await pairOf(db, 'ed')).toMatchObject({ failedAttempts: 0, lockedUntil: null });

  // Wrong guesses and the right password at once, within the limit: every one is checked and the right one
  // signs in. Whether a lock stays depends on which attempt a connection counted last: 'bo' and 'cy' above
  // pin both outcomes.
  await addUser(db, 'flo', 'viewer', PASSWORD, now);
  const mixed = await Promise.all(
    Array.from({ length: LOCKOUT.maxFailures }, (_, i) => access.signIn('flo', i === 0 ? PASSWORD : `wrong guess ${i}`, HERE)),
  );
  expect(mixed[0]?.ok).toBe(true);
  expect(mixed.slice(1)).toEqual(
    Array.from({ length: LOCKOUT.maxFailures - 1 }, () => ({ ok: false, why: 'bad-credentials', known: true })),
  );

  // A right password whose session was not written is taken back off the count: one failure less, or the
  // lock it set by reaching the limit lifted.
  await addUser(db, 'gil', 'viewer', PASSWORD, now);
  await counted('gil');
  const notEnded = await counted('gil');
  await uncountSignIn(db, { name: 'gil', address: HERE }, notEnded, LOCKOUT, now);
  expect(await pairOf(db, 'gil')).toMatchObject({ failedAttempts: 1, lockedUntil: null });
  await counted('gil');
  const locking = await counted('gil');
  expect(await pairOf(db, 'gil')).toMatchObject({ lockedUntil: now + LOCKOUT.lockMs });
  await uncountSignIn(db, { name: 'gil', address: HERE }, locking, LOCKOUT, now);
  expect(await pairOf(db, 'gil')).toMatchObject({ failedAttempts: LOCKOUT.maxFailures - 1, lockedUntil: null });

  // A password changed while the old one was being checked: no session.
  const old = await counted('di');
  await setPassword(db, 'di', 'another good password', now);
  expect(await endSignIn(db, old, HERE, session('di'))).toBe('changed');
  expect(await db('console_sessions').where({ user_name: 'di' })).toEqual([]);

  // Guesses at many names from one address: once the address has used up its failures across names, every name
  // is refused from there, known or not, right password or not, while other addresses are not; until lockMs has
  // passed since.
  const capped = { ...LOCKOUT, maxFailuresPerAddress: 7 };
  const THERE = '198.51.100.7';
  const from = (name: string, at = THERE, when = now) => beginSignIn(db, { name, address: at }, capped, when);
  // Names whose kept hashes differ (names sharing them share a count).
  for (const name of ['guess-a', 'guess-b', 'guess-c']) for (let i = 0; i < 2; i++) expect((await from(name)).kind).toBe('counted');
  expect((await from('guess-d')).kind).toBe('counted');
  expect(await from('guess-e')).toEqual({ kind: 'locked', known: false });
  expect(await from('ana')).toEqual({ kind: 'locked', known: true });
  expect((await from('ana', '198.51.100.8')).kind).toBe('counted');
  expect((await from('guess-e', THERE, now + LOCKOUT.lockMs + 1)).kind).toBe('counted');
  // A lock set from the address counts as the failures that set it.
  const OTHER = '198.51.100.9';
  for (let i = 0; i < LOCKOUT.maxFailures; i++) expect((await from('y1', OTHER)).kind).toBe('counted');
  for (let i = 0; i < capped.maxFailuresPerAddress - LOCKOUT.maxFailures; i++)
    expect((await from(`y${i + 2}`, OTHER)).kind).toBe('counted');
  expect(await from('y9', OTHER)).toEqual({ kind: 'locked', known: false });
}

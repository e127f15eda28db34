/**
 * The finance console's users and sessions. A user has a role and, unless
 * the reverse proxy signs them in, a password hash (made by src/console);
 * sign-in attempts count towards a lock-out of a name from one client
 * address before their password is checked. A session is stored as the SHA-256 of its cookie value, so the
 * database never holds a usable cookie.
 */
import { createHash } from 'node:crypto';
import { isPostgres, writeTransaction, type Database } from './db.js';
import { fromColumnValues, toColumnValues } from './columns.js';

export interface ConsoleUserRecord {
  name: string;
  role: string;
  /** Null: the user signs in only through the reverse proxy's user header. */
  passwordHash: string | null;
  createdAt: number;
  updatedAt: number;
}

const USER_COLUMNS: Record<keyof ConsoleUserRecord, string> = {
  name: 'name',
  role: 'role',
  passwordHash: 'password_hash',
  createdAt: 'created_at',
  updatedAt: 'updated_at',
};

export interface ConsoleSessionRecord {
  idHash: string;
  userName: string;
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

const SESSION_COLUMNS: Record<keyof ConsoleSessionRecord, string> = {
  idHash: 'id_hash',
  userName: 'user_name',
  csrfToken: 'csrf_token',
  createdAt: 'created_at',
  expiresAt: 'expires_at',
};

export async function getConsoleUser(db: Database, name: string): Promise<ConsoleUserRecord | undefined> {
  const r = (await db('console_users').where({ name }).first()) as Record<string, unknown> | undefined;
  return r ? fromColumnValues<ConsoleUserRecord>(USER_COLUMNS, r) : undefined;
}

export async function listConsoleUsers(db: Database): Promise<ConsoleUserRecord[]> {
  const rows = (await db('console_users').orderBy('name')) as Record<string, unknown>[];
  return rows.map((r) => fromColumnValues<ConsoleUserRecord>(USER_COLUMNS, r));
}

export async function insertConsoleUser(db: Database, user: ConsoleUserRecord): Promise<void> {
  await db('console_users').insert(toColumnValues(USER_COLUMNS, user));
}

/** Changes a user; false when there is no such user. */
export async function updateConsoleUser(
  db: Database,
  name: string,
  patch: Partial<Omit<ConsoleUserRecord, 'name' | 'createdAt'>>,
  now: number,
): Promise<boolean> {
  const n = await db('console_users')
    .where({ name })
    .update(toColumnValues(USER_COLUMNS, { ...patch, updatedAt: now }));
  return n === 1;
}

/** Removes a user and their sessions; false when there is no such user. */
export async function deleteConsoleUser(db: Database, name: string): Promise<boolean> {
  return writeTransaction(db, async (trx) => {
    await trx('console_sessions').where({ user_name: name }).delete();
    return (await trx('console_users').where({ name }).delete()) === 1;
  });
}

const FAILURES = 'console_sign_in_failures';

/**
 * The key of a name's failures: the first 3 hex digits of its SHA-256. A password typed into the name box is
 * stored, so a whole hash would give it to a dictionary; names sharing a key from one address share a count.
 */
export function nameHash(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 3);
}

interface FailureRow {
  failed_attempts: number;
  locked_until: number | null;
}

/** Whose failures: a name (known or not) from one client address. */
export interface SignInPlace {
  name: string;
  address: string;
}

/** A pair's failures. `forUpdate`: read to change them in the same transaction (locked on PostgreSQL). */
async function failureRow(db: Database, at: SignInPlace, forUpdate = true): Promise<FailureRow | undefined> {
  const q = db(FAILURES).where({ name_hash: nameHash(at.name), address: at.address });
  return (await (forUpdate && isPostgres(db) ? q.forUpdate() : q).first('failed_attempts', 'locked_until')) as FailureRow | undefined;
}

const lockedAt = (row: FailureRow | undefined, now: number): boolean => row?.locked_until != null && row.locked_until > now;

/** The console's lock-out settings (`console.lockout`). */
export interface SignInLockout {
  maxFailures: number;
  lockMs: number;
  /** Failures from one address across every name that lock the address out (absent: no such limit). */
  maxFailuresPerAddress?: number;
}

/**
 * Whether an address has used up its failures across every name in the last `lockMs`: each name's count from
 * there, and a lock set from there as the `maxFailures` failures that set it. A success clears its own name's.
 */
async function addressSpent(db: Database, address: string, lockout: SignInLockout, now: number): Promise<boolean> {
  const cap = lockout.maxFailuresPerAddress;
  if (cap === undefined) return false;
  const rows = (await db(FAILURES)
    .where({ address })
    .andWhere('updated_at', '>', now - lockout.lockMs)
    .select('failed_attempts', 'locked_until')) as FailureRow[];
  return rows.reduce((n, r) => n + r.failed_attempts + (lockedAt(r, now) ? lockout.maxFailures : 0), 0) >= cap;
}

/**
 * A sign-in's start: `locked`, or `counted` with the user's password hash to check (null: no such user or
 * one without a password, checked against a decoy all the same). `ownLock`: the lock this attempt set by
 * reaching the limit, which taking it back or its success lifts.
 */
export type SignInStart =
  { kind: 'locked'; known: boolean } | { kind: 'counted'; known: boolean; passwordHash: string | null; ownLock: number | null };

/**
 * Counts a sign-in attempt of a name from an address as failed before its password is checked, in one
 * transaction with the lock check, so parallel attempts cannot all pass a check made before any failure is
 * counted: while the pair's lock is in force none is counted or checked, and the attempt that reaches
 * `maxFailures` sets the lock itself (the count starts again after it). An address that has used up
 * `maxFailuresPerAddress` across names is refused for every name. A known name and an unknown one take the same
 * path. A locked pair is answered from a plain read, without waiting for the write lock. Pairs quiet
 * for `lockMs` are forgotten on the way, so guesses at many names cannot grow the table without end.
 */
export async function beginSignIn(db: Database, at: SignInPlace, lockout: SignInLockout, now: number): Promise<SignInStart> {
  const user = (await db('console_users').where({ name: at.name }).first('password_hash')) as { password_hash: string | null } | undefined;
  const known = user !== undefined;
  if (lockedAt(await failureRow(db, at, false), now) || (await addressSpent(db, at.address, lockout, now)))
    return { kind: 'locked', known };
  return writeTransaction(db, async (trx) => {
    await trx(FAILURES)
      .where('updated_at', '<=', now - lockout.lockMs)
      .andWhere((q) => q.whereNull('locked_until').orWhere('locked_until', '<=', now))
      .delete();
    const key = { name_hash: nameHash(at.name), address: at.address };
    await trx(FAILURES)
      .insert({ ...key, failed_attempts: 0, locked_until: null, updated_at: now })
      .onConflict(['name_hash', 'address'])
      .ignore();
    const row = (await failureRow(trx, at)) as FailureRow;
    if (lockedAt(row, now) || (await addressSpent(trx, at.address, lockout, now))) return { kind: 'locked', known };
    const attempts = (row.locked_until === null ? row.failed_attempts : 0) + 1;
    const ownLock = attempts >= lockout.maxFailures ? now + lockout.lockMs : null;
    await trx(FAILURES)
      .where(key)
      .update({ failed_attempts: ownLock === null ? attempts : 0, locked_until: ownLock, updated_at: now });
    return { kind: 'counted', known, passwordHash: user?.password_hash ?? null, ownLock };
  });
}

/**
 * Ends a sign-in that was counted and whose password matched: clears the pair's count and its own lock and
 * starts `session`, in one transaction, unless the password was changed or the user removed meanwhile
 * (`changed`). A lock set by other attempts since stays (they may be a guesser's from the same address), but
 * does not refuse this one: it was one of the checks the lock-out allows, and refusing it would tell by its
 * answer which guess of a burst was right. Expired sessions are removed on the way.
 */
export async function endSignIn(
  db: Database,
  start: { passwordHash: string; ownLock: number | null },
  address: string,
  session: ConsoleSessionRecord,
): Promise<'ok' | 'changed'> {
  const now = session.createdAt;
  const at = { name: session.userName, address };
  return writeTransaction(db, async (trx) => {
    const user = (await trx('console_users').where({ name: at.name }).first('password_hash')) as
      { password_hash: string | null } | undefined;
    if (user?.password_hash !== start.passwordHash) return 'changed';
    const row = await failureRow(trx, at);
    if (row && (!lockedAt(row, now) || row.locked_until === start.ownLock)) {
      await trx(FAILURES)
        .where({ name_hash: nameHash(at.name), address })
        .delete();
    }
    await deleteConsoleSessions(trx, { expiredAt: now });
    await insertConsoleSession(trx, session);
    return 'ok';
  });
}

/**
 * Takes back the count of an attempt whose password matched but whose `endSignIn` failed (the database busy,
 * say), so retrying the right password cannot lock its user out: one failure less, or, when the lock this
 * attempt set is still the pair's, that lock lifted.
 */
export async function uncountSignIn(
  db: Database,
  at: SignInPlace,
  start: { ownLock: number | null },
  lockout: { maxFailures: number },
  now: number,
): Promise<void> {
  await writeTransaction(db, async (trx) => {
    const row = await failureRow(trx, at);
    const key = { name_hash: nameHash(at.name), address: at.address };
    if (start.ownLock !== null && row?.locked_until === start.ownLock) {
      await trx(FAILURES)
        .where(key)
        .update({ failed_attempts: Math.max(lockout.maxFailures - 1, 0), locked_until: null, updated_at: now });
    } else if (row && row.locked_until === null && row.failed_attempts > 0) {
      await trx(FAILURES)
        .where(key)
        .update({ failed_attempts: row.failed_attempts - 1, updated_at: now });
    }
  });
}

/** The addresses a name is locked out from now, and until when. */
export async function signInLocks(db: Database, name: string, now: number): Promise<{ address: string; lockedUntil: number }[]> {
  const rows = (await db(FAILURES)
    .where({ name_hash: nameHash(name) })
    .andWhere('locked_until', '>', now)
    .orderBy('address')
    .select('address', 'locked_until')) as { address: string; locked_until: number }[];
  return rows.map((r) => ({ address: r.address, lockedUntil: Number(r.locked_until) }));
}

/** Forgets a name's failures and locks from every address (`payoutd user add` or `unlock`, a new password). */
export async function clearSignInFailures(db: Database, name: string): Promise<void> {
  await db(FAILURES)
    .where({ name_hash: nameHash(name) })
    .delete();
}

export async function insertConsoleSession(db: Database, session: ConsoleSessionRecord): Promise<void> {
  await db('console_sessions').insert(toColumnValues(SESSION_COLUMNS, session));
}

/** The live session with this hash, if any. */
export async function getConsoleSession(db: Database, idHash: string, now: number): Promise<ConsoleSessionRecord | undefined> {
  const r = (await db('console_sessions').where({ id_hash: idHash }).andWhere('expires_at', '>', now).first()) as
    Record<string, unknown> | undefined;
  return r ? fromColumnValues<ConsoleSessionRecord>(SESSION_COLUMNS, r) : undefined;
}

export async function deleteConsoleSession(db: Database, idHash: string): Promise<void> {
  await db('console_sessions').where({ id_hash: idHash }).delete();
}

/** Ends every session of a user (password or role changed) or, without a name, every expired one. */
export async function deleteConsoleSessions(db: Database, by: { userName: string } | { expiredAt: number }): Promise<number> {
  return 'userName' in by
    ? db('console_sessions').where({ user_name: by.userName }).delete()
    : db('console_sessions').where('expires_at', '<=', by.expiredAt).delete();
}

/** A file the console linked into the inbox, and who uploaded it. */
export interface ConsoleUploadRecord {
  fileName: string;
  sha256: string;
  size: number;
  /** The uploaded file's inode number, as decimal text: the link into the inbox and the claim's rename keep it. */
  inode: string;
  uploader: string;
  uploadedAt: number;
}

const UPLOAD_COLUMNS: Record<keyof ConsoleUploadRecord, string> = {
  fileName: 'file_name',
  sha256: 'sha256',
  size: 'size',
  inode: 'file_ino',
  uploader: 'uploader',
  uploadedAt: 'uploaded_at',
};

/**
 * Written before the file is linked into the inbox: a batch of it can always be told who uploaded it.
 * Returns the record's id, the only handle `forgetConsoleUpload` takes.
 */
export async function recordConsoleUpload(db: Database, upload: ConsoleUploadRecord): Promise<number> {
  const rows = (await db('console_uploads').insert(toColumnValues(UPLOAD_COLUMNS, upload)).returning('id')) as (number | { id: number })[];
  const first = rows[0];
  return Number(typeof first === 'object' ? first.id : first);
}

/**
 * An upload recorded but not let into the inbox (its name was taken, the link failed): it names no uploader.
 * By id, never by its values: the same user's identical upload in the same millisecond, let in, keeps its record.
 */
export async function forgetConsoleUpload(db: Database, id: number): Promise<void> {
  await db('console_uploads').where({ id }).delete();
}

/**
 * Who uploaded a file through the console: the upload of that very file (its inode), name and exact bytes,
 * made no later than the batch was received. Not the latest upload of that name and bytes: once the daemon
 * has taken a file its name is free, and someone else's identical upload may be recorded before the lookup.
 * Undefined for a file that came another way.
 */
export async function consoleUploaderOf(
  db: Database,
  file: { fileName: string; sha256: string; inode: string; receivedAt: number },
): Promise<string | undefined> {
  const uploads = () =>
    db('console_uploads')
      .where({ file_name: file.fileName, sha256: file.sha256 })
      .andWhere('uploaded_at', '<=', file.receivedAt)
      // The newest record: an older one of the same inode was of a file since removed (inode numbers are reused).
      .orderBy('id', 'desc');
  const exact = (await uploads().andWhere({ file_ino: file.inode }).first('uploader')) as { uploader: string } | undefined;
  if (exact) return exact.uploader;
  // Recorded before inodes were (migration 0022): a file uploaded before the upgrade and taken after it. Every later
  // upload has its inode recorded, so this never finds one.
  const older = (await uploads().whereNull('file_ino').first('uploader')) as { uploader: string } | undefined;
  return older?.uploader;
}

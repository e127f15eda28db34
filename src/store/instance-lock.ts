/**
 * One daemon per state directory and per database file (SQLite): an exclusive SQLite lock on a lock file, held
 * for the life of the process, which the kernel releases even on SIGKILL. tryExclusiveLock guards other one-owner things too.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { openSqlite } from './sqlite-driver.js';
import { PayoutdError } from '../domain/errors.js';

export class InstanceLockError extends PayoutdError {
  override readonly name = 'InstanceLockError';
}

export interface InstanceLock {
  release(): void;
}

/** The lock on `lockPath` (made if missing), or null when another process holds it. Released by release() or the process's end. */
export function tryExclusiveLock(lockPath: string): InstanceLock | null {
  const db = openSqlite(lockPath, { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch {
    db.close();
    return null;
  }
  return {
    release() {
      try {
        db.exec('ROLLBACK');
      } finally {
        db.close();
      }
    },
  };
}

/** The lock on `lockPath`, its holder noted beside it; `refused(holder)` when another process holds it. */
function acquireNamedLock(lockPath: string, refused: (holder: string) => InstanceLockError): InstanceLock {
  mkdirSync(dirname(lockPath), { recursive: true });
  const infoPath = `${lockPath}.owner`;
  const lock = tryExclusiveLock(lockPath);
  if (!lock) {
    let owner = 'another process';
    try {
      owner = readFileSync(infoPath, 'utf8').trim();
    } catch {
      // The owner note is informative only.
    }
    throw refused(owner);
  }
  writeFileSync(infoPath, `pid ${process.pid} on ${hostname()} since ${new Date().toISOString()}\n`);
  return lock;
}

export function acquireInstanceLock(stateDir: string): InstanceLock {
  return acquireNamedLock(
    join(stateDir, 'payoutd.lock'),
    (owner) =>
      new InstanceLockError(
        'STATE_DIR_LOCKED',
        `another payoutd is already running on state directory ${stateDir} (${owner}); with SQLite only one instance may use it — use database.client pg for several instances`,
      ),
  );
}

/**
 * The locks of a SQLite daemon: its state directory and its database file (`<file>.lock` beside it), which
 * `database.filename` can put anywhere; two daemons on one file would each take the other's work for lost.
 */
export function acquireInstanceLocks(stateDir: string, databaseFile: string): InstanceLock {
  const dirLock = acquireInstanceLock(stateDir);
  let fileLock: InstanceLock;
  try {
    fileLock = acquireNamedLock(
      `${databaseFile}.lock`,
      (owner) =>
        new InstanceLockError(
          'DATABASE_FILE_LOCKED',
          `another payoutd is already running on database file ${databaseFile} (${owner}), from another state directory; with SQLite only one instance may use a database file — give each instance its own database.filename, or use database.client pg for several instances`,
        ),
    );
  } catch (err) {
    dirLock.release();
    throw err;
  }
  return {
    release() {
      try {
        fileLock.release();
      } finally {
        dirLock.release();
      }
    },
  };
}

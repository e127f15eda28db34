/**
 * One daemon per state directory (SQLite): an exclusive SQLite lock on a lock file, held for the life of the
 * process, which the kernel releases even on SIGKILL. tryExclusiveLock guards other one-owner things too.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
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

export function acquireInstanceLock(stateDir: string): InstanceLock {
  mkdirSync(stateDir, { recursive: true });
  const lockPath = join(stateDir, 'payoutd.lock');
  const infoPath = join(stateDir, 'payoutd.lock.owner');
  const lock = tryExclusiveLock(lockPath);
  if (!lock) {
    let owner = 'another process';
    try {
      owner = readFileSync(infoPath, 'utf8').trim();
    } catch {
      // The owner note is informative only.
    }
    throw new InstanceLockError(
      'STATE_DIR_LOCKED',
      `another payoutd is already running on state directory ${stateDir} (${owner}); with SQLite only one instance may use it — use database.client pg for several instances`,
    );
  }
  writeFileSync(infoPath, `pid ${process.pid} on ${hostname()} since ${new Date().toISOString()}\n`);
  return lock;
}

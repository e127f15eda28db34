/**
 * A real, migrated SQLite state database in a test's temp folder, set up
 * the way every layer's tests use it (one connection, NORMAL sync: speed
 * over power-loss durability, which no test measures).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';

/** The database file's name in the folder given to openTestDatabase. */
export const TEST_DATABASE_FILE = 'state.sqlite';

/** A migrated SQLite database in `dir`; `busyTimeoutMs` for a test of a lock held too long. */
export async function openTestDatabase(dir: string, busyTimeoutMs = 5000): Promise<Database> {
  const db = openDatabase({
    client: 'sqlite',
    filename: join(dir, TEST_DATABASE_FILE),
    poolMax: 1,
    busyTimeoutMs,
    synchronous: 'NORMAL',
  });
  await migrateToLatest(db);
  return db;
}

/**
 * A fresh test database for each test of the calling `describe` (call it there), in a temp folder of
 * its own, destroyed and removed after the test. Read `.db` inside the tests.
 */
export function useTestDatabase(prefix: string): { readonly db: Database } {
  let dir = '';
  let db: Database | null = null;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
    db = await openTestDatabase(dir);
  });
  afterEach(async () => {
    if (db !== null) await closeDatabase(db);
    db = null;
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get db(): Database {
      if (db === null) throw new Error('useTestDatabase: the database is open only inside a test');
      return db;
    },
  };
}

/**
 * A real, migrated SQLite state database in a test's temp folder, set up
 * the way every layer's tests use it (one connection, NORMAL sync: speed
 * over power-loss durability, which no test measures).
 */
import { join } from 'node:path';
import { migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';

export async function openTestDatabase(dir: string): Promise<Database> {
  const db = openDatabase({
    client: 'sqlite',
    filename: join(dir, 'state.sqlite'),
    poolMax: 1,
    busyTimeoutMs: 5000,
    synchronous: 'NORMAL',
  });
  await migrateToLatest(db);
  return db;
}

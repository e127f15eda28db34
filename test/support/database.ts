/**
 * A real, migrated SQLite state database in a test's temp folder, set up
 * the way every layer's tests use it (one connection, NORMAL sync: speed
 * over power-loss durability, which no test measures).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
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

const DIST_DRIVER = fileURLToPath(new URL('../../dist/store/sqlite-driver.js', import.meta.url));

// The other process: a busy wait of better-sqlite3 blocks its own process, so a writer in this one would
// never get to end its transaction while a test's query waits for it. With a query to wait for, it polls
// that query and takes the lock once it returns a row.
const HOLDER = `
const { openSqlite } = await import(process.argv[1]);
const db = openSqlite(process.argv[2]);
const when = JSON.parse(process.argv[5]);
const hold = () => {
  db.exec('BEGIN IMMEDIATE');
  for (const [sql, ...values] of JSON.parse(process.argv[4])) db.prepare(sql).run(...values);
  process.stdout.write('locked\\n');
  setTimeout(() => { db.exec('COMMIT'); db.close(); }, Number(process.argv[3]));
};
if (when === null) hold();
else {
  const [sql, ...values] = when;
  const query = db.prepare(sql);
  const poll = () => (query.get(...values) === undefined ? setTimeout(poll, 1) : hold());
  process.stdout.write('watching\\n');
  poll();
}
`;

/** A statement and its values. */
export type Written = [sql: string, ...values: (string | number | null)[]];

/**
 * Another process (the daemon, say) in a write transaction on the SQLite file `file` for `ms`: resolves once
 * it holds the write lock, and has run `writes` in it (committed at its end), with a promise of that end.
 * With `when`, it takes the lock only once that query returns a row, and resolves once it is watching for it.
 */
export async function writeLockHeldElsewhere(
  file: string,
  ms: number,
  writes: Written[] = [],
  when: Written | null = null,
): Promise<{ locked: Promise<void>; released: Promise<void> }> {
  if (!existsSync(DIST_DRIVER)) throw new Error(`${DIST_DRIVER} is missing: run \`npm run build\` first (\`npm test\` does)`);
  const args = [pathToFileURL(DIST_DRIVER).href, file, String(ms), JSON.stringify(writes), JSON.stringify(when)];
  const child = spawn(process.execPath, ['--input-type=module', '-e', HOLDER, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const released = new Promise<void>((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`the lock holder exited ${code}`)))),
  );
  const said = (word: string) =>
    new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
        if (out.split('\n').includes(word)) resolve();
      });
      released.then(() => reject(new Error(`the lock holder ended before it said ${word}`)), reject);
    });
  const locked = said('locked');
  await (when === null ? locked : said('watching'));
  // Awaited by the caller or not at all: a holder that ends without locking fails the wait above or `released`.
  locked.catch(() => undefined);
  return { locked, released };
}

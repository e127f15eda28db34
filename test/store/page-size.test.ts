import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { afterEach, describe, expect, it } from 'vitest';
import { insertBatch, receivedBatch } from '../../src/store/index.js';
import { closeDatabase, NEW_DATABASE_PAGE_BYTES, type Database } from '../../src/store/db.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await closeDatabase(db);
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

/** The state database in `dir`, opened and migrated as the daemon does, destroyed after the test. */
async function open(dir: string): Promise<Database> {
  const db = await openTestDatabase(dir);
  dbs.push(db);
  return db;
}

async function pragma(db: Database, name: string): Promise<unknown> {
  const rows = (await db.raw(`PRAGMA ${name}`)) as Record<string, unknown>[];
  return rows[0]?.[name];
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-page-size-'));
  dirs.push(dir);
  return dir;
}

function batch(id: string): Parameters<typeof insertBatch>[1] {
  return receivedBatch(
    {
      id,
      fileName: `${id}.csv`,
      storedPath: `/x/${id}.csv`,
      controlPath: null,
      doneMarker: false,
      sha256: id.padEnd(64, '0'),
      size: 1,
      mtimeMs: 0,
    },
    0,
  );
}

describe('the page size of the state database', () => {
  it('is NEW_DATABASE_PAGE_BYTES (16 KiB) for a new file, in WAL mode', async () => {
    const db = await open(await tempDir());
    expect(NEW_DATABASE_PAGE_BYTES).toBe(16_384);
    expect(await pragma(db, 'page_size')).toBe(16_384);
    expect(await pragma(db, 'journal_mode')).toBe('wal');
  });

  it('stays what it was for a file made before (4 KiB), which opens, migrates and keeps its rows', async () => {
    const dir = await tempDir();
    const first = await open(dir);
    await insertBatch(first, batch('B1'));
    await closeDatabase(first);
    dbs.splice(dbs.indexOf(first), 1);
    // The same file as an older payoutd left it: SQLite's default page size.
    const raw = openSqlite(join(dir, TEST_DATABASE_FILE));
    raw.pragma('journal_mode = DELETE');
    raw.pragma('page_size = 4096');
    raw.exec('VACUUM');
    raw.pragma('journal_mode = WAL');
    expect(raw.pragma('page_size', { simple: true })).toBe(4096);
    raw.close();

    const again = await open(dir);
    expect(await pragma(again, 'page_size')).toBe(4096);
    expect(await pragma(again, 'journal_mode')).toBe('wal');
    await insertBatch(again, batch('B2'));
    expect(await again('batches').orderBy('id').pluck('id')).toEqual(['B1', 'B2']);
  });
});

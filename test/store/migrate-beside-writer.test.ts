/**
 * Bringing the schema up to date beside another process on the SQLite file: an up-to-date schema is
 * only read (covered with the commands in test/finance/commands.test.ts); a pending migration waits for
 * the other process's short write (knex's lock is an update, the first statement of its transaction);
 * a schema with a migration this build does not know is still refused, by the read-only check too.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { assertSchemaCurrent, closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openTestDatabase, TEST_DATABASE_FILE, writeLockHeldElsewhere } from '../support/database.js';

let dir = '';
let db: Database | null = null;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-migrate-'));
});
afterEach(async () => {
  if (db !== null) await closeDatabase(db);
  db = null;
  await rm(dir, { recursive: true, force: true });
});

it('a pending migration waits for a short write of another process, then applies', async () => {
  db = openDatabase({ client: 'sqlite', filename: join(dir, TEST_DATABASE_FILE), poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
  await db.raw('select 1'); // the file, in WAL mode, before the other process opens it
  const other = await writeLockHeldElsewhere(join(dir, TEST_DATABASE_FILE), 300);
  const applied = await migrateToLatest(db);
  await other.released;
  expect(applied).toEqual(MIGRATIONS.map((m) => m.name));
});

it('a schema with a migration this build does not know is refused, not taken as up to date', async () => {
  db = await openTestDatabase(dir);
  await db('payoutd_migrations').insert({ name: '9999_from_a_newer_build', batch: 99, migration_time: new Date() });
  // Said as such, not as knex's "migration directory is corrupt", which sent operators to reinstall this build.
  await expect(migrateToLatest(db)).rejects.toMatchObject({
    code: 'SCHEMA_NEWER',
    message: expect.stringContaining('9999_from_a_newer_build'),
  });
  // The commands that only check the schema (status, approve, cancel…) refuse it too.
  await expect(assertSchemaCurrent(db)).rejects.toMatchObject({
    code: 'SCHEMA_NEWER',
    message: expect.stringContaining('9999_from_a_newer_build'),
  });
});

/**
 * Migration 0008 (requests kept as their values) on a real SQLite file; the
 * same checks run on PostgreSQL in test/postgres/request-values-migration.test.ts.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'vitest';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { checkRequestValuesMigration, checkRequestValuesMigrationRefusesNonText } from './request-values-migration.js';

describe('migration 0008: requests kept as their values (SQLite)', () => {
  let dir = '';
  let db: Database;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-0008-'));
    // Not migrated: each check takes the database up to 0007 itself.
    db = openDatabase({ client: 'sqlite', filename: join(dir, 'state.sqlite'), poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
  });
  afterEach(async () => {
    await closeDatabase(db);
    await rm(dir, { recursive: true, force: true });
  });

  it('rewrites every kept request as its values, and the way down gives them back', () => checkRequestValuesMigration(db));

  it('stops with nothing changed when a kept request has a field that is not text', () => checkRequestValuesMigrationRefusesNonText(db));
});

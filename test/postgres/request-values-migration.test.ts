/**
 * PostgreSQL: migration 0008 (requests kept as their values) with this
 * engine's JSON functions; the checks are those of test/store on SQLite.
 */
import { afterEach, beforeEach, describe, it } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { checkRequestValuesMigration, checkRequestValuesMigrationRefusesNonText } from '../store/request-values-migration.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: migration 0008, requests kept as their values', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeEach(async () => {
    // Each check starts from an empty schema and takes it up to 0007 itself.
    db = await openEmptySchema(schema);
  });
  afterEach(async () => {
    await db.destroy();
  });

  it('rewrites every kept request as its values, and the way down gives them back', () => checkRequestValuesMigration(db));

  it('stops with nothing changed when a kept request has a field that is not text', () => checkRequestValuesMigrationRefusesNonText(db));
});

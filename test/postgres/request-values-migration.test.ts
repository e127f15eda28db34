/**
 * PostgreSQL: migration 0008 (requests kept as their values) with this
 * engine's JSON functions; the checks are those of test/store on SQLite.
 */
import { describe, it } from 'vitest';
import { checkRequestValuesMigration, checkRequestValuesMigrationRefusesNonText } from '../store/request-values-migration.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: migration 0008, requests kept as their values', () => {
  const schema = useTestSchema();
  // Each check starts from an empty schema and takes it up to 0007 itself.
  const store = useEmptySchema(schema, { latest: false });

  it('rewrites every kept request as its values, and the way down gives them back', () => checkRequestValuesMigration(store.db));

  it('stops with nothing changed when a kept request has a field that is not text', () =>
    checkRequestValuesMigrationRefusesNonText(store.db));
});

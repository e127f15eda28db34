/**
 * The lookups of batches by the path their file was claimed to (the orphan search, once per rescan interval) are
 * planned through an index on a real SQLite file, not a read of every batch ever taken (migration 0024).
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { findBatchByStoredPath, recordedStoredPaths } from '../../src/store/batches.js';
import { useTestDatabase } from '../support/database.js';

describe('store: batches by stored path (SQLite)', () => {
  const store = useTestDatabase('payoutd-stored-path-idx-');

  it('both lookups are planned through batches_stored_path', async () => {
    const { db } = store;
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void seen.push(q);
    db.on('query', record);
    await findBatchByStoredPath(db, '/srv/payoutd/claimed/a.csv');
    await recordedStoredPaths(db, ['/srv/payoutd/claimed/a.csv', '/srv/payoutd/claimed/b.csv']);
    db.off('query', record);
    const lookups = seen.filter((q) => q.sql.includes('stored_path'));
    expect(lookups).toHaveLength(2);
    for (const q of lookups) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      expect(plan.map((p) => p.detail).join(' | '), q.sql).toMatch(/USING (COVERING )?INDEX batches_stored_path\b/);
    }
  });
});

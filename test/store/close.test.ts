/**
 * closeDatabase (src/store/db.ts): the SQLite connection comes from a pool
 * the store owns (knex leaves an outside pool open on destroy), so closing
 * must close the file itself. SQLite checkpoints the WAL into the database
 * and removes it when the last connection closes: no -wal file left means
 * the connection is closed.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase } from '../../src/store/db.js';
import { insertBatch, receivedBatch } from '../../src/store/index.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';

let dir = '';
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('closing the SQLite state database', () => {
  it('closes its file: the WAL is checkpointed and removed', async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-close-'));
    const db = await openTestDatabase(dir);
    await insertBatch(
      db,
      receivedBatch(
        {
          id: 'B1',
          fileName: 'b1.csv',
          storedPath: '/x/b1.csv',
          controlPath: null,
          sha256: '0'.repeat(64),
          size: 1,
          mtimeMs: 0,
          doneMarker: false,
        },
        0,
      ),
    );
    const wal = join(dir, `${TEST_DATABASE_FILE}-wal`);
    expect(existsSync(wal)).toBe(true);
    await closeDatabase(db);
    expect(existsSync(wal)).toBe(false);
  });
});

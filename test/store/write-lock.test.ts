/**
 * The daemon and `payoutd approve` (or reject, cancel) are two processes on one SQLite file. A store
 * transaction takes the write lock before it reads, so the other process's write waits its turn
 * (busy_timeout) instead of landing between this transaction's read and its write, which SQLite refuses
 * at once with "database is locked" (an approval failed so beside a busy daemon).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { insertBatch, receivedBatch } from '../../src/store/batches.js';
import { insertApprovalEntry, listApprovalEntries, withBatchForDecision } from '../../src/store/approvals.js';
import { openSqlite, type SqliteConnection } from '../../src/store/sqlite-driver.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';

const BATCH = 'B-LOCK';

describe('store: a transaction holds the write lock from its first statement (SQLite)', () => {
  let dir: string;
  let db: Database;
  let other: SqliteConnection;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-write-lock-'));
    db = await openTestDatabase(dir);
    const file = {
      id: BATCH,
      fileName: 'lock.csv',
      storedPath: join(dir, 'lock.csv'),
      controlPath: null,
      sha256: 'a'.repeat(64),
      size: 10,
      mtimeMs: 0,
      doneMarker: false,
      uploadedBy: null,
      uploadedByUid: null,
    };
    await insertBatch(db, receivedBatch(file, 1000));
    // The other process, not waiting at all (busy_timeout 0), so that whether it had to wait shows.
    other = openSqlite(join(dir, TEST_DATABASE_FILE), { timeout: 0 });
  });
  afterEach(async () => {
    other.close();
    await closeDatabase(db);
    await rm(dir, { recursive: true, force: true });
  });

  const otherWrite = (): string | null => {
    try {
      other.prepare('update batches set updated_at = updated_at + 1 where id = ?').run(BATCH);
      return null;
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  };

  it('a decision that read its batch commits; a write from another process meanwhile has to wait', async () => {
    let meanwhile: string | null = 'not tried';
    await withBatchForDecision(db, BATCH, async (trx, batch) => {
      expect(batch?.id).toBe(BATCH);
      meanwhile = otherWrite();
      await insertApprovalEntry(trx, {
        batchId: BATCH,
        round: 0,
        decision: 'approve',
        approver: 'ana',
        approverUid: 1001,
        agent: null,
        via: 'cli',
        comment: null,
        sha256: 'a'.repeat(64),
        figuresJson: '{}',
        decidedAt: 2000,
        instanceId: null,
      });
    });
    expect(meanwhile, 'the other process wrote between the decision read and its write').toBe('SQLITE_BUSY');
    expect((await listApprovalEntries(db, BATCH)).map((e) => e.approver)).toEqual(['ana']);
    // Its turn comes once the decision is committed.
    expect(otherWrite()).toBeNull();
  });

  it('a transaction that cannot get the lock in time says so, and writes nothing', async () => {
    const impatient = openDatabase({
      client: 'sqlite',
      filename: join(dir, TEST_DATABASE_FILE),
      poolMax: 1,
      busyTimeoutMs: 50,
      synchronous: 'NORMAL',
    });
    other.exec('BEGIN IMMEDIATE');
    try {
      const decided = withBatchForDecision(impatient, BATCH, async (trx) => {
        await trx('batches').where({ id: BATCH }).update({ updated_at: 5 });
      });
      await expect(decided).rejects.toMatchObject({
        code: 'DATABASE_BUSY',
        message: expect.stringContaining('locked by another process') as unknown,
      });
      await expect(decided).rejects.toThrow(/database\.busyTimeoutMs; nothing was written: try again$/);
    } finally {
      other.exec('ROLLBACK');
      await closeDatabase(impatient);
    }
    expect(((await db('batches').where({ id: BATCH }).first('updated_at')) as { updated_at: number }).updated_at).not.toBe(5);
  });
});

/**
 * Transactions for answers the service would give again: their commit skips
 * the disk sync (SQLite synchronous NORMAL for that transaction only), and
 * no other transaction — an intent above all — ever commits under the
 * relaxed level, even one waiting for the connection meanwhile.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { reproducibleTransaction } from '../../src/store/reproducible.js';

async function syncLevel(q: Database | Knex.Transaction): Promise<number> {
  const rows = (await q.raw('PRAGMA synchronous')) as { synchronous: number }[];
  return Number(rows[0]?.synchronous);
}

describe('store: reproducible transactions (SQLite)', () => {
  let dir: string;
  let db: Database;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-repro-'));
    // The daemon's default: FULL, every commit synced.
    db = openDatabase({ client: 'sqlite', filename: join(dir, 'state.sqlite'), poolMax: 1, busyTimeoutMs: 5000, synchronous: 'FULL' });
    await migrateToLatest(db);
  });
  afterEach(async () => {
    await closeDatabase(db);
    await rm(dir, { recursive: true, force: true });
  });

  it('commits under NORMAL and puts FULL back; a transaction waiting meanwhile commits under FULL', async () => {
    expect(await syncLevel(db)).toBe(2);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let inside = -1;
    const relaxed = reproducibleTransaction(db, async (trx) => {
      inside = await syncLevel(trx);
      await trx('file_claims').insert({ file_key: 'a', instance_id: 'x', claimed_at: 1 });
      await gate;
    });
    // An intent's transaction asks for the connection while the relaxed one holds it.
    let waited = false;
    const durable = db.transaction(async (trx) => {
      waited = true;
      return syncLevel(trx);
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(inside).toBe(1);
    expect(waited).toBe(false);
    open();
    await relaxed;
    expect(await durable).toBe(2);
    expect(await syncLevel(db)).toBe(2);
    expect(await db('file_claims').pluck('file_key')).toEqual(['a']);
  });

  it('a failing write rolls back, puts FULL back and rethrows', async () => {
    await expect(
      reproducibleTransaction(db, async (trx) => {
        await trx('file_claims').insert({ file_key: 'b', instance_id: 'x', claimed_at: 1 });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await db('file_claims').count({ n: '*' })).toEqual([{ n: 0 }]);
    expect(await syncLevel(db)).toBe(2);
  });

  it('leaves a connection configured NORMAL as it is', async () => {
    const normal = openDatabase({
      client: 'sqlite',
      filename: join(dir, 'n.sqlite'),
      poolMax: 1,
      busyTimeoutMs: 5000,
      synchronous: 'NORMAL',
    });
    try {
      await migrateToLatest(normal);
      expect(await reproducibleTransaction(normal, (trx) => syncLevel(trx))).toBe(1);
      expect(await syncLevel(normal)).toBe(1);
    } finally {
      await closeDatabase(normal);
    }
  });
});

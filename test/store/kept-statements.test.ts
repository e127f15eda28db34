/**
 * keepKnexStatements (src/store/prepared.ts): a SQLite connection keeps the
 * statements knex runs, by SQL text, so knex no longer prepares each one
 * anew. What must hold: a statement is prepared once and reused, the kept
 * statements are bounded, and the raw-mode statements of `selectArrays` are
 * never the ones knex runs (knex would then read arrays instead of rows).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../src/store/db.js';
import type { PooledClient } from '../../src/store/prepared.js';
import { selectArrays } from '../../src/store/prepared.js';
import { openTestDatabase } from '../support/database.js';
import { addBatch } from './held-references.js';

interface Connection {
  prepare(sql: string): unknown;
}

let dir: string;
let db: Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payoutd-kept-'));
  db = await openTestDatabase(dir);
  await addBatch(db, 'B1');
});

afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function withConnection<T>(use: (conn: Connection) => T): Promise<T> {
  const client = db.client as PooledClient;
  const conn = (await client.acquireConnection()) as Connection;
  try {
    return use(conn);
  } finally {
    await client.releaseConnection(conn);
  }
}

describe('statements knex runs on SQLite', () => {
  it('are prepared once per SQL text and reused', async () => {
    const sql = 'select id from batches where id = ?';
    await withConnection((conn) => {
      expect(conn.prepare(sql)).toBe(conn.prepare(sql));
      expect(conn.prepare(sql)).not.toBe(conn.prepare(`${sql} `));
    });
    // And knex reads through them as before.
    expect(await db('batches').where({ id: 'B1' }).pluck('id')).toEqual(['B1']);
    expect(await db('batches').where({ id: 'B1' }).pluck('id')).toEqual(['B1']);
  });

  it('are kept up to a bound: the least recently used one is prepared again', async () => {
    await withConnection((conn) => {
      const first = conn.prepare('select 0 as n');
      for (let i = 1; i <= 127; i++) conn.prepare(`select ${i} as n`);
      // 128 kept: the first is still there, and using it makes it the most recent.
      expect(conn.prepare('select 0 as n')).toBe(first);
      conn.prepare('select 128 as n');
      expect(conn.prepare('select 0 as n')).toBe(first);
      // 'select 1' was the least recently used: prepared anew.
      const one = conn.prepare('select 1 as n');
      for (let i = 200; i < 400; i++) conn.prepare(`select ${i} as n`);
      expect(conn.prepare('select 1 as n')).not.toBe(one);
      expect(conn.prepare('select 0 as n')).not.toBe(first);
    });
  });

  it('are never the raw-mode statements selectArrays reads through', async () => {
    const query = () => db('batches').select('id', 'state').where({ id: 'B1' });
    expect(await selectArrays(db, query())).toEqual([['B1', expect.any(String)]]);
    // The same SQL text through knex: row objects, not arrays.
    const rows = (await query()) as unknown[];
    expect(rows).toEqual([{ id: 'B1', state: expect.any(String) }]);
    expect(await selectArrays(db, query())).toEqual([['B1', expect.any(String)]]);
  });
});

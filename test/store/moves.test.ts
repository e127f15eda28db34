/**
 * Row moves and claims on a real SQLite file (the same checks run on
 * PostgreSQL in test/postgres/moves.test.ts), the narrow read of a batch's
 * rows, and the claim index the migrations make.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import type { Database } from '../../src/store/db.js';
import { RowStateError, historyOf, rowsOfBatch, stateGuard } from '../../src/store/payouts.js';
import { applyRowMoves } from '../../src/store/submission.js';
import { openTestDatabase } from '../support/database.js';
import { checkClaimOrder, checkGroupedMoves, checkMovesOfOneRowInOrder, seedBatch } from './moves.js';

describe('store: row moves and claims (SQLite)', () => {
  let dir: string;
  let db: Database;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'payoutd-store-'));
    db = await openTestDatabase(dir);
  });
  afterEach(async () => {
    await db.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('groups moves sharing a patch, keeps per-row patches, skips a moved row, one history row per row moved', async () => {
    await checkGroupedMoves(db);
  });

  it('applies two moves of one row in the order given', async () => {
    await checkMovesOfOneRowInOrder(db);
  });

  it('a move the lifecycle forbids changes nothing, not even the moves before it', async () => {
    const [a, b] = await seedBatch(db, 'BAD', 2, 'PENDING');
    if (!a || !b) throw new Error('seed');
    const moves = [
      { row: a, from: 'PENDING' as const, to: 'PAID' as const, patch: {}, history: { event: 'settled' } },
      { row: b, from: 'PENDING' as const, to: 'READY' as const, patch: {}, history: { event: 'wrong' } },
    ];
    await expect(applyRowMoves(db, moves, 10)).rejects.toThrow(RowStateError);
    expect((await db('payouts').orderBy('id').pluck('state')) as string[]).toEqual(['PENDING', 'PENDING']);
    expect(await historyOf(db, a.id)).toEqual([]);
  });

  it('a guarded UPDATE of rows picked by id finds them by primary key, not by walking the state index', async () => {
    await seedBatch(db, 'G', 3, 'PENDING');
    const q = db('payouts').whereIn('id', [1, 2, 3]).andWhere(stateGuard(db, 'PENDING')).update({ poll_count: 1 }).toSQL().toNative();
    const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings as Knex.RawBinding[])) as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual([expect.stringContaining('INTEGER PRIMARY KEY')]);
    // What the guard replaced: SQLite's choice for a plain `state = ?` (the reason the guard exists).
    const plain = db('payouts').whereIn('id', [1, 2, 3]).andWhere({ state: 'PENDING' }).update({ poll_count: 1 }).toSQL().toNative();
    const before = (await db.raw(`EXPLAIN QUERY PLAN ${plain.sql}`, plain.bindings as Knex.RawBinding[])) as { detail: string }[];
    expect(before.map((p) => p.detail).join(' ')).toContain('INDEX');
  });

  it('claims the older batch first, in line order, by the hold rules', async () => {
    await checkClaimOrder(db);
  });

  it('a claim reads its rows by the (batch_id, state, line) index, without sorting', async () => {
    const names = (await db('sqlite_master').where({ type: 'index', tbl_name: 'payouts' }).pluck('name')) as string[];
    expect(names).toContain('payouts_batch_state_line');
    expect(names).not.toContain('payouts_batch_id_state_index');
    const plan = (await db.raw(
      `EXPLAIN QUERY PLAN SELECT * FROM payouts WHERE batch_id = ? AND state = 'READY'
         AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY line LIMIT 64`,
      ['B', 1],
    )) as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual([expect.stringContaining('USING INDEX payouts_batch_state_line')]);
  });

  it('reads a batch back with only the fields the files show', async () => {
    await seedBatch(db, 'RD', 3, 'READY');
    const rows = [];
    for await (const r of rowsOfBatch(db, 'RD', 2)) rows.push(r);
    expect(rows.map((r) => r.line)).toEqual([2, 3, 4]);
    // 17 fields (src/store/payouts.ts RESULT_FIELDS); bookkeeping columns the files never show are not read.
    expect(Object.keys(rows[0] ?? {})).toHaveLength(17);
    for (const unread of ['leaseOwner', 'nextPollAt', 'pollCount', 'createAttempts', 'updatedAt', 'serviceStatus'])
      expect(rows[0]).not.toHaveProperty(unread);
    expect(rows[0]).toMatchObject({ reasonCode: null, reason: null, completeTime: null, requestJson: expect.any(String) });
    expect(rows[0]).toMatchObject({ batchId: 'RD', merchantReferenceId: 'RD-1', state: 'READY', payoutAmount: '100.50', payoutId: null });
  });
});

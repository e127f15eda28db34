/**
 * insertRows (src/store/insert-rows.ts) on a real SQLite file: every row of a
 * call in one INSERT (one JSON parameter). It must store every column exactly
 * at any count (checks shared with test/postgres, where rows are split across
 * statements), and stay inside the caller's transaction (a rollback leaves
 * nothing, a bad row fails the call).
 * A READY row whose reference is already held is stored VALIDATED, never lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertRows, type NewPayoutRow } from '../../src/store/insert-rows.js';
import { closeDatabase, type Database } from '../../src/store/db.js';
import { openTestDatabase } from '../support/database.js';
import { addBatch, checkHeldReferencesSetAside, payoutRowsOf } from './held-references.js';
import { checkStoresExactly, ROW_COUNTS, rowsFor, storedRows } from './insert-rows.js';

let dir: string;
let db: Database;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'payoutd-insert-'));
  db = await openTestDatabase(dir);
  for (const id of ['B1', 'B2', 'B3']) await addBatch(db, id);
});

afterEach(async () => {
  await closeDatabase(db);
  rmSync(dir, { recursive: true, force: true });
});

const stored = (batchId: string): Promise<NewPayoutRow[]> => storedRows(db, batchId);

describe('insertRows', () => {
  for (const count of ROW_COUNTS) {
    it(`stores ${count} rows exactly, in a transaction and without one`, () => checkStoresExactly(db, count));
  }

  it('stores rows of several batches given at once, each with its own batch', async () => {
    // B1, then B2, then B1 again, across statements.
    const b1 = rowsFor('B1', 2700);
    const b2 = rowsFor('B2', 2300);
    await db.transaction((trx) => insertRows(trx, [...b1.slice(0, 2600), ...b2, ...b1.slice(2600)], 42));
    expect(await stored('B1')).toEqual(b1);
    expect(await stored('B2')).toEqual(b2);
  });

  it('stores READY rows due from their insert, and the others not due', async () => {
    const valid = (r: NewPayoutRow): NewPayoutRow => ({
      ...r,
      state: 'READY',
      requestValues: r.requestValues ?? '[]',
      reasonCode: null,
      reason: null,
    });
    const ready = payoutRowsOf('B3', 2601).map((r, i) => (i < 2600 ? valid(r) : r));
    expect(ready.at(-1)?.state).toBe('INVALID');
    await db.transaction((trx) => insertRows(trx, ready, 42));
    expect(await stored('B3')).toEqual(ready);
    const due = (await db('payouts').where({ batch_id: 'B3' }).orderBy('line').pluck('next_attempt_at')) as (number | null)[];
    expect(due).toEqual(ready.map((r) => (r.state === 'READY' ? 42 : null)));
  });

  it('stays inside the caller transaction: a rollback leaves no row', async () => {
    await expect(
      db.transaction(async (trx) => {
        await insertRows(trx, rowsFor('B3', 3000), 42);
        throw new Error('abort the read');
      }),
    ).rejects.toThrow('abort the read');
    expect(await stored('B3')).toEqual([]);
  });

  it('a row that breaks a constraint fails the call and its transaction', async () => {
    const rows = rowsFor('B3', 3000);
    const clash = { ...(rows[10] as NewPayoutRow) };
    await expect(db.transaction((trx) => insertRows(trx, [...rows, clash], 42))).rejects.toThrow(/UNIQUE/);
    expect(await stored('B3')).toEqual([]);
  });

  it('stores a READY row whose reference is held as VALIDATED, on every path', async () => {
    await checkHeldReferencesSetAside(db);
  });
});

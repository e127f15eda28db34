/**
 * The console's search of a batch's rows by reference (`resultRowsPage`), checked on a real database of either
 * engine (SQLite in test/store, PostgreSQL in test/postgres): ASCII letters match in either case, alike on both,
 * whatever case the search and the references are written in; other characters match as they are.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { insertBatch, receivedBatch } from '../../src/store/batches.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { resultRowsPage } from '../../src/store/results.js';

const REFERENCES = ['INV-2026-001', 'inv-2026-002', 'Inv-2027-003', 'ÉTÉ-2026-004'];

/** The references of the batch's rows whose reference contains `search`. */
async function found(db: Database, search: string): Promise<string[]> {
  const page = await resultRowsPage(db, 'SEARCH', { reference: search, offset: 0, limit: 10 });
  expect(page.total).toBe(page.rows.length);
  return page.rows.map((r) => r.merchantReferenceId);
}

export async function checkReferenceSearch(db: Database): Promise<void> {
  const file = { id: 'SEARCH', fileName: 'search.csv', storedPath: '/claimed/search.csv', controlPath: null, doneMarker: false };
  await insertBatch(db, receivedBatch({ ...file, sha256: 'a'.repeat(64), size: 1, mtimeMs: 1 }, 1));
  await insertRows(
    db,
    REFERENCES.map((ref, i) => ({
      batchId: 'SEARCH',
      line: i + 2,
      merchantReferenceId: ref,
      state: 'INVALID' as const,
      requestValues: null,
      payoutCurrency: null,
      payoutAmount: null,
      deductionCurrency: null,
      reasonCode: 'REQUIRED',
      reason: 'REQUIRED: a cell is empty',
    })),
    1,
  );
  expect(await found(db, 'inv-2026')).toEqual(['INV-2026-001', 'inv-2026-002']);
  expect(await found(db, 'INV-2026')).toEqual(['INV-2026-001', 'inv-2026-002']);
  expect(await found(db, 'iNv-20')).toEqual(['INV-2026-001', 'inv-2026-002', 'Inv-2027-003']);
  // Letters beyond ASCII as written: SQLite folds no others, and both engines answer alike.
  expect(await found(db, 'ÉTÉ-2026')).toEqual(['ÉTÉ-2026-004']);
  expect(await found(db, 'été-2026')).toEqual([]);
  expect(await found(db, 'Été')).toEqual([]);
}

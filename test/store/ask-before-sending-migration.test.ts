/**
 * Migration 0044 on a real SQLite file: a row an older build left READY or CREATING without a payout, with a query
 * of its reference owed after a late create's payout, is made UNKNOWN (asked before anything is sent for it); other
 * rows stay as they are.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { historyOf } from '../../src/store/moves.js';
import { addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';

let dir = '';
let db: Database | null = null;
afterEach(async () => {
  if (db) await closeDatabase(db);
  await rm(dir, { recursive: true, force: true });
});

it('makes a row left to be sent again with a query owed UNKNOWN', async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-0044-'));
  db = openDatabase({ client: 'sqlite', filename: join(dir, 'state.sqlite'), poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
  const at = MIGRATIONS.findIndex((m) => m.name === '0044_ask_before_sending_again');
  for (let i = 0; i < at; i++) await db.migrate.up();
  await addBatch(db, 'B1', 'pay.csv');
  await addRows(
    db,
    [1, 2, 3, 4].map((i) => validRow('B1', i + 1, request(`A-${i}`))),
  );
  const owed = { serviceCheck: 'REFERENCE', serviceCheckAt: 0, createAttempts: 1 } as const;
  await setRow(db, 'B1', 2, { state: 'READY', ...owed });
  await setRow(db, 'B1', 3, { state: 'CREATING', leaseOwner: 'A', leaseExpiresAt: 5, ...owed });
  // Not tried, or without a query owed: left as they are.
  await setRow(db, 'B1', 4, { state: 'READY', serviceCheck: 'REFERENCE', serviceCheckAt: 0 });
  await setRow(db, 'B1', 5, { state: 'READY', createAttempts: 1 });

  await db.migrate.up();
  const rows = (await db('payouts').orderBy('line').select('id', 'state', 'lease_owner')) as {
    id: number;
    state: string;
    lease_owner: string | null;
  }[];
  expect(rows.map((r) => [r.state, r.lease_owner])).toEqual([
    ['UNKNOWN', null],
    ['UNKNOWN', null],
    ['READY', null],
    ['READY', null],
  ]);
  expect((await historyOf(db, rows[0]?.id ?? 0)).map((h) => [h.event, h.fromState, h.toState])).toEqual([
    ['asked-before-sending', 'READY', 'UNKNOWN'],
  ]);
});

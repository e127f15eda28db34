/**
 * Changes to every row of a large batch, a range of lines at a time (src/store/payouts.ts: inLineRanges),
 * checked on either engine (test/store on SQLite, test/postgres on PostgreSQL): clearing a batch for a new
 * reading and pruning a finished one reach every row, its history and errors across the ranges, each range
 * in its own transaction, and leave other batches as they are.
 */
import { expect } from 'vitest';
import type { Knex } from 'knex';
import type { Database } from '../../src/store/db.js';
import { clearBatchContents } from '../../src/store/batches.js';
import { insertBatchErrors } from '../../src/store/batch-errors.js';
import { pruneBatchDetails } from '../../src/store/retention.js';
import { insertValueRows } from '../../src/store/multi-row-insert.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { countStatements } from './moves.js';

/** More rows than two ranges hold: the last range is a part of one. */
export const LARGE = 45_000;
const RANGES = 3;

/** The batches LARGE (LARGE rows, one history row and one error on a line in each range) and SMALL (two rows). */
async function seed(db: Database): Promise<void> {
  for (const id of ['LARGE', 'SMALL']) await addBatch(db, id, `${id}.csv`);
  const rows = Array.from({ length: LARGE }, (_, i) => validRow('LARGE', i + 2, request(`L-${i + 1}`)));
  await addRows(db, [...rows, validRow('SMALL', 2, request('S-1')), validRow('SMALL', 3, request('S-2'))]);
  const lines = [2, 20_002, 40_002];
  const ids = (await db('payouts').whereIn('line', lines).orderBy(['batch_id', 'line']).pluck('id')) as number[];
  await insertValueRows(
    db,
    'payout_history',
    ['payout_row_id', 'at', 'event'],
    ids.map((id) => [id, 1, 'intent']),
  );
  for (const id of ['LARGE', 'SMALL'])
    await insertBatchErrors(
      db,
      id,
      lines.map((line) => ({ line, column: 'amount', field: 'payoutAmount', code: 'X', message: 'x' })),
    );
}

/** The statements that change rows of payouts (test/store/moves.ts: countStatements), counted while `f` runs. */
async function rowStatements(db: Database, verb: 'delete from' | 'update', f: () => Promise<unknown>): Promise<number> {
  const statements = countStatements(db);
  await f();
  return statements.stop().filter((sql) => new RegExp(`^${verb} [\`"]payouts[\`"]`, 'i').test(sql)).length;
}

async function countOf(db: Database, table: string, where: (q: Knex.QueryBuilder) => Knex.QueryBuilder): Promise<number> {
  const [r] = (await where(db(table)).count({ n: '*' })) as { n: number | string }[];
  return Number(r?.n);
}

const historyOf = (db: Database, batchId: string): Promise<number> =>
  countOf(db, 'payout_history', (q) => q.whereIn('payout_row_id', db('payouts').select('id').where({ batch_id: batchId })));

export async function checkClearInRanges(db: Database): Promise<void> {
  await seed(db);
  const historySmall = await historyOf(db, 'SMALL');
  expect(await historyOf(db, 'LARGE')).toBe(3);

  expect(await rowStatements(db, 'delete from', () => clearBatchContents(db, 'LARGE'))).toBe(RANGES);

  expect(await countOf(db, 'payouts', (q) => q.where({ batch_id: 'LARGE' }))).toBe(0);
  expect(await countOf(db, 'payout_history', (q) => q)).toBe(historySmall);
  expect(await countOf(db, 'batch_errors', (q) => q.where({ batch_id: 'LARGE' }))).toBe(0);
  expect(await countOf(db, 'payouts', (q) => q.where({ batch_id: 'SMALL' }))).toBe(2);
  expect(await countOf(db, 'batch_errors', (q) => q.where({ batch_id: 'SMALL' }))).toBe(3);
}

export async function checkPruneInRanges(db: Database): Promise<void> {
  await seed(db);
  await db('payouts').update({ state: 'PAID', payout_id: db.raw(`'P-' || merchant_reference_id`) });

  expect(await rowStatements(db, 'update', () => pruneBatchDetails(db, 'LARGE', 77))).toBe(RANGES);

  expect(await countOf(db, 'payouts', (q) => q.where({ batch_id: 'LARGE' }).whereNotNull('request_values'))).toBe(0);
  expect(await countOf(db, 'payouts', (q) => q.where({ batch_id: 'LARGE', updated_at: 77 }))).toBe(LARGE);
  // References and payout ids stay.
  expect(
    await db('payouts')
      .where({ batch_id: 'LARGE', line: LARGE + 1 })
      .first('merchant_reference_id', 'payout_id'),
  ).toEqual({
    merchant_reference_id: `L-${LARGE}`,
    payout_id: `P-L-${LARGE}`,
  });
  expect(await historyOf(db, 'LARGE')).toBe(0);
  expect(await countOf(db, 'batch_errors', (q) => q.where({ batch_id: 'LARGE' }))).toBe(0);
  expect(Number((await db('batches').where({ id: 'LARGE' }).first('pruned_at'))?.pruned_at)).toBe(77);
  expect(await countOf(db, 'payouts', (q) => q.where({ batch_id: 'SMALL' }).whereNotNull('request_values'))).toBe(2);
  expect(await countOf(db, 'batch_errors', (q) => q.where({ batch_id: 'SMALL' }))).toBe(3);
}

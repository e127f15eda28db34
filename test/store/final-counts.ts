/**
 * Row counts kept by a batch that ended (src/store/counts.ts, migration 0009), checked on a real database
 * of either engine (SQLite in test/store, PostgreSQL in test/postgres): the counts over every batch are a
 * count of every row, kept counts and counted rows each once; and migration 0009 gives the batches that
 * ended before it their counts, none to a batch with a row that may still move.
 */
import { expect } from 'vitest';
import type { RowState } from '../../src/domain/lifecycle.js';
import { getBatch, updateBatch } from '../../src/store/batches.js';
import { stateCountsOfAllBatches, type StateCounts } from '../../src/store/counts.js';
import type { Database } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { seedBatch } from './moves.js';

/** A batch of `states.length` rows, row i in states[i]. */
export async function batchWithRows(db: Database, id: string, states: RowState[]): Promise<void> {
  await seedBatch(db, id, states.length, 'PAID');
  for (const [i, state] of states.entries())
    await db('payouts')
      .where({ batch_id: id, line: i + 2 })
      .update({ state });
}

/** Every row counted by its state, with no regard to batches. */
export async function everyRowCounted(db: Database): Promise<StateCounts> {
  const rows = (await db('payouts').select('state').count({ n: '*' }).groupBy('state')) as { state: RowState; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** On a database at the latest migration, with no batches yet. */
export async function checkCountsOfEveryBatch(db: Database): Promise<void> {
  await batchWithRows(db, 'A', ['PAID', 'PAID', 'CANCELLED']);
  await updateBatch(db, 'A', { state: 'COMPLETE' }, 5);
  await batchWithRows(db, 'B', ['PAID', 'PENDING', 'READY', 'UNKNOWN', 'CREATING']);
  await batchWithRows(db, 'C', ['INVALID', 'DUPLICATE', 'NOT_SUBMITTED']);
  await db('batches').where({ id: 'C' }).update({ state: 'VALIDATING' });
  await updateBatch(db, 'C', { state: 'REJECTED' }, 5);
  expect((await getBatch(db, 'A'))?.finalCountsJson).not.toBeNull();
  expect((await getBatch(db, 'C'))?.finalCountsJson).not.toBeNull();
  const all = await stateCountsOfAllBatches(db);
  expect(all).toEqual(await everyRowCounted(db));
  expect(all).toEqual({
    PAID: 3,
    CANCELLED: 1,
    PENDING: 1,
    READY: 1,
    UNKNOWN: 1,
    CREATING: 1,
    INVALID: 1,
    DUPLICATE: 1,
    NOT_SUBMITTED: 1,
  });
}

const applied = async (db: Database): Promise<string[]> => (await db('payoutd_migrations').orderBy('id').pluck('name')) as string[];

/** On a database at the latest migration, with no batches yet: taken down to 0008 and up to 0009 again. */
export async function checkFinalCountsMigration(db: Database): Promise<void> {
  // Back to 0008, one migration at a time: the database as an earlier build left it.
  while ((await applied(db)).at(-1) !== '0008_request_values') await db.migrate.down();
  for (const [id, state, rows] of [
    ['OLD-DONE', 'COMPLETE', ['PAID', 'CANCELLED', 'PAID']],
    ['OLD-REJ', 'REJECTED', ['NOT_SUBMITTED', 'INVALID']],
    ['OLD-ODD', 'REJECTED', ['NOT_SUBMITTED', 'READY']],
    ['OLD-RUN', 'ACTIVE', ['PAID', 'PENDING']],
  ] as const) {
    await batchWithRows(db, id, [...rows]);
    await db('batches').where({ id }).update({ state });
  }
  await db('batches').insert({
    id: 'OLD-EMPTY',
    file_name: 'again.csv',
    stored_path: '/claimed/again.csv',
    sha256: 'OLD-DONE'.padEnd(64, '0'),
    size: 1,
    mtime_ms: 1,
    state: 'DUPLICATE',
    received_at: 2,
    updated_at: 2,
  });

  await db.migrate.up();
  expect((await applied(db)).at(-1)).toBe('0009_final_counts');
  expect(MIGRATIONS.map((m) => m.name)).toContain('0009_final_counts');
  const kept = Object.fromEntries(
    ((await db('batches').orderBy('id').select('id', 'final_counts_json')) as { id: string; final_counts_json: string | null }[]).map(
      (b) => [b.id, b.final_counts_json],
    ),
  );
  expect(kept).toEqual({
    'OLD-DONE': '{"PAID":2,"CANCELLED":1}',
    'OLD-EMPTY': '{}',
    'OLD-ODD': null,
    'OLD-REJ': '{"INVALID":1,"NOT_SUBMITTED":1}',
    'OLD-RUN': null,
  });
  expect(await stateCountsOfAllBatches(db)).toEqual(await everyRowCounted(db));
}

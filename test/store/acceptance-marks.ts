/**
 * A file sent again (test/store on SQLite, test/postgres on PostgreSQL): the acceptance marks every row whose
 * reference another batch holds, and every reference used twice in the file, in multi-row statements; their
 * count does not grow with the rows (a large file sent twice marks a million rows: one statement each would
 * hold the write lock for minutes).
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { countStatements } from './moves.js';

const ROWS = 600;

export async function checkFileSentAgain(db: Database): Promise<void> {
  const references = Array.from({ length: ROWS }, (_, i) => `SENT-${i + 1}`);
  await addBatch(db, 'FIRST', 'first.csv');
  await addRows(
    db,
    references.map((ref, i) => validRow('FIRST', i + 2, request(ref))),
  );
  expect(await acceptBatchRows(db, 'FIRST', 'skip-rows', 5)).toMatchObject({ accepted: true, readyCount: ROWS });

  await addBatch(db, 'AGAIN', 'first-again.csv');
  const twice = ROWS + 2;
  await addRows(db, [
    ...references.map((ref, i) => validRow('AGAIN', i + 2, request(ref))),
    // A reference twice in this file, its first row holding it (READY), the second set aside (VALIDATED).
    { ...validRow('AGAIN', twice, request('TWICE-1')), state: 'READY' },
    validRow('AGAIN', twice + 1, request('TWICE-1')),
  ]);
  const statements = countStatements(db);
  const verdict = await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6);
  const sent = statements.stop();

  expect(verdict).toMatchObject({ accepted: false, readyCount: 0, invalidCount: 2, duplicateCount: ROWS, rowsChanged: ROWS + 2 });
  expect(sent.length).toBeLessThan(15);
  const rows = (await db('payouts').where({ batch_id: 'AGAIN' }).orderBy('line')) as {
    line: number;
    state: string;
    reason_code: string;
    reason: string;
    updated_at: number | string;
  }[];
  expect(
    rows.slice(0, ROWS).every((r) => r.state === 'DUPLICATE' && r.reason_code === 'DUPLICATE_REFERENCE' && Number(r.updated_at) === 6),
  ).toBe(true);
  expect(rows[ROWS - 1]?.reason).toBe(
    `merchantReferenceId SENT-${ROWS} was already submitted by batch FIRST line ${ROWS + 1} with the same content; not paid again`,
  );
  expect(rows.slice(ROWS)).toMatchObject([
    { line: twice, state: 'INVALID', reason_code: 'DUPLICATE_IN_FILE', reason: expect.stringContaining(`also on line ${twice + 1}`) },
    { line: twice + 1, state: 'INVALID', reason_code: 'DUPLICATE_IN_FILE', reason: expect.stringContaining(`also on line ${twice}`) },
  ]);
  const errors = await listBatchErrors(db, 'AGAIN');
  expect(errors).toHaveLength(ROWS + 2);
  expect(errors[0]).toEqual({
    line: 2,
    column: 'merchantReferenceId',
    field: 'merchantReferenceId',
    code: 'DUPLICATE_REFERENCE',
    message: 'merchantReferenceId SENT-1 was already submitted by batch FIRST line 2 with the same content; not paid again',
  });
  // The first file keeps its references.
  const [first] = (await db('payouts').where({ batch_id: 'FIRST', state: 'READY' }).count({ n: '*' })) as { n: number | string }[];
  expect(Number(first?.n)).toBe(ROWS);
}

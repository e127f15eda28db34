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

/** What a row is told of a reference that a READY row of FIRST, not sent yet, holds. */
const WAITING =
  "and that row is not sent yet (READY): waiting to be sent; this row is not paid: wait for that row's outcome (payoutd status --batch FIRST), " +
  'and send this row again only if that row ends unpaid: under this reference if it ends NOT_SUBMITTED, from the retry file of that batch if it ends CANCELLED';

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
    `DUPLICATE_REFERENCE ["merchantReferenceId"]: the reference SENT-${ROWS} was already submitted by line ${ROWS + 1} of "first.csv" (batch FIRST, received 2026-01-10 12:00 UTC) with the same content, ${WAITING}`,
  );
  expect(rows.slice(ROWS)).toMatchObject([
    { line: twice, state: 'INVALID', reason_code: 'DUPLICATE_IN_FILE', reason: expect.stringContaining(`also on line ${twice + 1}`) },
    { line: twice + 1, state: 'INVALID', reason_code: 'DUPLICATE_IN_FILE', reason: expect.stringContaining(`also on line ${twice}`) },
  ]);
  const errors = await listBatchErrors(db, 'AGAIN');
  expect(errors).toHaveLength(ROWS + 2);
  expect(errors[0]).toEqual({
    file: null,
    line: 2,
    column: 'merchantReferenceId',
    columnIndex: null,
    field: 'merchantReferenceId',
    code: 'DUPLICATE_REFERENCE',
    message: `the reference SENT-1 was already submitted by line 2 of "first.csv" (batch FIRST, received 2026-01-10 12:00 UTC) with the same content, ${WAITING}`,
  });
  // The first file keeps its references.
  const [first] = (await db('payouts').where({ batch_id: 'FIRST', state: 'READY' }).count({ n: '*' })) as { n: number | string }[];
  expect(Number(first?.n)).toBe(ROWS);
}

/** Rows of a large file sent again: more than two ranges of the acceptance's marks (src/store/acceptance.ts). */
export const LARGE_AGAIN = 12_000;
/** The line of LARGE_AGAIN's file that repeats line 3's reference: the two are in different ranges. */
const REPEAT_LINE = 11_001;

/**
 * FIRST, accepted, holds the references BIG-1… of its LARGE_AGAIN rows; AGAIN, just read, has the same rows set
 * aside (VALIDATED), each with the reference `referenceAt` gives its line.
 */
export async function seedLargeFileSentAgain(db: Database, referenceAt = (_line: number, ref: string) => ref): Promise<void> {
  const references = Array.from({ length: LARGE_AGAIN }, (_, i) => `BIG-${i + 1}`);
  await addBatch(db, 'FIRST', 'first.csv');
  await addRows(
    db,
    references.map((ref, i) => ({ ...validRow('FIRST', i + 2, request(ref)), state: 'READY' as const })),
  );
  await addBatch(db, 'AGAIN', 'first-again.csv');
  await addRows(
    db,
    references.map((ref, i) => validRow('AGAIN', i + 2, request(referenceAt(i + 2, ref)))),
  );
}

/**
 * A large file sent again, its marks made a range of lines at a time: every row whose reference the first
 * file holds is marked as before, and a reference twice in the file, on lines of different ranges, is a
 * duplicate in the file (as when all is marked at once), not a reference another batch holds.
 */
export async function checkLargeFileSentAgain(db: Database): Promise<void> {
  await seedLargeFileSentAgain(db, (line, ref) => (line === REPEAT_LINE ? 'BIG-2' : ref));
  const verdict = await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6);

  expect(verdict).toMatchObject({
    accepted: false,
    readyCount: 0,
    invalidCount: 2,
    duplicateCount: LARGE_AGAIN - 2,
    rowsChanged: LARGE_AGAIN,
    rejectReason: 'no valid row to pay',
  });
  const rows = (await db('payouts').where({ batch_id: 'AGAIN' }).orderBy('line')) as {
    line: number;
    state: string;
    reason_code: string;
    reason: string;
  }[];
  const repeated = new Set([3, REPEAT_LINE]);
  expect(rows.filter((r) => !repeated.has(r.line)).every((r) => r.state === 'DUPLICATE' && r.reason_code === 'DUPLICATE_REFERENCE')).toBe(
    true,
  );
  expect(rows.filter((r) => repeated.has(r.line))).toMatchObject([
    { line: 3, state: 'INVALID', reason_code: 'DUPLICATE_IN_FILE', reason: expect.stringContaining(`also on line ${REPEAT_LINE}`) },
    {
      line: REPEAT_LINE,
      state: 'INVALID',
      reason_code: 'DUPLICATE_IN_FILE',
      reason: expect.stringContaining('also on line 3 of this file'),
    },
  ]);
  expect(rows.at(-1)?.reason).toBe(
    `DUPLICATE_REFERENCE ["merchantReferenceId"]: the reference BIG-${LARGE_AGAIN} was already submitted by line ${LARGE_AGAIN + 1} of "first.csv" (batch FIRST, received 2026-01-10 12:00 UTC) with the same content, ${WAITING}`,
  );
  const errors = await listBatchErrors(db, 'AGAIN');
  expect(errors).toHaveLength(LARGE_AGAIN);
  expect(errors.filter((e) => e.code === 'DUPLICATE_IN_FILE').map((e) => e.line)).toEqual([3, REPEAT_LINE]);
  const [first] = (await db('payouts').where({ batch_id: 'FIRST', state: 'READY' }).count({ n: '*' })) as { n: number | string }[];
  expect(Number(first?.n)).toBe(LARGE_AGAIN);
}

/** Valid rows of a large file refused for one invalid row: more than two ranges of the rows let go. */
export const LARGE_REFUSED = 45_000;

/** A large file with one invalid row under reject-file: every valid row is let go (NOT_SUBMITTED), over the ranges. */
export async function checkLargeFileRefused(db: Database): Promise<void> {
  await addBatch(db, 'BIG', 'big.csv');
  await addRows(db, [
    ...Array.from({ length: LARGE_REFUSED }, (_, i) => ({ ...validRow('BIG', i + 2, request(`R-${i + 1}`)), state: 'READY' as const })),
    { ...validRow('BIG', LARGE_REFUSED + 2, request('R-BAD')), state: 'INVALID', reasonCode: 'AMOUNT', reason: 'bad amount' },
  ]);
  const verdict = await acceptBatchRows(db, 'BIG', 'reject-file', 6);

  expect(verdict).toMatchObject({ accepted: false, readyCount: 0, invalidCount: 1, duplicateCount: 0 });
  const states = (await db('payouts')
    .where({ batch_id: 'BIG' })
    .select('state', 'reason_code', 'reason')
    .count({ n: '*' })
    .groupBy('state', 'reason_code', 'reason')) as {
    state: string;
    reason_code: string;
    reason: string;
    n: number | string;
  }[];
  expect(states.map((s) => ({ ...s, n: Number(s.n) })).sort((a, b) => a.state.localeCompare(b.state))).toEqual([
    { state: 'INVALID', reason_code: 'AMOUNT', reason: 'bad amount', n: 1 },
    {
      state: 'NOT_SUBMITTED',
      reason_code: 'FILE_REJECTED',
      reason: 'not paid: the file has 1 invalid row(s) and the policy is reject-file',
      n: LARGE_REFUSED,
    },
  ]);
}

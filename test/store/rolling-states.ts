/**
 * The 24-hour total of a batch an operator cancelled, row state by row state: what was or may have been sent
 * counts, what never was does not. Shared by the SQLite and PostgreSQL test files.
 */
import { expect } from 'vitest';
import type { RowState } from '../../src/domain/lifecycle.js';
import { rollingTotals } from '../../src/store/approvals.js';
import type { Database } from '../../src/store/db.js';
import { DAY, T0, addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';

/** Each row's state, its create attempts, and whether it counts. The amounts are powers of two, so a total names its rows. */
const ROWS: [RowState, number, boolean][] = [
  ['CREATING', 1, true],
  ['UNKNOWN', 1, true],
  ['PENDING', 1, true],
  ['PAID', 1, true],
  ['CANCELLED', 1, true],
  ['REJECTED', 1, true], // refused by the service
  ['NOT_SUBMITTED', 1, false], // its create proven never received, then cancelled
  ['NOT_SUBMITTED', 0, false],
  ['READY', 1, false], // back from a fenced create, about to be made NOT_SUBMITTED: never sent after a cancel
];

const sum = (counted: (row: [RowState, number, boolean]) => boolean): string =>
  String(ROWS.reduce((n, row, i) => (counted(row) ? n + 2 ** i : n), 0));

export async function checkCancelledBatchCountsWhatMayHaveBeenSent(db: Database): Promise<void> {
  await addBatch(db, 'B1', 'mixed.csv');
  await addRows(
    db,
    ROWS.map((_, i) => validRow('B1', i + 2, request(`RS-${i}`, { payoutAmount: String(2 ** i) }))),
  );
  for (const [i, [state, createAttempts]] of ROWS.entries()) await setRow(db, 'B1', i + 2, { state, createAttempts });
  const figures = { totals: { PHP: sum(() => true) } };
  await db('batches')
    .where({ id: 'B1' })
    .update({ approval_state: 'NONE', released_at: T0, approval_figures_json: JSON.stringify(figures) });
  expect(await rollingTotals(db, T0 - DAY, 'NEXT')).toEqual(figures.totals);

  await db('batches')
    .where({ id: 'B1' })
    .update({ cancelled_at: T0 + 1 });
  expect(await rollingTotals(db, T0 - DAY, 'NEXT')).toEqual({ PHP: sum(([, , counts]) => counts) });
}

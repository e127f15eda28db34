/**
 * The 24-hour total of a batch an operator cancelled, row state by row state: what was or may have been sent
 * counts, what never was does not; and a decision reads those rows before it takes its lock, not under it.
 * Shared by the SQLite and PostgreSQL test files.
 */
import { expect } from 'vitest';
import { approvalAtAcceptance } from '../../src/approval/gate.js';
import { configSchema } from '../../src/config/schema.js';
import { ManualClock } from '../../src/domain/clock.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { cancelledCounts, rollingTotals } from '../../src/store/approvals.js';
import { getBatch } from '../../src/store/batches.js';
import type { Database } from '../../src/store/db.js';
import { DAY, T0, addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';

/** The 24-hour total from `since`, the cancelled batches' counts read first as a decision reads them. */
export async function totalsFrom(db: Database, since: number): Promise<Record<string, string>> {
  return rollingTotals(db, since, 'NEXT', await cancelledCounts(db, since));
}

/**
 * Each row's state, its create attempts, and whether it counts. The amounts are powers of two, so a total names
 * its rows. A row a create was tried for counts whatever its state: a late create may have paid it.
 */
const ROWS: [RowState, number, boolean][] = [
  ['CREATING', 1, true],
  ['UNKNOWN', 1, true],
  ['PENDING', 1, true],
  ['PAID', 1, true],
  ['CANCELLED', 1, true],
  ['REJECTED', 1, true],
  ['NOT_SUBMITTED', 0, false],
  ['READY', 0, false], // never sent, about to be made NOT_SUBMITTED: never sent after a cancel
  ['NOT_SUBMITTED', 1, true], // a reconcile found its reference absent before the cancel; a late create may land
  ['READY', 1, true], // the same, not made NOT_SUBMITTED yet
];

const sum = (counted: (row: [RowState, number, boolean]) => boolean): string =>
  String(ROWS.reduce((n, row, i) => (counted(row) ? n + 2 ** i : n), 0));

/** Batch B1, let go at T0 with all its rows, each in its state of ROWS; its figures' totals. */
async function mixedBatch(db: Database): Promise<Record<string, string>> {
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
  return figures.totals;
}

export async function checkCancelledBatchCountsWhatMayHaveBeenSent(db: Database): Promise<void> {
  const whole = await mixedBatch(db);
  expect(await totalsFrom(db, T0 - DAY)).toEqual(whole);
  const readBeforeCancel = await cancelledCounts(db, T0 - DAY);

  await db('batches')
    .where({ id: 'B1' })
    .update({ cancelled_at: T0 + 1 });
  expect(await totalsFrom(db, T0 - DAY)).toEqual({ PHP: sum(([, , counts]) => counts) });
  // Cancelled after its count was read: it counts whole, never less than it may have sent.
  expect(await rollingTotals(db, T0 - DAY, 'NEXT', readBeforeCancel)).toEqual(whole);
}

/**
 * A batch accepted beside a cancelled one: the cancelled batch's rows are read before the decision's
 * transaction or, with no 24-hour limit, not at all; never under the lock another writer would wait for.
 */
export async function checkDecisionReadsNoRowsUnderLock(db: Database): Promise<void> {
  await mixedBatch(db);
  await db('batches')
    .where({ id: 'B1' })
    .update({ cancelled_at: T0 + 1 });
  await addBatch(db, 'NEXT', 'next.csv');
  await addRows(db, [validRow('NEXT', 2, request('NX-1', { payoutAmount: '100' }))]);
  await setRow(db, 'NEXT', 2, { state: 'READY' });
  const next = await getBatch(db, 'NEXT');

  const reads: { inTransaction: boolean }[] = [];
  const onQuery = (q: { sql: string; bindings?: unknown[]; __knexTxId?: string }): void => {
    if (/payouts/.test(q.sql) && q.bindings?.includes('B1')) reads.push({ inTransaction: q.__knexTxId !== undefined });
  };
  db.on('query', onQuery);
  const decide = async (perCurrency: Record<string, unknown>) => {
    reads.length = 0;
    await db('batches').where({ id: 'NEXT' }).update({ approval_state: null, released_at: null });
    const policy = configSchema.parse({ limits: { onExceeded: 'refuse', perCurrency } });
    const deps = {
      db,
      clock: new ManualClock(T0 + 2),
      policy,
      users: { nameOfUid: async () => null, uidOfName: async () => null, groupsOf: async () => [] },
    };
    return approvalAtAcceptance(deps, next!);
  };
  try {
    // 831 PHP may have been sent and 100 more is within 1000; the 1023 let go would not be.
    expect(await decide({ PHP: { max24h: '1000' } })).toEqual({ kind: 'release' });
    expect(reads).not.toHaveLength(0);
    expect(reads.filter((r) => r.inTransaction)).toEqual([]);

    expect(await decide({ PHP: { maxBatch: '200' } })).toEqual({ kind: 'release' });
    expect(reads).toEqual([]);
  } finally {
    db.off('query', onQuery);
  }
}

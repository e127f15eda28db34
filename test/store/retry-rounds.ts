/**
 * The acceptance's guard on retry rounds, checked on a real database of either engine (SQLite in test/store,
 * PostgreSQL in test/postgres): a retry row is refused (DUPLICATE, RETRY_DUPLICATE) when its base, or another
 * round of that base in either spelling, is held by a row that was or may be sent and not cancelled, in another
 * batch or in its own file; rows never sent, and cancelled or refused ones, do not hold it.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { retryBase, retryReference } from '../../src/report/index.js';
import { addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';

/** A batch `id` of file `file` holding `rows` (reference and state each; lines 2, 3, …), in batch state `state`. */
async function batchOf(db: Database, id: string, file: string, rows: [string, RowState][], state = 'ACTIVE'): Promise<void> {
  await addBatch(db, id, file);
  if (state !== 'ACTIVE') await db('batches').where({ id }).update({ state });
  // Inserted READY (holding), then set as the test needs it: the lifecycle is not what is checked here.
  await addRows(
    db,
    rows.map(([ref], i) => ({ ...validRow(id, i + 2, request(ref)), state: 'READY' as const })),
  );
  for (const [i, [, to]] of rows.entries()) if (to !== 'READY') await setRow(db, id, i + 2, { state: to });
}

/** The batch being accepted: read, its rows READY. */
const reading = (db: Database, id: string, file: string, refs: string[]): Promise<void> =>
  batchOf(
    db,
    id,
    file,
    refs.map((r) => [r, 'READY']),
    'VALIDATING',
  );

async function rowsOf(db: Database, batchId: string): Promise<[string, string, string | null][]> {
  const rows = (await db('payouts')
    .where({ batch_id: batchId })
    .orderBy('line')
    .select('merchant_reference_id', 'state', 'reason_code')) as {
    merchant_reference_id: string;
    state: string;
    reason_code: string | null;
  }[];
  return rows.map((r) => [r.merchant_reference_id, r.state, r.reason_code]);
}

async function reasonOf(db: Database, batchId: string, line: number): Promise<string> {
  const r = (await db('payouts').where({ batch_id: batchId, line }).first('reason')) as { reason: string };
  return r.reason;
}

const RECEIVED = 'received 2026-01-10 12:00 UTC';

/** A retry of a round another batch paid is refused with where that round is and that nothing is to be done; others pass. */
export async function checkRetryOfPaidRound(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['T-1', 'CANCELLED'],
    ['T-2', 'PAID'],
  ]);
  await batchOf(db, 'RETRY1', 'retry.csv', [['T-1-R1', 'PAID']]);
  await reading(db, 'AGAIN', 'fresh.csv', ['T-1-R2', 'X-1', 'T-9-R1']);

  const verdict = await acceptBatchRows(db, 'AGAIN', 'skip-rows', 7);

  expect(verdict).toMatchObject({ accepted: true, readyCount: 2, duplicateCount: 1, rowsChanged: 1 });
  expect(await rowsOf(db, 'AGAIN')).toEqual([
    ['T-1-R2', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['X-1', 'READY', null],
    ['T-9-R1', 'READY', null],
  ]);
  const message = `the reference T-1-R2 retries T-1, which line 2 of "retry.csv" (batch RETRY1, ${RECEIVED}) already paid as T-1-R1 (PAID); this row is not paid: nothing to do, that payout was made; if this row is another payout, not a retry, give it a reference not ending in -R2`;
  expect(await reasonOf(db, 'AGAIN', 2)).toBe(`RETRY_DUPLICATE ["merchantReferenceId"]: ${message}`);
  expect(await listBatchErrors(db, 'AGAIN')).toEqual([
    {
      file: null,
      line: 2,
      column: 'merchantReferenceId',
      columnIndex: null,
      field: 'merchantReferenceId',
      code: 'RETRY_DUPLICATE',
      message,
    },
  ]);

  // Under reject-file the whole file is refused for it.
  await reading(db, 'AGAIN2', 'fresh2.csv', ['T-1-R3', 'X-2']);
  expect(await acceptBatchRows(db, 'AGAIN2', 'reject-file', 8)).toMatchObject({ accepted: false, duplicateCount: 1 });
  expect(await rowsOf(db, 'AGAIN2')).toEqual([
    ['T-1-R3', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['X-2', 'NOT_SUBMITTED', 'FILE_REJECTED'],
  ]);
}

/** The states of another round (or of the base itself) that hold the base, and those that leave it free. */
export async function checkHoldingStates(db: Database): Promise<void> {
  const holding: RowState[] = ['READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID'];
  const free: RowState[] = ['INVALID', 'DUPLICATE', 'NOT_SUBMITTED', 'CANCELLED', 'REJECTED'];
  const states = [...holding, ...free];
  // Round 1 of base S<i> in state states[i], and base B<i> itself (an original) in that state.
  await batchOf(db, 'EARLIER', 'earlier.csv', [
    ...states.map((s, i): [string, RowState] => [`S${i}-R1`, s]),
    ...states.map((s, i): [string, RowState] => [`B${i}`, s]),
  ]);
  await reading(db, 'RETRY', 'retry.csv', [...states.map((_, i) => `S${i}-R2`), ...states.map((_, i) => `B${i}-R1`)]);

  await acceptBatchRows(db, 'RETRY', 'skip-rows', 9);

  const rows = await rowsOf(db, 'RETRY');
  const expected = (s: RowState): string => (holding.includes(s) ? 'DUPLICATE' : 'READY');
  expect(rows.map(([ref, state]) => [ref, state])).toEqual([
    ...states.map((s, i) => [`S${i}-R2`, expected(s)]),
    ...states.map((s, i) => [`B${i}-R1`, expected(s)]),
  ]);
  const pending = states.indexOf('PENDING');
  expect(await reasonOf(db, 'RETRY', 2 + pending)).toBe(
    `RETRY_DUPLICATE ["merchantReferenceId"]: the reference S${pending}-R2 retries S${pending}, which line ${2 + pending} of "earlier.csv" (batch EARLIER, ${RECEIVED}) is already paying as S${pending}-R1 (PENDING); this row is not paid: nothing to do but wait for that payout's outcome, and if it is cancelled, retry it from the retry file of that batch; if this row is another payout, not a retry, give it a reference not ending in -R2`,
  );
  expect(await reasonOf(db, 'RETRY', 2 + states.length + pending)).toContain(
    `the reference B${pending}-R1 retries B${pending}, which line ${2 + states.length + pending} of "earlier.csv" (batch EARLIER, ${RECEIVED}) is already paying as B${pending} (PENDING)`,
  );
}

/**
 * Two retry files read at the same time, each with another round of one cancellation: the one accepted first
 * is refused (the other may pay it), the other then pays it; in one file, both rounds are refused.
 */
export async function checkRoundsReadTogether(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [['T-1', 'CANCELLED']]);
  await reading(db, 'X', 'retry.csv', ['T-1-R1']);
  await reading(db, 'Y', 'fresh.csv', ['T-1-R2']);

  expect(await acceptBatchRows(db, 'X', 'skip-rows', 9)).toMatchObject({ accepted: false, duplicateCount: 1 });
  expect(await reasonOf(db, 'X', 2)).toBe(
    `RETRY_DUPLICATE ["merchantReferenceId"]: the reference T-1-R1 retries T-1, which line 2 of "fresh.csv" (batch Y, ${RECEIVED}), a file being read at the same time, may pay as T-1-R2 (READY); this row is not paid: wait for that file's outcome, and if it does not pay T-1, send this row again then`,
  );
  expect(await acceptBatchRows(db, 'Y', 'skip-rows', 10)).toMatchObject({ accepted: true, readyCount: 1 });

  await batchOf(db, 'FIRST2', 'pay2.csv', [['U-1', 'CANCELLED']]);
  await reading(db, 'BOTH', 'both.csv', ['U-1-R1', 'V-1', 'U-1-R2', 'V-1-R1']);
  expect(await acceptBatchRows(db, 'BOTH', 'skip-rows', 11)).toMatchObject({ accepted: true, readyCount: 1, duplicateCount: 3 });
  expect(await rowsOf(db, 'BOTH')).toEqual([
    ['U-1-R1', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['V-1', 'READY', null],
    ['U-1-R2', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['V-1-R1', 'DUPLICATE', 'RETRY_DUPLICATE'],
  ]);
  expect((await listBatchErrors(db, 'BOTH')).map((e) => [e.line, e.message])).toEqual([
    [
      2,
      'the reference U-1-R1 retries U-1, as does U-1-R2 on line 4 of this file; this row is not paid: keep one row for that payout and send it again',
    ],
    [
      4,
      'the reference U-1-R2 retries U-1, as does U-1-R1 on line 2 of this file; this row is not paid: keep one row for that payout and send it again',
    ],
    [5, 'the reference V-1-R1 retries V-1, which line 3 of this file pays itself; this row is not paid: remove it'],
  ]);
}

/** Rounds of one long base in both spellings (plain and hashed, and hashed with starts of two lengths) are one base. */
export async function checkHashedSpellings(db: Database): Promise<void> {
  const long = `INV-${'X'.repeat(56)}-0001`; // every round hashed
  const r9 = ((): string => {
    let ref = long;
    for (let n = 1; n <= 9; n++) ref = retryReference(retryBase(ref).base, n);
    return ref;
  })();
  const middle = `M-${'Y'.repeat(58)}`; // rounds 1-99 plain, 100 on hashed
  // A base whose own text ends like a hash: the same `-H…` after another start is another base.
  const own = 'AAA-H0123456789';
  await batchOf(db, 'EARLIER', 'earlier.csv', [
    [long, 'CANCELLED'],
    [r9, 'PENDING'],
    [`${middle}-R1`, 'PAID'],
    [`${own}-R1`, 'PAID'],
  ]);
  const r10 = retryReference(long, 10);
  const m100 = retryReference(middle, 100);
  expect([r9.length, r10.length, m100.length]).toEqual([64, 64, 64]);
  expect(retryBase(r10).base).not.toBe(retryBase(r9).base);
  await reading(db, 'RETRY', 'retry.csv', [r10, m100, 'BBB-H0123456789-R2']);

  await acceptBatchRows(db, 'RETRY', 'skip-rows', 9);

  expect(await rowsOf(db, 'RETRY')).toEqual([
    [r10, 'DUPLICATE', 'RETRY_DUPLICATE'],
    [m100, 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['BBB-H0123456789-R2', 'READY', null],
  ]);
  expect(await reasonOf(db, 'RETRY', 2)).toContain(`is already paying as ${r9} (PENDING)`);
  expect(await reasonOf(db, 'RETRY', 3)).toContain(`already paid as ${middle}-R1 (PAID)`);
}

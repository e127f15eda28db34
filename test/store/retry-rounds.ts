/**
 * The acceptance's guard on retry rounds, checked on a real database of either engine (SQLite in test/store,
 * PostgreSQL in test/postgres): a retry row is refused (DUPLICATE, RETRY_DUPLICATE) when its base, or another
 * round of that base in either spelling, is held by a row that was or may be sent and not cancelled, in another
 * batch or in its own file; rows never sent, and cancelled or refused ones, do not hold it. A row is a retry only
 * when its base is known as a payout; an original is refused the same way while a round of it holds it.
 */
import { expect, it } from 'vitest';
import type { Database } from '../../src/store/db.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { retryBase, retryReference } from '../../src/report/index.js';
import { addBatch, addRows, request, setRow, validRow } from '../finance/helpers.js';

/** A batch `id` of file `file` holding `rows` (reference and state each; lines 2, 3, …), in batch state `state`. */
export async function batchOf(db: Database, id: string, file: string, rows: [string, RowState][], state = 'ACTIVE'): Promise<void> {
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
export const reading = (db: Database, id: string, file: string, refs: string[]): Promise<void> =>
  batchOf(
    db,
    id,
    file,
    refs.map((r) => [r, 'READY']),
    'VALIDATING',
  );

export async function rowsOf(db: Database, batchId: string): Promise<[string, string, string | null][]> {
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

export async function reasonOf(db: Database, batchId: string, line: number): Promise<string> {
  const r = (await db('payouts').where({ batch_id: batchId, line }).first('reason')) as { reason: string };
  return r.reason;
}

export const RECEIVED = 'received 2026-01-10 12:00 UTC';

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
  // Round 1 of base S<i> in state states[i], and base B<i> itself (an original) in that state; the originals S<i>,
  // cancelled, make the S<i> known as payouts (without them, S<i>-R1 and S<i>-R2 are payouts of their own).
  await batchOf(db, 'FIRST', 'first.csv', [...states.map((_, i): [string, RowState] => [`S${i}`, 'CANCELLED'])]);
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
      `the reference U-1-R1 retries U-1, a payout of line 2 of "pay2.csv" (batch FIRST2, ${RECEIVED}), as does U-1-R2 on line 4 of this file; this row is not paid: keep one row for that payout and send it again; if this row is another payout, not a retry, give it a reference not ending in -R1`,
    ],
    [
      4,
      `the reference U-1-R2 retries U-1, a payout of line 2 of "pay2.csv" (batch FIRST2, ${RECEIVED}), as does U-1-R1 on line 2 of this file; this row is not paid: keep one row for that payout and send it again; if this row is another payout, not a retry, give it a reference not ending in -R2`,
    ],
    [
      5,
      'the reference V-1-R1 retries V-1, which line 3 of this file pays itself; this row is not paid: remove it; if this row is another payout, not a retry, give it a reference not ending in -R1',
    ],
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

/**
 * Counts the rows the guard's statements (those reading the retry columns) hand back to the acceptance from
 * now on: a number of rows, not a time, so it tells a read per round from a read per pair of rounds.
 */
function countGuardRows(db: Database): () => number {
  let rows = 0;
  const count = (response: unknown, q: { sql: string }): void => {
    if (q.sql.includes('retry_') && Array.isArray(response)) rows += response.length;
  };
  db.on('query-response', count);
  return () => {
    db.off('query-response', count);
    return rows;
  };
}

/**
 * References ending in -R<n> whose base payoutd does not know (no row has it; a hashed one with no round in
 * another batch) are payouts of their own, as earlier builds paid them: a file of them is paid whole, and the
 * guard reads them once per base.
 */
export async function checkRoundsOfNoKnownBase(db: Database, rounds = 4000): Promise<void> {
  // A round paid in another batch does not make its plain base known: only a row with the base itself does.
  await batchOf(db, 'EARLIER', 'earlier.csv', [['LOT-R1', 'PAID']]);
  const refs = Array.from({ length: rounds }, (_, i) => `RUN-R${i + 1}`);
  await reading(db, 'RUNS', 'runs.csv', [...refs, 'LOT-R2', 'LONG-H0123456789-R1', 'LONG-H0123456789-R2']);

  const rowsRead = countGuardRows(db);
  const verdict = await acceptBatchRows(db, 'RUNS', 'reject-file', 9);

  expect(verdict).toMatchObject({ accepted: true, readyCount: rounds + 3, invalidCount: 0, duplicateCount: 0 });
  expect(await listBatchErrors(db, 'RUNS')).toEqual([]);
  // One row per base (RUN, LOT, LONG-H…), none per round.
  expect(rowsRead()).toBe(3);
}

/** Rounds of a base another batch paid are all refused, the file's rounds read once each (not once per pair). */
export async function checkRoundsOfPaidBase(db: Database, rounds = 4000): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [['RUN', 'PAID']]);
  await reading(
    db,
    'RUNS',
    'runs.csv',
    Array.from({ length: rounds }, (_, i) => `RUN-R${i + 1}`),
  );

  const rowsRead = countGuardRows(db);
  const verdict = await acceptBatchRows(db, 'RUNS', 'skip-rows', 9);

  expect(verdict).toMatchObject({ accepted: false, readyCount: 0, duplicateCount: rounds, rejectReason: 'no valid row to pay' });
  const rows = await rowsOf(db, 'RUNS');
  expect(rows.filter(([, state, code]) => state !== 'DUPLICATE' || code !== 'RETRY_DUPLICATE')).toEqual([]);
  expect(await reasonOf(db, 'RUNS', rounds + 1)).toBe(
    `RETRY_DUPLICATE ["merchantReferenceId"]: the reference RUN-R${rounds} retries RUN, which line 2 of "pay.csv" (batch FIRST, ${RECEIVED}) already paid as RUN (PAID); this row is not paid: nothing to do, that payout was made; if this row is another payout, not a retry, give it a reference not ending in -R${rounds}`,
  );
  // The base once and each round once: a read per pair of rounds would be rounds² rows.
  expect(rowsRead()).toBeLessThanOrEqual(2 * rounds);
}

/**
 * Two rounds in one file of a base known only through a round in another batch (a hashed spelling, whose
 * original text is not known): both refused, saying where that round is and the way out for distinct payouts.
 */
export async function checkInFileRoundsOfHashedBase(db: Database): Promise<void> {
  const long = `INV-${'Z'.repeat(56)}-0002`;
  const [r1, r2, r3] = [1, 2, 3].map((n) => retryReference(long, n));
  await batchOf(db, 'EARLIER', 'earlier.csv', [
    [long, 'CANCELLED'],
    [r1 ?? '', 'CANCELLED'],
  ]);
  await reading(db, 'RETRY', 'retry.csv', [r2 ?? '', r3 ?? '']);

  expect(await acceptBatchRows(db, 'RETRY', 'skip-rows', 9)).toMatchObject({ accepted: false, duplicateCount: 2 });
  const base = retryBase(r2 ?? '').base;
  expect((await listBatchErrors(db, 'RETRY')).map((e) => [e.line, e.message])).toEqual([
    [
      2,
      `the reference ${r2} retries ${base}, a payout retried as ${r1} by line 3 of "earlier.csv" (batch EARLIER, ${RECEIVED}), as does ${r3} on line 3 of this file; this row is not paid: keep one row for that payout and send it again; if this row is another payout, not a retry, give it a reference not ending in -R2`,
    ],
    [
      3,
      `the reference ${r3} retries ${base}, a payout retried as ${r1} by line 3 of "earlier.csv" (batch EARLIER, ${RECEIVED}), as does ${r2} on line 2 of this file; this row is not paid: keep one row for that payout and send it again; if this row is another payout, not a retry, give it a reference not ending in -R3`,
    ],
  ]);
}

/**
 * An original dropped again (its first row never sent) while a round of it is paid, being paid, or in a file
 * being read is refused; not once that round is cancelled or was never sent. Of the original and its round read
 * together, the file accepted first is refused and the other pays.
 */
export async function checkRetriedOriginal(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['Q-1', 'NOT_SUBMITTED'],
    ['Q-2', 'INVALID'],
    ['Q-3', 'NOT_SUBMITTED'],
    ['Q-4', 'NOT_SUBMITTED'],
  ]);
  await batchOf(db, 'RETRY', 'retry.csv', [
    ['Q-1-R1', 'PAID'],
    ['Q-2-R1', 'PENDING'],
    ['Q-3-R1', 'CANCELLED'],
    ['Q-4-R1', 'DUPLICATE'],
  ]);
  await reading(db, 'LATER', 'later.csv', ['Q-5-R1']);
  await reading(db, 'AGAIN', 'again.csv', ['Q-1', 'Q-2', 'Q-3', 'Q-4', 'Q-5', 'Q-6']);

  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 9)).toMatchObject({ accepted: true, readyCount: 3, duplicateCount: 3 });
  expect(await rowsOf(db, 'AGAIN')).toEqual([
    ['Q-1', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['Q-2', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['Q-3', 'READY', null],
    ['Q-4', 'READY', null],
    ['Q-5', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['Q-6', 'READY', null],
  ]);
  expect((await listBatchErrors(db, 'AGAIN')).map((e) => [e.line, e.message])).toEqual([
    [
      2,
      `the reference Q-1 was already paid by its retry Q-1-R1 (PAID) on line 2 of "retry.csv" (batch RETRY, ${RECEIVED}); this row is not paid: nothing to do, that payout was made; if this row is another payout, give it a reference of its own`,
    ],
    [
      3,
      `the reference Q-2 is already being paid by its retry Q-2-R1 (PENDING) on line 3 of "retry.csv" (batch RETRY, ${RECEIVED}); this row is not paid: nothing to do but wait for that payout's outcome, and if it is cancelled, retry it from the retry file of that batch; if this row is another payout, give it a reference of its own`,
    ],
    [
      6,
      `the reference Q-5 may be paid by its retry Q-5-R1 (READY) on line 2 of "later.csv" (batch LATER, ${RECEIVED}), a file being read at the same time; this row is not paid: wait for that file's outcome, and if it does not pay Q-5-R1, send this row again then`,
    ],
  ]);
  // The original refused, the round read with it pays.
  expect(await acceptBatchRows(db, 'LATER', 'skip-rows', 10)).toMatchObject({ accepted: true, readyCount: 1 });
}

/** What a row of `file.csv`'s batch `batch` recorded CANCELLED is told when the payout service contradicts it, or is asked. */
function contradictedTail(payoutId: string, batch: string, line: number, asked: boolean): string {
  const said = asked
    ? `a payout.updated event reported otherwise for payout ${payoutId} and payoutd is asking the payout service about it`
    : `the payout service reports otherwise for payout ${payoutId}`;
  return `${said}; this row is not paid: check payout ${payoutId} with the payout service before sending this retry again under any reference (payoutd status --batch ${batch}, line ${line}, says what payoutd knows of it)`;
}

/**
 * A CANCELLED row the payout service contradicts (a webhook said PAID and the query confirmed it), or is being
 * asked about, holds its base as a row being paid does: a retry taken before is refused saying why and what to
 * do, its original dropped again too; once the check agrees with CANCELLED (note and check cleared), a retry
 * is paid. A paid round still names the base first.
 */
export async function checkContradictedHolder(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['C-1', 'CANCELLED'],
    ['C-2', 'CANCELLED'],
    ['C-3', 'CANCELLED'],
    ['C-4', 'CANCELLED'],
    ['C-5', 'CANCELLED'],
    ['Q-1', 'NOT_SUBMITTED'],
  ]);
  await batchOf(db, 'RETRY', 'retry.csv', [
    ['C-4-R1', 'CANCELLED'],
    ['C-5-R1', 'PAID'],
    ['Q-1-R1', 'CANCELLED'],
  ]);
  const note = 'the payout service now reports PAID for payout PO-…, recorded CANCELLED here: do not send this row again';
  // C-1 and C-5 contradicted, C-2 being asked, C-3 asked and shown as recorded, C-4 and Q-1 through their round.
  for (const [batch, line, patch] of [
    ['FIRST', 2, { payoutId: 'PO-C1', serviceNote: note, serviceNotedAt: 3 }],
    ['FIRST', 3, { payoutId: 'PO-C2', serviceCheck: 'PAYOUT', serviceCheckAt: 3, serviceNote: note, serviceNotedAt: 3 }],
    ['FIRST', 4, { payoutId: 'PO-C3', serviceNote: null, serviceNotedAt: 3 }],
    ['FIRST', 6, { payoutId: 'PO-C5', serviceNote: note, serviceNotedAt: 3 }],
    ['RETRY', 2, { payoutId: 'PO-C4R1', serviceNote: note, serviceNotedAt: 3 }],
    ['RETRY', 4, { payoutId: 'PO-Q1R1', serviceCheck: 'REFERENCE', serviceCheckAt: 3, serviceNote: note, serviceNotedAt: 3 }],
  ] as const)
    await setRow(db, batch, line, patch);
  await reading(db, 'TAKEN', 'taken.csv', ['C-1-R1', 'C-2-R1', 'C-3-R1', 'C-4-R2', 'C-5-R2', 'Q-1']);

  expect(await acceptBatchRows(db, 'TAKEN', 'skip-rows', 9)).toMatchObject({ accepted: true, readyCount: 1, duplicateCount: 5 });
  // C-3's check agreed: it holds nothing. Every other row is refused, each named below.
  expect((await rowsOf(db, 'TAKEN')).filter(([, state, code]) => state !== 'DUPLICATE' || code !== 'RETRY_DUPLICATE')).toEqual([
    ['C-3-R1', 'READY', null],
  ]);
  const own = (n: number): string => `; if this row is another payout, not a retry, give it a reference not ending in -R${n}`;
  expect((await listBatchErrors(db, 'TAKEN')).map((e) => [e.line, e.message])).toEqual([
    [
      2,
      `the reference C-1-R1 retries C-1, which line 2 of "pay.csv" (batch FIRST, ${RECEIVED}) recorded CANCELLED as C-1, but ${contradictedTail('PO-C1', 'FIRST', 2, false)}${own(1)}`,
    ],
    [
      3,
      `the reference C-2-R1 retries C-2, which line 3 of "pay.csv" (batch FIRST, ${RECEIVED}) recorded CANCELLED as C-2, but ${contradictedTail('PO-C2', 'FIRST', 3, true)}${own(1)}`,
    ],
    [
      5,
      `the reference C-4-R2 retries C-4, which line 2 of "retry.csv" (batch RETRY, ${RECEIVED}) recorded CANCELLED as C-4-R1, but ${contradictedTail('PO-C4R1', 'RETRY', 2, false)}${own(2)}`,
    ],
    [
      6,
      `the reference C-5-R2 retries C-5, which line 3 of "retry.csv" (batch RETRY, ${RECEIVED}) already paid as C-5-R1 (PAID); this row is not paid: nothing to do, that payout was made${own(2)}`,
    ],
    [
      7,
      `the reference Q-1 was retried by its retry Q-1-R1 on line 4 of "retry.csv" (batch RETRY, ${RECEIVED}), recorded CANCELLED, but ${contradictedTail('PO-Q1R1', 'RETRY', 4, true).replace('sending this retry', 'sending this row')}; if this row is another payout, give it a reference of its own`,
    ],
  ]);

  // The check of C-1 asked again agrees with CANCELLED (src/poll/checks.ts clears its note): a retry pays it.
  await setRow(db, 'FIRST', 2, { serviceCheck: null, serviceCheckAt: null, serviceNote: null, serviceNotedAt: 10 });
  await reading(db, 'AGAIN', 'again.csv', ['C-1-R1']);
  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 11)).toMatchObject({ accepted: true, readyCount: 1, duplicateCount: 0 });
}

/**
 * A round found REFERENCE_TAKEN (REJECTED, the payout service holding a payout under its reference) may have
 * been paid as the retry file and the advice take it: a later round, or its original dropped again, is refused.
 */
export async function checkReferenceTakenRound(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['T-1', 'CANCELLED'],
    ['T-2', 'NOT_SUBMITTED'],
  ]);
  await batchOf(db, 'RETRY', 'retry.csv', [
    ['T-1-R1', 'REJECTED'],
    ['T-2-R1', 'REJECTED'],
  ]);
  for (const line of [2, 3]) await setRow(db, 'RETRY', line, { reasonCode: 'REFERENCE_TAKEN' });
  await reading(db, 'TAKEN', 'taken.csv', ['T-1-R2', 'T-2']);
  expect(await acceptBatchRows(db, 'TAKEN', 'skip-rows', 9)).toMatchObject({ accepted: false, duplicateCount: 2 });
  expect(await rowsOf(db, 'TAKEN')).toEqual([
    ['T-1-R2', 'DUPLICATE', 'RETRY_DUPLICATE'],
    ['T-2', 'DUPLICATE', 'RETRY_DUPLICATE'],
  ]);
  expect((await listBatchErrors(db, 'TAKEN')).map((e) => e.message)).toEqual([
    expect.stringContaining('the payout service holds a payout under T-1-R1 (REFERENCE_TAKEN'),
    expect.stringContaining('the payout service holds a payout under T-2-R1 (REFERENCE_TAKEN'),
  ]);
}

/** The checks above as the tests of the calling `describe`, on its database (call it there). */
export function retryRoundChecks(store: { readonly db: Database }): void {
  it('is refused when another batch paid another round of it, with where and what to do', () => checkRetryOfPaidRound(store.db));
  it('is refused while another round or the base itself may be paid, not once it is cancelled or never sent', () =>
    checkHoldingStates(store.db));
  it('is refused in the first of two files read together, and both rounds in one file', () => checkRoundsReadTogether(store.db));
  it('treats the plain and hashed spellings of a long base as one base', () => checkHashedSpellings(store.db));
  it('pays a file of references ending in -R<n> whose base it does not know, reading it once per base', () =>
    checkRoundsOfNoKnownBase(store.db));
  it('refuses every round of a file whose base is paid, reading each round once', () => checkRoundsOfPaidBase(store.db));
  it('says where a base of two rounds in one file is known, and the way out for distinct payouts', () =>
    checkInFileRoundsOfHashedBase(store.db));
  it('refuses an original dropped again while a round of it is paid or may be paid', () => checkRetriedOriginal(store.db));
  it('is refused while the payout service contradicts a cancelled row of it, or is being asked, not once the check agrees', () =>
    checkContradictedHolder(store.db));
  it('is refused while a round of it is REFERENCE_TAKEN, as the payout service holds a payout under it', () =>
    checkReferenceTakenRound(store.db));
}

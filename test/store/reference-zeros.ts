/**
 * The acceptance's check of references a spreadsheet stripped of their leading zeros, on a real database of
 * either engine (SQLite in test/store, PostgreSQL in test/postgres): a valid row whose reference is the digits of
 * another batch's held reference but for leading zeros (`123` after `000123`, `000777` after `777`, `042` after
 * `0042`), is refused before anything is sent (DUPLICATE, LEADING_ZEROS_LOST), naming that row; two such rows of
 * one file are both refused (INVALID). References that are not all digits pass. Rows stored before migration 0040
 * are found as those stored after.
 */
import { expect, it } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { addBatch, addRows, request, validRow } from '../finance/helpers.js';
import { batchOf, reading, reasonOf, RECEIVED, rowsOf } from './retry-rounds.js';

const COLUMN = { column: 'Reference', columnIndex: 0, place: 'column A "Reference"' };

/** A file saved again by a spreadsheet: each way, against each state of the earlier row, and within the file. */
export async function checkZerosLost(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['000123', 'PAID'],
    ['000124', 'PENDING'],
    ['777', 'CANCELLED'],
    ['0042', 'PAID'],
    ['000888', 'DUPLICATE'],
    ['0043', 'PAID'],
  ]);
  await reading(db, 'AGAIN', 'pay-excel.csv', ['123', '124', '000777', '042', '43', '000555', '555', 'ABC-1', '98765', '888']);
  const verdict = await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6, undefined, COLUMN);

  expect(verdict).toMatchObject({ accepted: true, readyCount: 3, invalidCount: 2, duplicateCount: 5 });
  expect(await rowsOf(db, 'AGAIN')).toEqual([
    ['123', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['124', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['000777', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['042', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['43', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['000555', 'INVALID', 'LEADING_ZEROS_LOST'],
    ['555', 'INVALID', 'LEADING_ZEROS_LOST'],
    ['ABC-1', 'READY', null],
    ['98765', 'READY', null],
    // 000888 was never sent: it holds nothing.
    ['888', 'READY', null],
  ]);
  const place = (line: number): string => `line ${line} of "pay.csv" (batch FIRST, ${RECEIVED})`;
  const spreadsheet = 'a spreadsheet drops the leading zeros of a number when a file is opened and saved, so';
  expect(await reasonOf(db, 'AGAIN', 2)).toBe(
    `LEADING_ZEROS_LOST [column A "Reference"]: the reference 123 is 000123 without its leading zeros, the reference of ${place(2)}, which is PAID; ${spreadsheet} this row is taken for that payout and not paid: if it is that payout, nothing to do, it was paid; if it is another payout, give it a reference that is not the same digits`,
  );
  expect(await reasonOf(db, 'AGAIN', 3)).toContain(`the reference of ${place(3)}, which is PENDING; `);
  expect(await reasonOf(db, 'AGAIN', 3)).toContain('if it is that payout, nothing to do, it is being paid;');
  expect(await reasonOf(db, 'AGAIN', 4)).toContain(
    `the reference 000777 is 777 with leading zeros added, the reference of ${place(4)}, which is CANCELLED;`,
  );
  expect(await reasonOf(db, 'AGAIN', 4)).toContain('retry it from its retry file (payoutd retry-file --batch FIRST)');
  expect(await reasonOf(db, 'AGAIN', 7)).toBe(
    `LEADING_ZEROS_LOST [column A "Reference"]: the reference 000555 is 555 on line 8 of this file with leading zeros added; ${spreadsheet} these rows are taken for one payout and none of them is paid: if they are one payout, delete the rows that repeat it; if they are different payouts, give them references that are not the same digits`,
  );
  expect(await reasonOf(db, 'AGAIN', 8)).toContain('the reference 555 is 000555 on line 7 of this file without its leading zeros;');

  const errors = (await listBatchErrors(db, 'AGAIN')).sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  expect(errors.map((e) => [e.line, e.code])).toEqual([
    [2, 'LEADING_ZEROS_LOST'],
    [3, 'LEADING_ZEROS_LOST'],
    [4, 'LEADING_ZEROS_LOST'],
    [5, 'LEADING_ZEROS_LOST'],
    [6, 'LEADING_ZEROS_LOST'],
    [7, 'LEADING_ZEROS_LOST'],
    [8, 'LEADING_ZEROS_LOST'],
  ]);
  expect(errors[0]).toMatchObject({ column: 'Reference', columnIndex: 0, field: 'merchantReferenceId' });
  // The earlier rows are left as they were.
  expect((await rowsOf(db, 'FIRST')).map(([, state]) => state)).toEqual(['PAID', 'PENDING', 'CANCELLED', 'PAID', 'DUPLICATE', 'PAID']);
}

/**
 * References that both keep zeros, some of them lost or added (a column of the format `0000` shows `000123`, saved
 * as `123`, as `0123`): the same digits, so refused as one without any, each way and within the file.
 */
export async function checkZerosChanged(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [
    ['000123', 'PAID'],
    ['0456', 'PAID'],
  ]);
  await reading(db, 'AGAIN', 'pay-0000.csv', ['0123', '000456', '0077', '00077', '077']);
  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6)).toMatchObject({ accepted: false, duplicateCount: 2, invalidCount: 3 });
  expect(await rowsOf(db, 'AGAIN')).toEqual([
    ['0123', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['000456', 'DUPLICATE', 'LEADING_ZEROS_LOST'],
    ['0077', 'INVALID', 'LEADING_ZEROS_LOST'],
    ['00077', 'INVALID', 'LEADING_ZEROS_LOST'],
    ['077', 'INVALID', 'LEADING_ZEROS_LOST'],
  ]);
  const place = (line: number): string => `the reference of line ${line} of "pay.csv" (batch FIRST, ${RECEIVED}), which is PAID;`;
  expect(await reasonOf(db, 'AGAIN', 2)).toContain(`the reference 0123 is 000123 with fewer leading zeros, ${place(2)}`);
  expect(await reasonOf(db, 'AGAIN', 3)).toContain(`the reference 000456 is 0456 with leading zeros added, ${place(3)}`);
  expect(await reasonOf(db, 'AGAIN', 4)).toContain(
    'the reference 0077 is 00077 on line 5 of this file with fewer leading zeros, and 077 on line 6 of this file with leading zeros added;',
  );
  expect(await reasonOf(db, 'AGAIN', 6)).toContain(
    'the reference 077 is 0077 on line 4 of this file with fewer leading zeros, and 00077 on line 5 of this file with fewer leading zeros;',
  );
}

/**
 * A row whose own reference is held is refused for that (DUPLICATE_REFERENCE, with the advice for its own
 * payout), not for another spelling of its digits: two such spellings accepted by an older build, one CANCELLED
 * and one PAID, each sent again. Told the other spelling was PAID, finance would leave a cancelled payout unpaid.
 */
export async function checkOwnReferenceFirst(db: Database): Promise<void> {
  await batchOf(db, 'OLD', 'old.csv', [
    ['0123', 'CANCELLED'],
    ['000123', 'PAID'],
    ['0456', 'PAID'],
    ['000456', 'CANCELLED'],
  ]);
  await reading(db, 'AGAIN', 'again.csv', ['0123', '000456']);
  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6)).toMatchObject({ accepted: false, duplicateCount: 2 });
  expect(await rowsOf(db, 'AGAIN')).toEqual([
    ['0123', 'DUPLICATE', 'DUPLICATE_REFERENCE'],
    ['000456', 'DUPLICATE', 'DUPLICATE_REFERENCE'],
  ]);
  for (const [line, reference, held] of [
    [2, '0123', 2],
    [3, '000456', 5],
  ] as const) {
    const reason = await reasonOf(db, 'AGAIN', line);
    expect(reason).toContain(`the reference ${reference} was already submitted by line ${held} of "old.csv"`);
    expect(reason).toContain(`send it again as ${reference}-R1 in a new file`);
    expect(reason).not.toContain('PAID');
  }
}

/** What a row refused for a row of `file`, being read at the same time, says to do. */
const BEING_READ = (file: string): string =>
  `this row is taken for that row and not paid by this file: if that row is not paid by "${file}" (its file rejected or cancelled, or the row refused, cancelled or rejected: see its ack or result file), send this row again;`;

/** After a REJECTED row, never in a retry file, the reason says to send it again under a new reference. */
export async function checkAfterRejected(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'pay.csv', [['000456', 'REJECTED']]);
  await reading(db, 'AGAIN', 'pay-excel.csv', ['456']);
  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6)).toMatchObject({ accepted: false, duplicateCount: 1 });
  const reason = await reasonOf(db, 'AGAIN', 2);
  expect(reason).toContain(`the reference of line 2 of "pay.csv" (batch FIRST, ${RECEIVED}), which is REJECTED;`);
  expect(reason).toContain(
    "if it is that payout, see why it was rejected in that batch's result file, and send it again under a new reference that is not the same digits (a REJECTED payout is not in a retry file);",
  );
  expect(reason).not.toContain('retry-file');
}

/** A row whose digits a file being read at the same time holds is refused by the file checked later, saying so. */
export async function checkHeldByFileBeingRead(db: Database): Promise<void> {
  await reading(db, 'OTHER', 'other.csv', ['000321']);
  await reading(db, 'AGAIN', 'again.csv', ['321']);
  expect(await acceptBatchRows(db, 'AGAIN', 'skip-rows', 6)).toMatchObject({ accepted: false, duplicateCount: 1 });
  expect(await reasonOf(db, 'AGAIN', 2)).toContain(
    `the reference 321 is 000321 without its leading zeros, the reference of line 2 of "other.csv" (batch OTHER, ${RECEIVED}), a file being read at the same time;`,
  );
  expect(await reasonOf(db, 'AGAIN', 2)).toContain(BEING_READ('other.csv'));
  // The other file, checked now, finds nothing held: the refused row holds nothing.
  expect(await acceptBatchRows(db, 'OTHER', 'skip-rows', 7)).toMatchObject({ accepted: true, readyCount: 1 });
}

/**
 * A row of a file being read that waits for its reference's holder (VALIDATED) turns READY at that file's
 * acceptance, whose check of zeros may have run already: a file checked meanwhile counts it as holding.
 */
export async function checkHeldByWaitingRow(db: Database): Promise<void> {
  // C held 123 and was rejected; B's 123, set aside while C held it, waits for B's acceptance.
  await batchOf(db, 'C', 'c.csv', [['123', 'NOT_SUBMITTED']], 'REJECTED');
  await batchOf(db, 'B', 'b.csv', [['123', 'VALIDATED']], 'VALIDATING');
  await reading(db, 'A', 'a.csv', ['000123']);
  expect(await acceptBatchRows(db, 'A', 'skip-rows', 6)).toMatchObject({ accepted: false, duplicateCount: 1 });
  expect(await rowsOf(db, 'A')).toEqual([['000123', 'DUPLICATE', 'LEADING_ZEROS_LOST']]);
  expect(await reasonOf(db, 'A', 2)).toContain(
    `the reference of line 2 of "b.csv" (batch B, ${RECEIVED}), a file being read at the same time;`,
  );
  // B, checked now, finds nothing held: at most one of the two is paid.
  expect(await acceptBatchRows(db, 'B', 'skip-rows', 7)).toMatchObject({ accepted: true, readyCount: 1 });
}

/** Rows of a large file of numeric references: more than two ranges of the check. */
export const LARGE_DIGITS = 12_000;

/** A large file of numeric references, checked a range of lines at a time: a pair in two ranges, an earlier row's digits at the end. */
export async function checkLargeFileOfDigits(db: Database): Promise<void> {
  await batchOf(db, 'FIRST', 'first.csv', [['0007', 'PAID']]);
  const refs = Array.from({ length: LARGE_DIGITS }, (_, i) => String(100_000 + i));
  refs[1] = '0000042';
  refs[LARGE_DIGITS - 2] = '42';
  refs[LARGE_DIGITS - 1] = '7';
  await reading(db, 'BIG', 'big.csv', refs);
  const verdict = await acceptBatchRows(db, 'BIG', 'skip-rows', 6);

  expect(verdict).toMatchObject({ accepted: true, readyCount: LARGE_DIGITS - 3, invalidCount: 2, duplicateCount: 1 });
  const refused = (await db('payouts').where({ batch_id: 'BIG' }).whereNot({ state: 'READY' }).orderBy('line').select('line', 'state')) as {
    line: number;
    state: string;
  }[];
  expect(refused).toEqual([
    { line: 3, state: 'INVALID' },
    { line: LARGE_DIGITS, state: 'INVALID' },
    { line: LARGE_DIGITS + 1, state: 'DUPLICATE' },
  ]);
  expect(await reasonOf(db, 'BIG', 3)).toContain(
    `the reference 0000042 is 42 on line ${LARGE_DIGITS} of this file with leading zeros added`,
  );
  expect(await reasonOf(db, 'BIG', LARGE_DIGITS + 1)).toContain(
    'the reference 7 is 0007 without its leading zeros, the reference of line 2 of "first.csv"',
  );
}

/**
 * Of two files read together, one `000123` and the other `123`, accepted at the same moment: the checks take
 * turns, so one pays it and the other's row is refused, never both paid nor both refused (each checked while the
 * other still held the digits). The refused row names the other file's row and says to send it again if that
 * row is not paid. Several pairs, as two checks meet only now and then.
 */
export async function checkAcceptedTogether(db: Database): Promise<void> {
  for (let k = 0; k < 6; k++) {
    const [x, y] = [`X${k}`, `Y${k}`];
    await reading(db, x, `${x}.csv`, [`00012${k}`, `X-${k}`]);
    await reading(db, y, `${y}.csv`, [`12${k}`, `Y-${k}`]);
    await Promise.all([acceptBatchRows(db, x, 'skip-rows', 5), acceptBatchRows(db, y, 'skip-rows', 5)]);
    const [[, xState] = [], [, yState] = []] = [(await rowsOf(db, x))[0], (await rowsOf(db, y))[0]];
    expect(
      [
        ['READY', 'DUPLICATE'],
        ['DUPLICATE', 'READY'],
      ],
      `pair ${k}`,
    ).toContainEqual([xState, yState]);
    const [refused, other] = xState === 'DUPLICATE' ? [x, y] : [y, x];
    expect(await rowsOf(db, refused)).toContainEqual([expect.any(String), 'DUPLICATE', 'LEADING_ZEROS_LOST']);
    const reason = await reasonOf(db, refused, 2);
    expect(reason).toContain(`the reference of line 2 of "${other}.csv" (batch ${other}, ${RECEIVED}), a file being read`);
    expect(reason).toContain(BEING_READ(`${other}.csv`));
  }
}

/** The rows stored before migration 0040 are given their digits by it, and found as those stored after. */
export async function checkStoredBefore0040(db: Database): Promise<void> {
  await addBatch(db, 'OLD', 'old.csv');
  await addRows(
    db,
    ['000123', '777', '000', 'A-1', '12a', '0x1'].map((ref, i) => ({ ...validRow('OLD', i + 2, request(ref)), state: 'READY' as const })),
  );
  // As a build before 0040 stored them: no such column; 0040 fills it in again.
  while ((await db('payoutd_migrations').max({ name: 'name' }).first())?.name !== '0039_event_deliveries') await db.migrate.down();
  await db.migrate.latest();
  expect(await db('payouts').where({ batch_id: 'OLD' }).orderBy('line').pluck('reference_digits')).toEqual([
    '123',
    '777',
    '0',
    null,
    null,
    null,
  ]);
  await reading(db, 'NEW', 'new.csv', ['123', '000777', '0']);
  expect(await acceptBatchRows(db, 'NEW', 'skip-rows', 5)).toMatchObject({ accepted: false, duplicateCount: 3 });
}

/** The checks above as the tests of the calling `describe`, on its database (call it there). */
export function referenceZerosChecks(store: { readonly db: Database }): void {
  it('refuses a reference that is an earlier one but for leading zeros, either way, and both in one file', () => checkZerosLost(store.db));
  it('refuses a reference that is another with some leading zeros lost or added, either way, and in one file', () =>
    checkZerosChanged(store.db));
  it('says to use a new reference after a REJECTED row', () => checkAfterRejected(store.db));
  it('refuses a row whose own reference is held for that, not for another spelling of its digits', () => checkOwnReferenceFirst(store.db));
  it('refuses one held by a file being read at the same time, saying so', () => checkHeldByFileBeingRead(store.db));
  it('counts a row waiting in a file being read as holding its digits', () => checkHeldByWaitingRow(store.db));
  it('checks a large file of numeric references a range at a time, a pair in two ranges found', () => checkLargeFileOfDigits(store.db));
  it('lets exactly one of two files accepted together pay the same digits', () => checkAcceptedTogether(store.db));
  it('finds the references stored before migration 0040', () => checkStoredBefore0040(store.db));
}

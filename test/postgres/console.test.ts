/**
 * PostgreSQL: the console's tables (migration 0017) and reads work there as
 * on SQLite: users with their lock-out counted in SQL (attempts at once
 * on several connections counted before their check), sessions that expire,
 * uploads found by name and bytes, a page of batches newest first with its
 * filters, and rows found by a reference in which LIKE's wildcards are text
 * and ASCII letters match in either case, as on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { ConsoleAccess } from '../../src/console/access.js';
import { addUser } from '../../src/console/index.js';
import { encodeRequest } from '../../src/domain/request-values.js';
import {
  consoleUploaderOf,
  insertBatch,
  listBatchPage,
  receivedBatch,
  recordConsoleUpload,
  resultRowsPage,
} from '../../src/store/index.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { payoutRequest } from '../support/rows.js';
import { checkReferenceSearch } from '../store/reference-search.js';
import { checkSignInLockout, HERE, pairOf } from '../store/sign-in-lockout.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('console store on PostgreSQL', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('counts failed sign-ins to a lock-out that ends in time', async () => {
    let now = 5_000;
    await addUser(store.db, 'ana', 'approver', 'a long enough password', now);
    const access = new ConsoleAccess({
      db: store.db,
      now: () => now,
      sessionMs: 1000,
      trustedProxies: [],
      userHeader: 'Remote-User',
      lockout: { maxFailures: 2, lockMs: 500 },
    });
    await access.signIn('ana', 'wrong password 1', HERE);
    expect((await pairOf(store.db, 'ana')).failedAttempts).toBe(1);
    await access.signIn('ana', 'wrong password 2', HERE);
    expect(await pairOf(store.db, 'ana')).toMatchObject({ failedAttempts: 0, lockedUntil: 5_500 });
    expect(await access.signIn('ana', 'a long enough password', HERE)).toEqual({ ok: false, why: 'locked', known: true });
    now = 6_000;
    const ok = await access.signIn('ana', 'a long enough password', HERE);
    expect(ok.ok).toBe(true);
  });

  it('counts sign-in attempts before their check, with several connections at once (test/store/sign-in-lockout.ts)', () =>
    checkSignInLockout(store.db));

  it('finds uploads by file, name and bytes, pages batches and finds rows by a literal reference', async () => {
    const file = { fileName: 'p.csv', storedPath: '/x', controlPath: null, doneMarker: false, size: 1, mtimeMs: 1 };
    for (let i = 0; i < 5; i++) {
      await insertBatch(store.db, { ...receivedBatch({ ...file, id: `B-${i}`, sha256: `${i}`.repeat(64) }, 1000 * (i + 1)) });
    }
    const upload = { fileName: 'p.csv', sha256: '3'.repeat(64), size: 1 };
    // An inode beyond a JS number's exact range, and a later identical upload of another file.
    await recordConsoleUpload(store.db, { ...upload, inode: '18446744073709551557', uploader: 'ana', uploadedAt: 3500 });
    await recordConsoleUpload(store.db, { ...upload, inode: '18446744073709551558', uploader: 'bo', uploadedAt: 3600 });
    const lookup = { fileName: 'p.csv', sha256: '3'.repeat(64), inode: '18446744073709551557' };
    expect(await consoleUploaderOf(store.db, { ...lookup, receivedAt: 4000 })).toBe('ana');
    expect(await consoleUploaderOf(store.db, { ...lookup, receivedAt: 3000 })).toBeUndefined();
    const page = await listBatchPage(store.db, { receivedFrom: 2000, receivedUntil: 5000 }, 1, 2);
    expect(page.total).toBe(3);
    expect(page.batches.map((b) => b.id)).toEqual(['B-2', 'B-1']);
    expect((await listBatchPage(store.db, { states: ['ACTIVE'] }, 0, 10)).total).toBe(0);

    // An account with leading zeros: the page shows it as stored.
    const request = (ref: string) =>
      payoutRequest(ref, { beneficiary: { accountName: 'C', accountNumber: '0012345678', bankCode: 'BOPIPHMM' } });
    await store.db.transaction((trx) =>
      insertRows(
        trx,
        ['INV_1', 'INVX1', 'INV%2'].map((ref, i) => ({
          batchId: 'B-0',
          line: i + 2,
          merchantReferenceId: ref,
          state: 'READY' as const,
          requestValues: encodeRequest(request(ref)),
          payoutCurrency: null,
          payoutAmount: null,
          deductionCurrency: null,
          reasonCode: null,
          reason: null,
        })),
        1000,
      ),
    );
    const underscore = await resultRowsPage(store.db, 'B-0', { reference: 'INV_', offset: 0, limit: 10 });
    expect(underscore.rows.map((r) => r.merchantReferenceId)).toEqual(['INV_1']);
    const percent = await resultRowsPage(store.db, 'B-0', { reference: '%', offset: 0, limit: 10 });
    expect(percent).toMatchObject({ total: 1, rows: [{ merchantReferenceId: 'INV%2', beneficiaryAccountNumber: '0012345678' }] });
    expect((await resultRowsPage(store.db, 'B-0', { offset: 1, limit: 1 })).rows.map((r) => r.line)).toEqual([3]);
  });

  it('finds rows by a reference, ASCII letters in either case (test/store/reference-search.test.ts on SQLite)', () =>
    checkReferenceSearch(store.db));
});

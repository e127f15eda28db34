/**
 * PostgreSQL: the row moves and claims of test/store on this engine
 * (intake's inserts setting aside a held reference, grouped UPDATE … RETURNING, multi-row history INSERT, claims with
 * FOR UPDATE SKIP LOCKED per batch, a query claim held to its limit), the beneficiary of a batch's rows
 * read from the stored request with this engine's JSON operators,
 * answers committed without waiting for the WAL flush, and instances
 * touching the same rows at once never deadlocking: a settlement sweep or
 * a webhook's poll-soon makes rows due that another instance may be
 * answering for right then, so two answers can hold the same rows, and two
 * files read at once may store the same references (another transaction
 * here stands in for the other instance; each case deadlocked before its
 * fix).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';
import { reproducibleTransaction } from '../../src/store/reproducible.js';
import { getRow, type PayoutRow } from '../../src/store/payouts.js';
import { pollBatchNow, pollSoon } from '../../src/store/settlement.js';
import { claimDueRows, markInterruptedCreatesUnknown } from '../../src/store/claims.js';
import { recordAnswers } from '../../src/store/answers.js';
import type { RowMove } from '../../src/store/moves.js';
import { checkClaimOrder, checkGroupedMoves, checkMovesOfOneRowInOrder, checkMovesOfTheirOwn, seedBatch } from '../store/moves.js';
import { checkMovesStillHolding, checkQueryClaimLeavesOutAsked } from '../store/moves.js';
import { checkBeneficiaryFromRequest } from '../store/result-rows.js';
import { checkConcurrentHolders, checkHeldReferencesSetAside } from '../store/held-references.js';
import { pgReachable, useTestSchema } from './pg.js';

/** Settles `row` as PAID with its own patch (one UPDATE per row, in the order given). */
function paid(row: PayoutRow, at: number): RowMove {
  return {
    row,
    from: 'PENDING',
    to: 'PAID',
    patch: { serviceStatus: 'PAID', completeTime: `t-${row.id}`, lastPolledAt: at },
    history: { event: 'polled', outcome: 'PAID' },
  };
}

/** Fails instead of hanging when `work` waits for a lock it should have skipped. */
async function withoutWaiting<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const waited = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} waited for a row another transaction holds`)), 10_000);
  });
  try {
    return await Promise.race([work, waited]);
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(!pgReachable)('postgres: row moves and claims', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeAll(async () => {
    // Four connections: the overlapping answers need another transaction, the answer and a look at the waits.
    db = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 4, busyTimeoutMs: 5000, synchronous: 'FULL' });
    await migrateToLatest(db);
  });
  // Each check starts from empty tables, as on its own SQLite file.
  beforeEach(async () => {
    await db.raw('truncate payout_history, payouts, batch_errors, batches cascade');
  });
  afterAll(async () => {
    await closeDatabase(db);
  });

  it('groups moves sharing a patch, keeps per-row patches, skips a moved row, one history row per row moved', async () => {
    await checkGroupedMoves(db);
  });

  it('moves with values of their own, more than one statement sets, each end with exactly theirs; a row moved before is skipped', async () => {
    await checkMovesOfTheirOwn(db);
  });

  it('applies two moves of one row in the order given', async () => {
    await checkMovesOfOneRowInOrder(db);
  });

  it('a move guarded by the payout it was decided for, or by its payout being unproven, skips a row changed since', async () => {
    await checkMovesStillHolding(db);
  });

  it('stores a READY row whose reference is held as VALIDATED (ON CONFLICT on the partial unique index)', async () => {
    await checkHeldReferencesSetAside(db);
  });

  it('two transactions storing the same references in opposite orders both succeed (no deadlock)', async () => {
    await checkConcurrentHolders(db);
  });

  it('claims the older batch first, in line order, by the hold rules', async () => {
    await checkClaimOrder(db);
  });

  // PostgreSQL ran the LIMIT … SKIP LOCKED subquery of the UPDATE again per row and leased every due row.
  it('a query claim takes at most its limit of due rows', async () => {
    const rows = await seedBatch(db, 'QL', 12, 'PENDING');
    await db('payouts').update({ next_poll_at: 5 });
    const claimed = await claimDueRows(db, 'PENDING', 'next_poll_at', 10, 4, 60_000);
    // All equally due: the first four by id (rows go in by reference here, so not in line order).
    expect(claimed.map((r) => r.id)).toEqual(
      rows
        .map((r) => r.id)
        .sort((x, y) => x - y)
        .slice(0, 4),
    );
    // Only those were leased: the rest stay due for the other instances.
    const leased = (await db('payouts').where('next_poll_at', '>', 10).count({ n: '*' }).first()) as { n: number | string };
    expect(Number(leased.n)).toBe(4);
  });

  it('a query claim leaves out the rows already being asked about, however many', async () => {
    await checkQueryClaimLeavesOutAsked(db);
  });

  it('reads the beneficiary and empty columns out of the stored request as JSON.parse does', async () => {
    await checkBeneficiaryFromRequest(db);
  });

  /**
   * Sessions waiting for a lock that the session `pid` holds. Only those: other test files run at once in the same
   * database, and their sessions may be waiting for locks of their own.
   */
  async function blockedBy(pid: number): Promise<number> {
    const r = (await db.raw(`select count(*)::int as n from pg_stat_activity where ? = any(pg_blocking_pids(pid))`, [pid])) as {
      rows: { n: number }[];
    };
    return r.rows[0]?.n ?? 0;
  }

  it('a batch sweep skips a row being answered, and makes the rest due', async () => {
    const rows = await seedBatch(db, 'SW', 4, 'PENDING');
    await db('payouts').where({ batch_id: 'SW' }).update({ next_poll_at: 90_000 });
    const [held, ...rest] = rows as [PayoutRow, ...PayoutRow[]];
    const answering = await db.transaction();
    try {
      await answering('payouts').where({ id: held.id }).update({ last_polled_at: 1 });
      expect(await withoutWaiting(pollBatchNow(db, 'SW', 1000), 'the sweep')).toBe(rest.length);
    } finally {
      await answering.commit();
    }
    expect((await getRow(db, held.id))?.nextPollAt).toBe(90_000);
    for (const r of rest) expect((await getRow(db, r.id))?.nextPollAt).toBe(1000);
  });

  // A poll-soon is a webhook's news of the payout: skipping a row whose older answer is being recorded lost it.
  it('a poll-soon waits for a row being answered, in id order (neither is aborted), then makes every row still PENDING due', async () => {
    const rows = (await seedBatch(db, 'PS', 4, 'PENDING')).sort((a, b) => a.id - b.id);
    await db('payouts').where({ batch_id: 'PS' }).update({ next_poll_at: 90_000 });
    const [first, , , last] = rows as [PayoutRow, PayoutRow, PayoutRow, PayoutRow];
    const answering = await db.transaction();
    let open = true;
    try {
      await answering('payouts').where({ id: first.id }).update({ last_polled_at: 1 });
      const answeringPid = ((await answering.raw('select pg_backend_pid() as pid')) as { rows: { pid: number }[] }).rows[0]?.pid ?? -1;
      const named = rows.map((r) => ({ payoutId: r.payoutId as string, merchantReferenceId: r.merchantReferenceId }));
      const soon = pollSoon(db, named, 2000).then(
        (n) => ({ n }),
        (err: unknown) => ({ err }),
      );
      for (let i = 0; i < 500 && (await blockedBy(answeringPid)) === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(await blockedBy(answeringPid), 'the poll-soon waits for the row being answered').toBe(1);
      // The answer now takes the last row: it would close a circle if the poll-soon held it while it waits.
      await answering('payouts').where({ id: last.id }).update({ last_polled_at: 1 });
      await answering.commit();
      open = false;
      expect(await soon).toEqual({ n: rows.length });
    } finally {
      if (open) await answering.rollback();
    }
    for (const r of rows) expect(await getRow(db, r.id)).toMatchObject({ nextPollAt: 2000, pollRound: 1 });
  });

  it('two answers holding the same rows in opposite orders: one waits, neither is aborted', async () => {
    const [x, y] = (await seedBatch(db, 'OV', 2, 'PENDING')) as [PayoutRow, PayoutRow];
    // Another instance's answer, written in the order x then y, has x and now waits.
    const other = await db.transaction();
    await other('payouts').where({ id: x.id }).update({ last_polled_at: 1 });
    const otherPid = ((await other.raw('select pg_backend_pid() as pid')) as { rows: { pid: number }[] }).rows[0]?.pid ?? -1;
    // This answer moves y first, then x. It must not hold y while it waits for x.
    const mine = recordAnswers(db, [{ moves: [paid(y, 5000), paid(x, 5000)], at: 5000 }]);
    const outcome = mine.then(
      (moved) => ({ n: moved.length }),
      (err: unknown) => ({ err }),
    );
    for (let i = 0; i < 500 && (await blockedBy(otherPid)) === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await blockedBy(otherPid), 'this answer waits for x').toBe(1);
    // The other answer now takes y: it would close the circle if this one held y.
    let otherError: unknown = null;
    try {
      await other('payouts').where({ id: y.id }).update({ last_polled_at: 1 });
      await other.commit();
    } catch (err) {
      otherError = err;
      await other.rollback().catch(() => undefined);
    }
    expect(String((otherError as Error | null)?.message ?? 'none')).toBe('none');
    expect(await outcome).toEqual({ n: 2 });
    expect((await getRow(db, x.id))?.state).toBe('PAID');
    expect((await getRow(db, y.id))?.state).toBe('PAID');
  });

  it('a takeover skips a create whose answer is being recorded, and takes the rest', async () => {
    const rows = await seedBatch(db, 'TK', 3, 'CREATING');
    await db('payouts').where({ batch_id: 'TK' }).update({ lease_owner: 'dead', lease_expires_at: 1000 });
    const [answered, ...rest] = rows as [PayoutRow, ...PayoutRow[]];
    const answering = await db.transaction();
    try {
      await answering('payouts').where({ id: answered.id }).update({ state: 'PENDING', payout_id: 'P-late' });
      expect(await withoutWaiting(markInterruptedCreatesUnknown(db, 2000, false), 'the takeover')).toBe(rest.length);
    } finally {
      await answering.commit();
    }
    expect((await getRow(db, answered.id))?.state).toBe('PENDING');
    for (const r of rest) expect((await getRow(db, r.id))?.state).toBe('UNKNOWN');
  });
});

describe.skipIf(!pgReachable)('postgres: reproducible transactions', () => {
  const schema = useTestSchema();
  let db: Database;
  beforeAll(async () => {
    db = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
  });
  afterAll(async () => {
    await closeDatabase(db);
  });

  it('commits without waiting for the WAL flush, for that transaction only', async () => {
    const setting = async (q: Database | Knex.Transaction): Promise<string> =>
      ((await q.raw('show synchronous_commit')) as { rows: { synchronous_commit: string }[] }).rows[0]?.synchronous_commit ?? '';
    expect(await reproducibleTransaction(db, (trx) => setting(trx))).toBe('off');
    expect(await db.transaction((trx) => setting(trx))).toBe('on');
  });
});

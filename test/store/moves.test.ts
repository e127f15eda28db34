/**
 * Row moves and claims on a real SQLite file (the same checks run on
 * PostgreSQL in test/postgres/moves.test.ts), the narrow read of a batch's
 * rows (its beneficiary read from the stored request also on PostgreSQL),
 * and the claim index the migrations make.
 */
import { describe, expect, it } from 'vitest';
import type { Knex } from 'knex';
import { RowStateError, getRow, type PayoutRowPatch } from '../../src/store/payouts.js';
import { historyOf } from '../../src/store/moves.js';
import { resultRowPages } from '../../src/store/results.js';
import { payoutsCreatedBetween } from '../../src/store/reports.js';
import { listDueForPoll, pollBatchNow, pollSoon, reaskUnknownOfReference, type PollCursor } from '../../src/store/settlement.js';
import { applyRowMoves } from '../../src/store/answers.js';
import { TAKE_WRITE_LOCK } from '../../src/store/db.js';
import { useTestDatabase } from '../support/database.js';
import {
  checkClaimOrder,
  checkGroupedMoves,
  checkMovesOfOneRowInOrder,
  checkMovesOfTheirOwn,
  checkMovesStillHolding,
  checkQueryClaimLeavesOutAsked,
  seedBatch,
} from './moves.js';
import { checkBeneficiaryFromRequest } from './result-rows.js';

describe('store: row moves and claims (SQLite)', () => {
  const store = useTestDatabase('payoutd-store-');

  it("an event naming an UNKNOWN row moves its due time away from the claim's each time, two in one millisecond too", async () => {
    const { db } = store;
    const [row] = await seedBatch(db, 'RQ', 1, 'UNKNOWN');
    // A reconcile claimed it with no lease at 1000: its answer is applied only while the row keeps 1000.
    await db('payouts').where({ id: row?.id }).update({ next_attempt_at: 1000 });
    const dueAt = async (): Promise<number> =>
      Number((await db('payouts').where({ id: row?.id }).first('next_attempt_at'))?.next_attempt_at);
    const seen: number[] = [];
    for (let i = 0; i < 3; i++) {
      expect(await reaskUnknownOfReference(db, 'RQ-1', 1000)).toBe(1);
      seen.push(await dueAt());
    }
    expect(seen).toEqual([999, 998, 997]);
    // Leased into the future: due now.
    await db('payouts').where({ id: row?.id }).update({ next_attempt_at: 5000 });
    await reaskUnknownOfReference(db, 'RQ-1', 1000);
    expect(await dueAt()).toBe(1000);
  });

  it('groups moves alike by value, keeps per-row patches, skips a moved row, one history row per row moved', async () => {
    const { db } = store;
    await checkGroupedMoves(db);
  });

  it('moves with values of their own, more than one statement sets, each end with exactly theirs; a row moved before is skipped', async () => {
    const { db } = store;
    await checkMovesOfTheirOwn(db);
  });

  it('settlements sharing one patch and one of its own are applied; a row settled by someone else is skipped', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'ST', 21, 'PENDING');
    const paid: PayoutRowPatch = { serviceStatus: 'PAID', completeTime: '2026-11-23T00:00:00Z', pollCount: 3 };
    const moves = rows.map((row, i) => ({
      row,
      from: 'PENDING' as const,
      to: i === 20 ? ('CANCELLED' as const) : ('PAID' as const),
      patch: i === 20 ? { serviceStatus: 'CANCELLED', completeTime: '2026-11-23T00:00:01Z', reasonCode: 'CANCELLED' } : paid,
      history: { event: 'settled', outcome: i === 20 ? 'CANCELLED' : 'PAID' },
    }));
    // One row already moved by someone else: skipped, without a history row.
    await db('payouts').where({ id: rows[5]?.id }).update({ state: 'PAID' });
    expect(await applyRowMoves(db, moves, 10)).toBe(20);
    const after = (await db('payouts').orderBy('id').select('state', 'complete_time', 'poll_count')) as Record<string, unknown>[];
    expect(after.slice(0, 20).every((r, i) => r.state === 'PAID' && (i === 5 || r.complete_time === paid.completeTime))).toBe(true);
    expect(after[20]).toMatchObject({ state: 'CANCELLED', complete_time: '2026-11-23T00:00:01Z' });
    expect(after[0]?.poll_count).toBe(3);
    for (const [i, row] of rows.entries()) expect((await historyOf(db, row.id)).length).toBe(i === 5 ? 0 : 1);
  });

  it('applies two moves of one row in the order given', async () => {
    const { db } = store;
    await checkMovesOfOneRowInOrder(db);
  });

  it('a move guarded by the payout it was decided for, or by its payout being unproven, skips a row changed since', async () => {
    const { db } = store;
    await checkMovesStillHolding(db);
  });

  it('a move the lifecycle forbids changes nothing, not even the moves before it', async () => {
    const { db } = store;
    const [a, b] = await seedBatch(db, 'BAD', 2, 'PENDING');
    if (!a || !b) throw new Error('seed');
    const moves = [
      { row: a, from: 'PENDING' as const, to: 'PAID' as const, patch: {}, history: { event: 'settled' } },
      { row: b, from: 'PENDING' as const, to: 'READY' as const, patch: {}, history: { event: 'wrong' } },
    ];
    await expect(applyRowMoves(db, moves, 10)).rejects.toThrow(RowStateError);
    expect((await db('payouts').orderBy('id').pluck('state')) as string[]).toEqual(['PENDING', 'PENDING']);
    expect(await historyOf(db, a.id)).toEqual([]);
  });

  it('a move that keeps the state may go without a history row; a change of state may not', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'NH', 20, 'PENDING');
    const quiet = { pollCount: 9, lastPolledAt: 10, nextPollAt: 300_010 };
    // Twenty rows sharing one patch (one grouped UPDATE), none of them written to the history.
    const moves = rows.map((row) => ({ row, from: 'PENDING' as const, to: 'PENDING' as const, patch: quiet, history: null }));
    expect(await applyRowMoves(db, moves, 10)).toBe(20);
    expect((await db('payouts').where({ batch_id: 'NH' }).distinct('poll_count', 'next_poll_at')) as unknown[]).toEqual([
      { poll_count: 9, next_poll_at: 300_010 },
    ]);
    expect(await db('payout_history').count({ n: '*' }).first()).toEqual({ n: 0 });
    const [a] = rows;
    const unrecorded = [{ row: a!, from: 'PENDING' as const, to: 'PAID' as const, patch: {}, history: null }];
    await expect(applyRowMoves(db, unrecorded, 11)).rejects.toThrow(/from PENDING to PAID needs a history entry/);
    expect((await getRow(db, a!.id))?.state).toBe('PENDING');
  });

  it('moves whose patches differ only by type (null and the text "null") are never grouped into one UPDATE', async () => {
    const { db } = store;
    const [a, b, c, d] = await seedBatch(db, 'TY', 4, 'PENDING');
    if (!a || !b || !c || !d) throw new Error('seed');
    const move = (row: typeof a, patch: PayoutRowPatch) => ({
      row,
      from: 'PENDING' as const,
      to: 'PENDING' as const,
      patch,
      history: { event: 'polled' },
    });
    await applyRowMoves(
      db,
      [move(a, { reason: null }), move(b, { reason: 'null' }), move(c, { reason: '5' }), move(d, { reason: 'x' })],
      10,
    );
    expect((await db('payouts').orderBy('id').pluck('reason')) as unknown[]).toEqual([null, 'null', '5', 'x']);
  });

  it('guarded UPDATEs of rows picked by id find them by primary key, not by walking an index on the state', async () => {
    const { db } = store;
    const [a, b, c, d, e] = await seedBatch(db, 'G', 5, 'PENDING');
    if (!a || !b || !c || !d || !e) throw new Error('seed');
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void (q.sql !== TAKE_WRITE_LOCK && seen.push(q));
    db.on('query', record);
    const polled = { pollCount: 1, lastPolledAt: 5, nextPollAt: 10 };
    const moves = [a, b].map((row) => ({ row, from: 'PENDING' as const, to: 'PENDING' as const, patch: polled, history: null }));
    const settled = (row: typeof a, completeTime: string) =>
      ({ row, from: 'PENDING', to: 'PAID', patch: { serviceStatus: 'PAID', completeTime }, history: { event: 'settled' } }) as const;
    const reason = { row: e, from: 'PENDING', to: 'PENDING', patch: { reason: 'x' }, history: null } as const;
    await applyRowMoves(db, [...moves, settled(c, 't1'), settled(d, 't2'), reason], 5);
    db.off('query', record);
    const updates = seen.filter((q) => /^update /i.test(q.sql));
    // The move alone in its columns: a plain guarded UPDATE.
    expect(updates.map((q) => / in \(/i.test(q.sql))).toEqual([false]);
    for (const q of updates) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      expect(plan.map((p) => p.detail)).toEqual([expect.stringContaining('INTEGER PRIMARY KEY')]);
    }
    // The polls and the settlements (each the same columns): a multi-row UPDATE each, a row of its VALUES at a
    // time by primary key.
    const multiRow = seen.filter((q) => /^with v\b/i.test(q.sql));
    expect(multiRow).toHaveLength(2);
    for (const q of multiRow) {
      const plan = (await db.raw(`EXPLAIN QUERY PLAN ${q.sql}`, q.bindings)) as { detail: string }[];
      expect(plan.map((p) => p.detail).filter((p) => /payouts/.test(p))).toEqual([
        expect.stringContaining('payouts USING INTEGER PRIMARY KEY'),
      ]);
    }
  });

  it('claims the older batch first, in line order, by the hold rules', async () => {
    const { db } = store;
    await checkClaimOrder(db);
  });

  it('a query claim leaves out the rows already being asked about, however many', async () => {
    const { db } = store;
    await checkQueryClaimLeavesOutAsked(db);
  });

  it('a claim reads its rows by the (batch_id, state, line) index, without sorting', async () => {
    const { db } = store;
    const names = (await db('sqlite_master').where({ type: 'index', tbl_name: 'payouts' }).pluck('name')) as string[];
    expect(names).toContain('payouts_batch_state_line');
    expect(names).not.toContain('payouts_batch_id_state_index');
    const plan = (await db.raw(
      `EXPLAIN QUERY PLAN SELECT * FROM payouts WHERE batch_id = ? AND state = 'READY'
         AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY line LIMIT 64`,
      ['B', 1],
    )) as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual([expect.stringContaining('USING INDEX payouts_batch_state_line')]);
  });

  it('a settlement sweep finds its batch by the (batch_id, state, line) index, not every pending row by due time', async () => {
    const { db } = store;
    const sql: string[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void sql.push(q.sql);
    db.on('query', record);
    await pollBatchNow(db, 'B', 1);
    db.off('query', record);
    const update = sql.find((s) => s.startsWith('update'));
    const plan = (await db.raw(`EXPLAIN QUERY PLAN ${update ?? ''}`, [1, 'B', 'PENDING', 1])) as { detail: string }[];
    expect(plan.map((p) => p.detail)).toEqual([expect.stringContaining('USING INDEX payouts_batch_state_line')]);
  });

  it('creation time is indexed only once set and payoutId not at all; poll-soon and the report still read by an index', async () => {
    const { db } = store;
    const indexSql = (await db('sqlite_master').where({ type: 'index', tbl_name: 'payouts' }).pluck('sql')) as (string | null)[];
    expect(indexSql.filter((sql) => sql?.includes('payout_id'))).toEqual([]);
    expect(indexSql).toContainEqual(expect.stringContaining('(created_at_ms, id) WHERE created_at_ms IS NOT NULL'));
    const seen: { sql: string; bindings: Knex.RawBinding[] }[] = [];
    const record = (q: { sql: string; bindings: Knex.RawBinding[] }): void => void (q.sql !== TAKE_WRITE_LOCK && seen.push(q));
    db.on('query', record);
    await pollSoon(db, [{ payoutId: 'P-1', merchantReferenceId: 'R-1' }], 1);
    for await (const _ of payoutsCreatedBetween(db, 0, 10)) break;
    db.off('query', record);
    const planOf = async (q: { sql: string; bindings: Knex.RawBinding[] } | undefined): Promise<string> =>
      ((await db.raw(`EXPLAIN QUERY PLAN ${q?.sql ?? ''}`, q?.bindings ?? [])) as { detail: string }[]).map((p) => p.detail).join(' | ');
    expect(await planOf(seen.find((q) => q.sql.includes('`payout_id` in')))).toMatch(/USING INDEX \S*merchant_reference_id/);
    expect(await planOf(seen.find((q) => q.sql.includes('`created_at_ms` >=')))).toContain('USING INDEX payouts_created_at');
  });

  it('poll-soon makes due a PENDING row named by its reference and payoutId together, nothing named by one of them only', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'PS', 4, 'PENDING');
    await db('payouts').where({ batch_id: 'PS' }).update({ next_poll_at: 90_000 });
    await db('payouts').where({ id: rows[3]?.id }).update({ state: 'PAID' });
    const named = [
      { payoutId: 'P-PS-1', merchantReferenceId: 'PS-1' }, // both match: due now
      { payoutId: 'P-PS-9', merchantReferenceId: 'PS-2' }, // another payoutId under this reference
      { payoutId: 'P-PS-3', merchantReferenceId: null }, // no reference: left to its regular poll
      { payoutId: 'P-PS-4', merchantReferenceId: 'PS-4' }, // no longer PENDING
    ];
    expect(await pollSoon(db, named, 1000)).toBe(1);
    const due = (await db('payouts').where({ batch_id: 'PS' }).orderBy('line').pluck('next_poll_at')) as number[];
    expect(due).toEqual([1000, 90_000, 90_000, 90_000]);
    expect(await pollSoon(db, [{ payoutId: 'P-PS-3', merchantReferenceId: null }], 2000)).toBe(0);
  });

  it('due payouts are listed after a cursor by (due time, id): the rest at the cursor time first, none twice, none past now', async () => {
    const { db } = store;
    const rows = await seedBatch(db, 'CU', 7, 'PENDING');
    const ids = rows.map((r) => r.id);
    const at = [5, 5, 5, 7, 7, 9, 20];
    for (const [i, id] of ids.entries()) await db('payouts').where({ id }).update({ next_poll_at: at[i] });
    const listed = async (cursor: PollCursor | null, limit: number): Promise<number[]> =>
      (await listDueForPoll(db, 10, limit, cursor)).map((r) => r.id);
    expect(await listed(null, 10)).toEqual(ids.slice(0, 6));
    expect(await listed({ at: 5, id: ids[1] as number }, 10)).toEqual(ids.slice(2, 6));
    expect(await listed({ at: 5, id: ids[1] as number }, 2)).toEqual(ids.slice(2, 4));
    expect(await listed({ at: 7, id: ids[4] as number }, 10)).toEqual([ids[5]]);
    const [first] = await listDueForPoll(db, 10, 1);
    expect(first).toEqual({
      id: ids[0],
      batchId: 'CU',
      line: rows[0]?.line,
      merchantReferenceId: rows[0]?.merchantReferenceId,
      payoutId: rows[0]?.payoutId,
      serviceStatus: null,
      payoutCheckedAt: null,
      pollCount: 0,
      nextPollAt: 5,
      pollRound: 0,
      // What the row asked for, to tell its own payout from another's.
      payoutCurrency: 'PHP',
      payoutAmount: '100.50',
      deductionCurrency: 'USDT',
      serviceCheck: null,
      serviceCheckRound: 0,
    });
    // Once proven its own, still listed with what it asked: a later record showing other figures is reported.
    await db('payouts').where({ id: ids[0] }).update({ payout_checked_at: 3 });
    expect((await listDueForPoll(db, 10, 1))[0]).toMatchObject({ payoutCheckedAt: 3, payoutCurrency: 'PHP', payoutAmount: '100.50' });
  });

  it('reads a batch back with only the fields the files show', async () => {
    const { db } = store;
    await seedBatch(db, 'RD', 3, 'READY');
    const rows = [];
    for await (const page of resultRowPages(db, 'RD', 2)) rows.push(...page);
    expect(rows.map((r) => r.line)).toEqual([2, 3, 4]);
    // 21 fields (src/store/results.ts BatchResultRow, with what the service said against the row, what the last
    // result file showed of it and the correction that changed that); bookkeeping columns the files never show
    // are not read, nor the stored request: the beneficiary is read out of it in SQL.
    expect(Object.keys(rows[0] ?? {})).toHaveLength(21);
    for (const unread of ['leaseOwner', 'nextPollAt', 'pollCount', 'createAttempts', 'updatedAt', 'serviceStatus', 'requestValues'])
      expect(rows[0]).not.toHaveProperty(unread);
    expect(rows[0]).toMatchObject({ reasonCode: null, reason: null, completeTime: null, beneficiaryAccountName: 'C' });
    expect(rows[0]).toMatchObject({ merchantReferenceId: 'RD-1', state: 'READY', payoutAmount: '100.50', payoutId: null });
  });

  it('reads the beneficiary and empty columns out of the stored request as JSON.parse does', async () => {
    const { db } = store;
    await checkBeneficiaryFromRequest(db);
  });
});

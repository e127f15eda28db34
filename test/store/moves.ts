/**
 * Row moves and claims checked on a real database of either engine (SQLite
 * in test/store, PostgreSQL in test/postgres): grouped moves with mixed
 * patches and a skipped row, one history row per row moved, many moves
 * with values of their own in multi-row UPDATEs, moves of one row applied
 * in order, moves guarded by more than the state, claims oldest batch
 * first in line order with the hold rules, and query claims that leave out
 * the rows already being asked about.
 */
import { expect } from 'vitest';
import { isPostgres, TAKE_WRITE_LOCK, type Database } from '../../src/store/db.js';
import { fromColumns, getRow, type PayoutRow, type PayoutRowPatch } from '../../src/store/payouts.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { historyOf, type RowMove } from '../../src/store/moves.js';
import { applyRowMoves } from '../../src/store/answers.js';
import { claimDueRows, claimReadyRows } from '../../src/store/claims.js';
import { holdBatch } from '../../src/store/holds.js';
import type { RowState } from '../../src/domain/lifecycle.js';
import { encodeRequestValues } from '../../src/domain/request-values.js';

/** An ACTIVE batch received at `receivedAt` with `n` rows (lines 2..n+1) in `state`. */
export async function seedBatch(db: Database, id: string, n: number, state: RowState, receivedAt = 1): Promise<PayoutRow[]> {
  await db('batches').insert({
    id,
    file_name: `${id}.csv`,
    stored_path: `/claimed/${id}.csv`,
    sha256: id.padEnd(64, '0'),
    size: 1,
    mtime_ms: 1,
    state: 'ACTIVE',
    received_at: receivedAt,
    updated_at: receivedAt,
  });
  const rows = Array.from({ length: n }, (_, i) => ({
    batchId: id,
    line: i + 2,
    merchantReferenceId: `${id}-${i + 1}`,
    state: 'VALIDATED' as const,
    requestValues: encodeRequestValues([
      `${id}-${i + 1}`,
      'USDT',
      'PHP',
      '100.50',
      'A',
      'B',
      'PH',
      'PASSPORT',
      'P1',
      'C',
      '0001234567',
      'X',
    ]),
    payoutCurrency: 'PHP',
    payoutAmount: '100.50',
    deductionCurrency: 'USDT',
    reasonCode: null,
    reason: null,
  }));
  await db.transaction((trx) => insertRows(trx, rows, receivedAt));
  await db('payouts')
    .where({ batch_id: id })
    .update({ state, payout_id: state === 'PENDING' ? db.raw(`'P-' || merchant_reference_id`) : null });
  const out: PayoutRow[] = [];
  for (const rowId of (await db('payouts').where({ batch_id: id }).orderBy('line').pluck('id')) as number[])
    out.push((await getRow(db, rowId)) as PayoutRow);
  return out;
}

/** The statements knex sends, but the write lock each store transaction begins with. */
export function countStatements(db: Database): { stop(): string[] } {
  const seen: string[] = [];
  const on = (q: { sql: string }): void => {
    if (q.sql !== TAKE_WRITE_LOCK) seen.push(q.sql);
  };
  db.on('query', on);
  return {
    stop() {
      db.off('query', on);
      return seen;
    },
  };
}

/**
 * Six PENDING rows: three polled with patches equal in value (each its own
 * object), two settled with their own patches, one settled by someone else
 * before the moves apply (skipped: no change, no history row).
 */
export async function checkGroupedMoves(db: Database): Promise<void> {
  const rows = await seedBatch(db, 'GM', 6, 'PENDING');
  const [a, b, c, d, e, f] = rows as [PayoutRow, PayoutRow, PayoutRow, PayoutRow, PayoutRow, PayoutRow];
  await db('payouts').where({ id: f.id }).update({ state: 'PAID', complete_time: 'earlier' });
  const now = 5000;
  const polled = (row: PayoutRow): RowMove => ({
    row,
    from: 'PENDING',
    to: 'PENDING',
    patch: { pollCount: 1, lastPolledAt: now, nextPollAt: now + 2000 },
    history: { event: 'polled', outcome: 'PENDING' },
  });
  const settled = (row: PayoutRow, completeTime: string): RowMove => ({
    row,
    from: 'PENDING',
    to: 'PAID',
    patch: { serviceStatus: 'PAID', completeTime, pollCount: 1, lastPolledAt: now },
    history: { event: 'settled', outcome: 'PAID', detail: completeTime },
  });
  const moves = [
    polled(a),
    settled(d, '2026-01-01T00:00:01Z'),
    polled(b),
    settled(f, 'late'),
    settled(e, '2026-01-01T00:00:02Z'),
    polled(c),
  ];

  const statements = countStatements(db);
  expect(await applyRowMoves(db, moves, now)).toBe(5);
  const sent = statements.stop();

  for (const r of [a, b, c]) {
    expect(await getRow(db, r.id)).toMatchObject({
      state: 'PENDING',
      pollCount: 1,
      lastPolledAt: now,
      nextPollAt: now + 2000,
      updatedAt: now,
    });
  }
  expect(await getRow(db, d.id)).toMatchObject({ state: 'PAID', completeTime: '2026-01-01T00:00:01Z', serviceStatus: 'PAID' });
  expect(await getRow(db, e.id)).toMatchObject({ state: 'PAID', completeTime: '2026-01-01T00:00:02Z', serviceStatus: 'PAID' });
  // The skipped row is exactly as the other actor left it.
  expect(await getRow(db, f.id)).toMatchObject({ state: 'PAID', completeTime: 'earlier', pollCount: 0 });

  // One history row per row moved, none for the skipped one.
  const history = (await db('payout_history').orderBy('id').select('payout_row_id', 'event', 'from_state', 'to_state', 'detail')) as {
    payout_row_id: number;
    event: string;
    from_state: string;
    to_state: string;
    detail: string | null;
  }[];
  expect(history.map((h) => [Number(h.payout_row_id), h.event, h.from_state, h.to_state, h.detail])).toEqual([
    [a.id, 'polled', 'PENDING', 'PENDING', null],
    [d.id, 'settled', 'PENDING', 'PAID', '2026-01-01T00:00:01Z'],
    [b.id, 'polled', 'PENDING', 'PENDING', null],
    [e.id, 'settled', 'PENDING', 'PAID', '2026-01-01T00:00:02Z'],
    [c.id, 'polled', 'PENDING', 'PENDING', null],
  ]);
  expect(await historyOf(db, f.id)).toEqual([]);

  // The polls (the same columns) were one multi-row UPDATE, the settlements (other columns) one more; all
  // history rows one INSERT.
  const inserts = sent.filter((s) => /^insert into [`"]?payout_history/i.test(s));
  const updates = sent.filter((s) => /^update |^with v\b.* update /is.test(s));
  expect(inserts).toHaveLength(1);
  expect(updates).toHaveLength(2);
  expect(updates.filter((s) => /^with v\b/i.test(s))).toHaveLength(2);
  // A move that keeps the state does not set it (every index on the state would be rewritten for nothing).
  const pollUpdate = updates.find((s) => /next_poll_at/.test(s)) ?? '';
  expect(pollUpdate.split(/ from v /i)[0]).not.toMatch(/state/i);
}

/**
 * Settlements of more rows than one multi-row UPDATE sets, each with values of its own in the same columns:
 * money as decimal text, ms timestamps up to the largest safe integer, a column null in some rows, a column
 * null in every row, one null in all but the first chunk. Three rows, one of them the first of its chunk,
 * were settled by someone else before: they keep what that actor wrote and get no history row.
 */
export async function checkMovesOfTheirOwn(db: Database): Promise<void> {
  const n = 1203;
  const rows = await seedBatch(db, 'OWN', n, 'PENDING');
  const taken = new Set([0, 500, 777].map((i) => (rows[i] as PayoutRow).id));
  await db('payouts')
    .whereIn('id', [...taken])
    .update({ state: 'PAID', rate: 'theirs', poll_count: 7 });
  const now = Date.now();
  const patchOf = (i: number): PayoutRowPatch => ({
    serviceStatus: i % 3 === 0 ? 'CANCELLED' : 'PAID',
    rate: ['1500.50', '0.000001', `${i}.${i}`][i % 3] as string,
    deductionAmount: i % 2 === 0 ? `${1_000_000 + i}.000000000001` : null,
    totalFee: i % 5 === 0 ? null : `0.${String(i).padStart(6, '0')}`,
    completeTime: `2026-11-23T00:${String(i % 60).padStart(2, '0')}:00Z`,
    reasonCode: i % 3 === 0 ? 'CANCELLED' : null,
    // Text in the first chunk only: null in every row of the others.
    reason: i < 400 && i % 3 === 0 ? `cancelled ${i}` : null,
    nextPollAt: null,
    pollCount: i,
    lastPolledAt: now + i,
    // Null in the first row (the one the column's type is read from on PostgreSQL), numbers after.
    staleFlaggedAt: i % 500 === 0 ? null : i === n - 1 ? Number.MAX_SAFE_INTEGER : now - i,
  });
  const moves = rows.map((row, i): RowMove => ({
    row,
    from: 'PENDING',
    to: i % 3 === 0 ? 'CANCELLED' : 'PAID',
    patch: patchOf(i),
    history: { event: 'settled', outcome: i % 3 === 0 ? 'CANCELLED' : 'PAID', detail: patchOf(i).completeTime },
  }));

  const statements = countStatements(db);
  expect(await applyRowMoves(db, moves, now)).toBe(n - taken.size);
  const sent = statements.stop();
  // SQLite takes every row in one statement; PostgreSQL 500 rows a statement, three for 1203 rows. No UPDATE of a row of its own.
  expect(sent.filter((q) => /^with v\b/i.test(q))).toHaveLength(isPostgres(db) ? 3 : 1);
  expect(sent.filter((q) => /^update /i.test(q))).toEqual([]);

  const after = new Map(
    ((await db('payouts').where({ batch_id: 'OWN' }).select('*')) as Record<string, unknown>[]).map((r) => {
      const row = fromColumns(r);
      return [row.id, row];
    }),
  );
  for (const [i, row] of rows.entries()) {
    const stored = after.get(row.id);
    if (taken.has(row.id)) {
      expect(stored).toMatchObject({ state: 'PAID', rate: 'theirs', pollCount: 7, completeTime: null, updatedAt: row.updatedAt });
      continue;
    }
    expect(stored).toEqual({ ...row, ...patchOf(i), state: i % 3 === 0 ? 'CANCELLED' : 'PAID', updatedAt: now });
  }
  const history = (await db('payout_history').select('payout_row_id', 'to_state', 'detail')) as {
    payout_row_id: number | string;
    to_state: string;
    detail: string;
  }[];
  expect(history).toHaveLength(n - taken.size);
  expect(history.filter((h) => taken.has(Number(h.payout_row_id)))).toEqual([]);
  expect(history.find((h) => Number(h.payout_row_id) === rows[1]?.id)).toMatchObject({ to_state: 'PAID', detail: '2026-11-23T00:01:00Z' });
}

/**
 * Moves guarded by what they were decided from besides the state (`still`): rows polled for their payout,
 * one of which holds another payout by then; rejections of a payout still unproven, one of which was proven
 * meanwhile (the move clears the very column it is guarded by); rows proven at a given time. Each group goes
 * by a multi-row UPDATE; the rows changed meanwhile are skipped, without a history row.
 */
export async function checkMovesStillHolding(db: Database): Promise<void> {
  const rows = await seedBatch(db, 'SH', 7, 'PENDING');
  const [a, b, c, d, e, f, g] = rows as [PayoutRow, PayoutRow, PayoutRow, PayoutRow, PayoutRow, PayoutRow, PayoutRow];
  await db('payouts').where({ id: b.id }).update({ payout_id: 'P-OTHER' });
  await db('payouts').where({ id: e.id }).update({ payout_checked_at: 900 });
  await db('payouts').where({ id: f.id }).update({ payout_checked_at: 700 });
  await db('payouts').where({ id: g.id }).update({ payout_checked_at: 800 });
  const now = 5000;
  const polled = (row: PayoutRow): RowMove => ({
    row,
    from: 'PENDING',
    to: 'PENDING',
    patch: { pollCount: 1, lastPolledAt: now, payoutCheckedAt: now },
    history: { event: 'polled', outcome: 'PENDING' },
    still: { payoutId: row.payoutId },
  });
  const taken = (row: PayoutRow): RowMove => ({
    row,
    from: 'PENDING',
    to: 'REJECTED',
    patch: { payoutId: null, payoutCheckedAt: null, reasonCode: 'REFERENCE_TAKEN', lastPolledAt: now },
    history: { event: 'reference-taken', outcome: 'REFERENCE_TAKEN' },
    still: { payoutId: row.payoutId, payoutCheckedAt: null },
  });
  const settled = (row: PayoutRow, checkedAt: number): RowMove => ({
    row,
    from: 'PENDING',
    to: 'PAID',
    patch: { serviceStatus: 'PAID', lastPolledAt: now },
    history: { event: 'settled', outcome: 'PAID' },
    still: { payoutId: row.payoutId, payoutCheckedAt: checkedAt },
  });

  expect(await applyRowMoves(db, [polled(a), taken(d), polled(b), settled(f, 700), taken(e), polled(c), settled(g, 800)], now)).toBe(5);

  for (const r of [a, c]) expect(await getRow(db, r.id)).toMatchObject({ state: 'PENDING', pollCount: 1, payoutCheckedAt: now });
  expect(await getRow(db, b.id)).toMatchObject({ state: 'PENDING', payoutId: 'P-OTHER', pollCount: 0, payoutCheckedAt: null });
  expect(await getRow(db, d.id)).toMatchObject({ state: 'REJECTED', payoutId: null, reasonCode: 'REFERENCE_TAKEN' });
  expect(await getRow(db, e.id)).toMatchObject({ state: 'PENDING', payoutId: e.payoutId, payoutCheckedAt: 900, reasonCode: null });
  for (const r of [f, g]) expect(await getRow(db, r.id)).toMatchObject({ state: 'PAID', serviceStatus: 'PAID' });
  for (const r of [b, e]) expect(await historyOf(db, r.id)).toEqual([]);
  for (const r of [a, c, d, f, g]) expect((await historyOf(db, r.id)).length).toBe(1);
}

/** Two moves of one row in one list see each other, in order. */
export async function checkMovesOfOneRowInOrder(db: Database): Promise<void> {
  const [row] = (await seedBatch(db, 'TW', 1, 'UNKNOWN')) as [PayoutRow];
  const n = await applyRowMoves(
    db,
    [
      { row, from: 'UNKNOWN', to: 'UNKNOWN', patch: { nextAttemptAt: 10 }, history: { event: 'reconcile-wait' } },
      { row, from: 'UNKNOWN', to: 'READY', patch: { nextAttemptAt: 20 }, history: { event: 'reconciled-absent' } },
      // No longer UNKNOWN after the move before: skipped.
      { row, from: 'UNKNOWN', to: 'PENDING', patch: { nextPollAt: 30 }, history: { event: 'reconciled-found' } },
    ],
    100,
  );
  expect(n).toBe(2);
  expect(await getRow(db, row.id)).toMatchObject({ state: 'READY', nextAttemptAt: 20, nextPollAt: null });
  expect((await historyOf(db, row.id)).map((h) => [h.event, h.fromState, h.toState])).toEqual([
    ['reconcile-wait', 'UNKNOWN', 'UNKNOWN'],
    ['reconciled-absent', 'UNKNOWN', 'READY'],
  ]);
}

/**
 * Claims: the older batch first, line order within a batch, rows not yet
 * due left alone, a batch held for an operator skipped, a balance hold only
 * once it has run out; every claimed row CREATING with one intent.
 */
export async function checkClaimOrder(db: Database): Promise<void> {
  const older = await seedBatch(db, 'CO-OLD', 3, 'READY', 10);
  const newer = await seedBatch(db, 'CO-NEW', 3, 'READY', 20);
  await seedBatch(db, 'CO-HELD', 2, 'READY', 5);
  await seedBatch(db, 'CO-BAL', 2, 'READY', 30);
  const now = 1000;
  await holdBatch(db, 'CO-HELD', { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, now);
  await holdBatch(db, 'CO-BAL', { code: 'INSUFFICIENT_BALANCE', reason: 'no funds', until: now + 1 }, now);
  // The older batch's second row waits for a retry.
  await db('payouts')
    .where({ id: older[1]?.id })
    .update({ next_attempt_at: now + 500 });

  const first = await claimReadyRows(db, 4, now);
  expect(first.map((r) => [r.batchId, r.line])).toEqual([
    ['CO-OLD', 2],
    ['CO-OLD', 4],
    ['CO-NEW', 2],
    ['CO-NEW', 3],
  ]);
  expect(first.every((r) => r.state === 'CREATING' && r.createAttempts === 1 && r.leaseOwner === 'local')).toBe(true);
  for (const r of first) {
    expect(await getRow(db, r.id)).toMatchObject({ state: 'CREATING', createAttempts: 1 });
    expect((await historyOf(db, r.id)).map((h) => h.event)).toEqual(['intent']);
  }
  // Still held by its balance: only the newer batch's last row.
  expect((await claimReadyRows(db, 10, now)).map((r) => [r.batchId, r.line])).toEqual([['CO-NEW', 4]]);
  // The balance hold has run out, the retry is due; the operator's hold stays.
  expect((await claimReadyRows(db, 10, now + 500)).map((r) => [r.batchId, r.line])).toEqual([
    ['CO-OLD', 3],
    ['CO-BAL', 2],
    ['CO-BAL', 3],
  ]);
  expect(await claimReadyRows(db, 10, now + 500)).toEqual([]);
  expect(newer).toHaveLength(3);
}

/**
 * A query claim leaves the rows its instance is already asking about as they are (not leased, not returned), however
 * many it names: more than one statement may bind on SQLite.
 */
export async function checkQueryClaimLeavesOutAsked(db: Database): Promise<void> {
  const rows = (await seedBatch(db, 'QA', 6, 'PENDING')).map((r) => r.id).sort((x, y) => x - y);
  await db('payouts').update({ next_poll_at: 5 });
  const asking = new Set([rows[0]!, rows[2]!, ...Array.from({ length: 40_000 }, (_, i) => 10_000_000 + i)]);
  const claimed = await claimDueRows(db, 'PENDING', 'next_poll_at', 10, 3, 60_000, asking);
  expect(claimed.map((r) => r.id)).toEqual([rows[1], rows[3], rows[4]]);
  // The rows being asked about keep the due time they had.
  const asked = (await db('payouts').whereIn('id', [rows[0]!, rows[2]!]).pluck('next_poll_at')) as (number | string)[];
  expect(asked.map(Number)).toEqual([5, 5]);
}

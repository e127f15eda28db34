/**
 * Checks of the batch events store, run on SQLite (test/notify/events-store.test.ts) and PostgreSQL
 * (test/postgres/batch-events.test.ts): each change stores its event in its own transaction, a failed
 * change leaves none, a batch's events read back in order, and one instance at a time claims an event.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import {
  cancelReadyRows,
  claimChannelEvents,
  countEventsByDelivery,
  makeDeliveryRecords,
  completeBatch,
  countBatchesByState,
  flagStale,
  holdBatch,
  insertBatch,
  listBatchEvents,
  oldestHoldSince,
  receivedBatch,
  recordBatchEventIfLatest,
  releaseBatchHold,
  settleChannelDelivery,
  updateBatch,
} from '../../src/store/index.js';
import { recordBatchEvent } from '../../src/notify/index.js';
import { seedBatch } from './moves.js';

async function newBatch(db: Database, id: string, at: number): Promise<void> {
  await insertBatch(
    db,
    receivedBatch(
      {
        id,
        fileName: `${id}.csv`,
        storedPath: `/claimed/${id}`,
        controlPath: null,
        sha256: id.padEnd(64, '0'),
        size: 10,
        mtimeMs: 1,
        doneMarker: false,
      },
      at,
    ),
  );
}

export async function checkEventsWithTheirChanges(db: Database): Promise<void> {
  await newBatch(db, 'B1', 1000);
  await updateBatch(db, 'B1', { state: 'VALIDATING' }, 1100);
  const hold = { code: 'INSUFFICIENT_BALANCE' as const, reason: 'the USDT balance 5 does not cover 100', until: 9000 };
  expect(await holdBatch(db, 'B1', hold, 1200)).toBe(true);
  // The same hold again (a balance still short at its recheck) is no news.
  expect(await holdBatch(db, 'B1', { ...hold, reason: 'still short' }, 1300)).toBe(false);
  // Put on again once it ran out: news to log, though no event (a hold of the same kind).
  expect(await holdBatch(db, 'B1', { ...hold, until: 20_000 }, 9000)).toBe(true);
  await updateBatch(db, 'B1', { state: 'ACTIVE' }, 1400, { type: 'accepted', data: { rows: 2 } });
  await releaseBatchHold(db, 'B1', 1500, 'balance-covered');
  // Nothing held: no `released`.
  await releaseBatchHold(db, 'B1', 1600);
  // An illegal move fails, and its event is not stored either.
  await expect(updateBatch(db, 'B1', { state: 'RECEIVED' }, 1700, { type: 'rejected' })).rejects.toThrow(/cannot move/);
  const events = await listBatchEvents(db, 'B1');
  expect(events.map((e) => [e.type, e.createdAt])).toEqual([
    ['received', 1000],
    ['held', 1200],
    ['accepted', 1400],
    ['released', 1500],
  ]);
  expect(events[1]?.data).toEqual({ code: 'INSUFFICIENT_BALANCE', reason: hold.reason, until: new Date(9000).toISOString() });
  expect(events[3]?.data).toEqual({ code: 'INSUFFICIENT_BALANCE', by: 'balance-covered' });
  expect(new Set(events.map((e) => e.id)).size).toBe(4);
  for (const e of events) expect(e.id).toMatch(/^evt_[0-9a-f]{32}$/);
}

export async function checkRecordInCallersTransaction(db: Database): Promise<void> {
  await newBatch(db, 'B2', 1000);
  // The caller's transaction rolls back: neither its change nor the event it recorded stays.
  await expect(
    db.transaction(async (trx) => {
      await trx('batches').where({ id: 'B2' }).update({ hold_code: 'AWAITING_APPROVAL' });
      await recordBatchEvent(trx, { batchId: 'B2', type: 'awaiting-approval', data: { approvers: 2 }, at: 1100 });
      throw new Error('decision failed');
    }),
  ).rejects.toThrow('decision failed');
  expect((await listBatchEvents(db, 'B2')).map((e) => e.type)).toEqual(['received']);
  await db.transaction(async (trx) => {
    await recordBatchEvent(trx, { batchId: 'B2', type: 'awaiting-approval', data: { approvers: 2 }, at: 1100 });
  });
  expect((await listBatchEvents(db, 'B2')).map((e) => [e.type, e.data])).toEqual([
    ['received', { size: 10, sha256: 'B2'.padEnd(64, '0') }],
    ['awaiting-approval', { approvers: 2 }],
  ]);
}

export async function checkStaleEventsPerBatch(db: Database): Promise<void> {
  const a = await seedBatch(db, 'S1', 3, 'PENDING');
  const [first, second] = (await seedBatch(db, 'S2', 2, 'PENDING')).map((r) => r.id) as [number, number];
  const ids = [...a.map((r) => r.id), first];
  const staleEvents = async (batchId: string) => (await listBatchEvents(db, batchId)).map((e) => [e.type, e.data['payouts']]);
  expect((await flagStale(db, ids, 5000)).sort((x, y) => x - y)).toEqual(ids);
  expect(await staleEvents('S1')).toEqual([['stale', 3]]);
  expect(await staleEvents('S2')).toEqual([['stale', 1]]);
  // The same rows again (another instance listed them too): none flagged, nothing announced. A payout settled
  // since is not stale; of the rows asked, only the one not flagged yet counts.
  expect(await flagStale(db, ids, 6000)).toEqual([]);
  await db('payouts').where({ id: second }).update({ state: 'PAID' });
  expect(await flagStale(db, [...ids, second], 6000)).toEqual([]);
  await db('payouts').where({ id: second }).update({ state: 'PENDING' });
  expect(await flagStale(db, [...ids, second], 7000)).toEqual([second]);
  expect(await staleEvents('S1')).toEqual([['stale', 3]]);
  expect(await staleEvents('S2')).toEqual([
    ['stale', 1],
    ['stale', 1],
  ]);
  // Each row keeps the time it was first flagged.
  const flaggedAt = (await db('payouts').whereIn('id', ids).distinct('stale_flagged_at').pluck('stale_flagged_at')) as unknown[];
  expect(flaggedAt.map(Number)).toEqual([5000]);
}

export async function checkOneClaimPerEvent(db: Database): Promise<void> {
  await newBatch(db, 'C1', 1000);
  await newBatch(db, 'C2', 1001);
  const now = 2000;
  const mail = { name: 'email', types: ['received' as const] };
  const hook = { name: 'webhook:erp', types: ['received' as const] };
  // Each channel's record of each event, made once; a channel that takes none of the types has none.
  const made = await makeDeliveryRecords(db, [mail, hook, { name: 'status-file', types: ['stale'] }], now, 10);
  expect(made).toBe(2);
  expect(await countEventsByDelivery(db), 'both owed, none done').toEqual({ PENDING: 2 });
  expect(await makeDeliveryRecords(db, [mail, hook], now, 10)).toBe(0);
  const claim = (instanceId: string, at = now, channel = mail.name) =>
    claimChannelEvents(db, { channel, instanceId, leaseMs: 60_000, now: at, limit: 10 });
  const [x, y] = await Promise.all([claim('x'), claim('y')]);
  const claimedBy = [...x.map((e) => e.seq), ...y.map((e) => e.seq)].sort();
  // Every event claimed once for the channel, by one of the two.
  expect(claimedBy).toEqual([...new Set(claimedBy)]);
  expect(claimedBy).toHaveLength(2);
  // Another channel claims the same events on its own, whatever the mail's claims.
  expect((await claim('z', now, hook.name)).map((e) => e.seq)).toEqual([...claimedBy].sort((p, q) => p - q));
  const first = [...x, ...y].sort((p, q) => p.seq - q.seq)[0];
  if (!first) throw new Error('no event claimed');
  const owner = x.includes(first) ? 'x' : 'y';
  // Another instance's settle does nothing; the owner's lets it go, due again later.
  const refused = { state: 'PENDING' as const, attempts: 1, nextAttemptAt: now + 500, lastError: 'refused' };
  expect(await settleChannelDelivery(db, first.seq, 'email', owner === 'x' ? 'y' : 'x', { ...refused, state: 'DELIVERED' })).toBe(false);
  expect(await settleChannelDelivery(db, first.seq, 'email', owner, refused)).toBe(true);
  expect(await claim('z', now + 100)).toEqual([]);
  const again = await claim('z', now + 60_001);
  expect(again.map((e) => [e.seq, e.attempts])).toEqual([
    [first.seq, 1],
    ...[...x, ...y].filter((e) => e.seq !== first.seq).map((e) => [e.seq, 0]),
  ]);
  // Taken by every channel that takes it, the event is delivered; one given up by a channel is GAVE_UP.
  for (const e of again) await settleChannelDelivery(db, e.seq, 'email', 'z', { ...refused, state: 'DELIVERED' });
  expect(await countEventsByDelivery(db), 'still owed to the webhook').toEqual({ PENDING: 2 });
  const [last, gaveUp] = [again[0]!.seq, again[1]!.seq];
  await settleChannelDelivery(db, last, 'webhook:erp', 'z', { ...refused, state: 'DELIVERED' });
  await settleChannelDelivery(db, gaveUp, 'webhook:erp', 'z', { ...refused, state: 'GAVE_UP' });
  expect(await countEventsByDelivery(db)).toEqual({ DELIVERED: 1, GAVE_UP: 1 });
}

export async function checkHoldMetrics(db: Database): Promise<void> {
  await seedBatch(db, 'H1', 1, 'READY');
  await seedBatch(db, 'H2', 1, 'READY');
  await seedBatch(db, 'H3', 1, 'READY');
  await holdBatch(db, 'H1', { code: 'INSUFFICIENT_BALANCE', reason: 'short', until: 10_000 }, 3000);
  await holdBatch(db, 'H2', { code: 'AWAITING_APPROVAL', reason: 'two approvals needed', until: null }, 2000);
  // Cancelled by an operator with a payout still in flight and a row not yet sent: ACTIVE until it is final,
  // CANCELLED as status shows it. H5's cancel found only a create in flight, which may still be stopped.
  await seedBatch(db, 'H4', 2, 'PENDING');
  const [unsent] = (await db('payouts').where({ batch_id: 'H4' }).orderBy('line', 'desc').limit(1).pluck('id')) as number[];
  await db('payouts').where({ id: unsent }).update({ state: 'READY' });
  await cancelReadyRows(db, 'H4', 'cancelled by an operator: wrong month', 2500);
  await seedBatch(db, 'H5', 1, 'CREATING');
  await cancelReadyRows(db, 'H5', 'cancelled by an operator: wrong month', 2500);
  expect(await countBatchesByState(db)).toEqual({ ACTIVE: 1, HELD: 1, AWAITING_APPROVAL: 1, CANCELLED: 2 });
  expect(await oldestHoldSince(db)).toBe(2000);
  expect((await listBatchEvents(db, 'H2')).map((e) => e.type)).toEqual(['awaiting-approval']);
  await releaseBatchHold(db, 'H2', 4000);
  expect(await oldestHoldSince(db)).toBe(3000);
  // Once its payout is final and the batch COMPLETE, it still reads CANCELLED, as its final notice does: the
  // cancel left a row NOT_SUBMITTED. H5's create reached the service and was paid: a plain COMPLETE.
  await db('payouts').where({ batch_id: 'H4', state: 'PENDING' }).update({ state: 'PAID' });
  await db('payouts').where({ batch_id: 'H5' }).update({ state: 'PAID' });
  for (const id of ['H4', 'H5']) {
    expect(await completeBatch(db, id, { resultWrittenAt: 5000, completedAt: 5000 }, 5000, { type: 'completed' })).toBe(true);
  }
  expect(await countBatchesByState(db)).toEqual({ ACTIVE: 2, HELD: 1, CANCELLED: 1, COMPLETE: 1 });
}

export async function checkOneOfConcurrentPeriodicEvents(db: Database): Promise<void> {
  await newBatch(db, 'P1', 1000);
  const progress = (final: number) => ({ batchId: 'P1', type: 'progress' as const, data: { final }, at: 2000 });
  // Two instances decide the same progress event from the same last one (none yet): one records it.
  const both = await Promise.all([recordBatchEventIfLatest(db, progress(10), null), recordBatchEventIfLatest(db, progress(11), null)]);
  expect(both.filter(Boolean)).toHaveLength(1);
  const [first] = (await listBatchEvents(db, 'P1')).filter((e) => e.type === 'progress');
  expect(await recordBatchEventIfLatest(db, progress(20), first?.seq ?? null)).toBe(true);
  expect((await listBatchEvents(db, 'P1')).filter((e) => e.type === 'progress')).toHaveLength(2);
}

/** Every check above with the name its test goes by, for the test file of each engine. */
export const BATCH_EVENT_CHECKS: readonly [string, (db: Database) => Promise<void>][] = [
  ['each change stores its event in its transaction; an illegal move stores none', checkEventsWithTheirChanges],
  ["recordBatchEvent joins the caller's transaction and rolls back with it", checkRecordInCallersTransaction],
  ['stale payouts make one event per batch, once: rows flagged before count no more', checkStaleEventsPerBatch],
  ['one claim per event and channel, taken again when its lease ends; each channel claims on its own', checkOneClaimPerEvent],
  ['of instances deciding the same progress event at once, one records it', checkOneOfConcurrentPeriodicEvents],
  ['batches by state count held, awaiting approval and cancelled apart; the oldest hold is known', checkHoldMetrics],
];

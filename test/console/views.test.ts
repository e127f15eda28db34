/**
 * What the console shows of a batch, worked out by pure functions: the
 * progress and the time left at the pace so far, the reason a batch waits
 * or was refused, its amounts, and its timeline in order.
 */
import { describe, expect, it } from 'vitest';
import { approvePage, batchRows } from '../../src/console/pages.js';
import { acceptedTotalsOf, eventWords, progressOf, reasonOf, timelineOf, totalsOf } from '../../src/console/views.js';
import type { BatchEvent } from '../../src/domain/batch-events.js';
import { receivedBatch, type BatchRecord } from '../../src/store/index.js';

const batch = (patch: Partial<BatchRecord> = {}): BatchRecord => ({
  ...receivedBatch(
    { id: 'B-1', fileName: 'p.csv', storedPath: '/s', controlPath: null, sha256: 'a'.repeat(64), size: 1, mtimeMs: 1, doneMarker: false },
    1000,
  ),
  ...patch,
});

describe('console views', () => {
  it('progress: final rows of all rows, and the time left at the pace since acceptance', () => {
    const active = batch({ state: 'ACTIVE', rowCount: 100, acceptedAt: 10_000 });
    expect(progressOf(active, { PAID: 20, CANCELLED: 5, PENDING: 75 }, 60_000)).toEqual({ done: 25, total: 100, etaMs: 150_000 });
    expect(progressOf(active, { READY: 100 }, 60_000)).toEqual({ done: 0, total: 100, etaMs: null });
    expect(progressOf({ ...active, state: 'COMPLETE' }, { PAID: 100 }, 60_000)).toEqual({ done: 100, total: 100, etaMs: null });
    // While being read, rows counted so far are fewer than the batch's rows.
    expect(progressOf(batch({ state: 'VALIDATING', rowCount: 10 }), { READY: 4 }, 2000).total).toBe(10);
  });

  it('a cancelled batch reads CANCELLED with its reason, as payoutd status words it, while its sent rows finish', () => {
    const cancelled = batch({ state: 'ACTIVE', cancelledAt: 5000, cancelReason: 'wrong week', holdCode: 'AWAITING_APPROVAL' });
    expect(reasonOf(cancelled, { awaiting: true, reason: 'over 10000 PHP', decisions: [] })).toBe('cancelled: wrong week');
    const row = String(
      batchRows({ identity: null, refreshMs: 0, now: 6000 }, [
        {
          batch: cancelled,
          uploader: null,
          counts: { PENDING: 1 },
          progress: { done: 0, total: 1, etaMs: null },
          reason: 'cancelled: wrong week',
          awaitingApproval: false,
        },
      ]),
    );
    expect(row).toContain('>CANCELLED<');
    expect(row).not.toContain('>ACTIVE<');
  });

  it('the reason: an approval first, then a hold, a duplicate, a refusal; none for a batch going its way', () => {
    expect(reasonOf(batch({ holdCode: 'INSUFFICIENT_BALANCE', holdReason: 'short by 5 USDT' }), null)).toBe(
      'INSUFFICIENT_BALANCE: short by 5 USDT',
    );
    expect(reasonOf(batch(), { awaiting: true, reason: 'over 10000 PHP', decisions: [] })).toBe('awaiting approval: over 10000 PHP');
    expect(reasonOf(batch({ state: 'DUPLICATE', duplicateOf: 'B-0' }), null)).toBe('same file as batch B-0');
    expect(reasonOf(batch({ state: 'REJECTED', rejectCode: 'BAD_HEADER', rejectReason: 'missing payoutAmount' }), null)).toBe(
      'BAD_HEADER: missing payoutAmount',
    );
    expect(reasonOf(batch({ state: 'ACTIVE' }), null)).toBeNull();
  });

  it('amounts per currency in code order; a damaged record shows none', () => {
    expect(totalsOf({ totalsJson: '{"USD":"1.50","EUR":"2"}' })).toEqual([
      ['EUR', '2'],
      ['USD', '1.50'],
    ]);
    expect(totalsOf({ totalsJson: 'not json' })).toEqual([]);
    expect(totalsOf({ totalsJson: null })).toEqual([]);
  });

  it('the batch list shows what the accepted rows pay, as payoutd status does, not the amounts of refused rows', () => {
    // 8 of 23 rows accepted; a refused row's amount mistyped 1000000000.001.
    const totals = { totalsJson: '{"PHP":"1000012345.501"}', acceptedTotalsJson: '{"PHP":"12000.5"}' };
    const partly = batch({ state: 'ACTIVE', validCount: 8, invalidCount: 15, ...totals });
    const item = { batch: partly, uploader: null, counts: { READY: 8 }, progress: { done: 0, total: 23, etaMs: null }, reason: null };
    const row = String(batchRows({ identity: null, refreshMs: 0, now: 2000 }, [{ ...item, awaitingApproval: false }]));
    expect(row).toContain('12000.5 PHP');
    expect(row).not.toContain('1000012345.501');
    expect(acceptedTotalsOf({ acceptedTotalsJson: null })).toEqual([]);
  });

  it('the approval confirmation headlines what will be paid, not the amounts of refused rows', () => {
    // Under onInvalidRows: skip-rows, a refused row (a reference pasted twice, its amount mistyped) is not paid.
    const waiting = batch({
      state: 'ACTIVE',
      validCount: 3,
      invalidCount: 1,
      totalsJson: '{"PHP":"90300.00"}',
      approvalFiguresJson: JSON.stringify({ totals: { PHP: '300.00' }, rows: 3, largest: { PHP: '100.00' } }),
    });
    const item = {
      batch: waiting,
      uploader: 'uma',
      counts: {},
      progress: { done: 0, total: 4, etaMs: null },
      reason: null,
      awaitingApproval: true,
    };
    const identity = { user: 'abe', role: 'approver' as const, csrfToken: 'c'.repeat(64), via: 'session' as const };
    const text = approvePage({ identity, refreshMs: 3000, now: 2000 }, item, [], null)
      .toString()
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ');
    expect(text).toContain('Will be paid 300.00 PHP in 3 rows');
    expect(text).toContain('Approve: pay 300.00 PHP in 3 rows');
    expect(text).toContain('Amounts of all rows in the file, including refused ones 90300.00 PHP');
  });

  it('the timeline in time order, with the uploader and each decision', () => {
    const b = batch({ state: 'COMPLETE', acceptedAt: 2000, ackWrittenAt: 2100, resultWrittenAt: 9000, completedAt: 9000, validCount: 3 });
    const events = timelineOf(b, 'maria', {
      awaiting: false,
      reason: null,
      decisions: [{ decision: 'approve', approver: 'li', via: 'console', at: 5000, comment: 'ok' }],
    });
    expect(events.map((e) => [e.at, e.what])).toEqual([
      [1000, 'received (uploaded by maria in the console)'],
      [2000, 'accepted: 3 valid row(s), 0 invalid'],
      [2100, 'acknowledgement written to the outbox'],
      [5000, 'approved by li (console): ok'],
      [9000, 'result and summary written to the outbox'],
      [9000, 'complete: every row is final'],
    ]);
  });

  it('the timeline from the stored events when the batch has them: in words, progress left out', () => {
    const event = (seq: number, type: BatchEvent['type'], data: BatchEvent['data']): BatchEvent => ({
      seq,
      id: `e${seq}`,
      batchId: 'B-1',
      type,
      data,
      createdAt: 1000 * seq,
    });
    const events = [
      event(1, 'received', { size: 10, sha256: 'a'.repeat(64) }),
      event(2, 'accepted', { rows: 3, validCount: 3, invalidCount: 0, hold: null }),
      event(3, 'held', { code: 'INSUFFICIENT_BALANCE', reason: 'short by 5 USDT', until: null }),
      event(4, 'progress', { percent: 50 }),
      event(5, 'released', { code: 'INSUFFICIENT_BALANCE', by: 'balance-covered' }),
      event(6, 'completed', { rows: 3 }),
    ];
    expect(timelineOf(batch(), 'maria', null, events).map((e) => [e.at, e.what])).toEqual([
      [1000, 'received (uploaded by maria in the console)'],
      [2000, 'accepted: 3 valid row(s), 0 invalid'],
      [3000, 'held: INSUFFICIENT_BALANCE short by 5 USDT'],
      [5000, 'hold lifted (balance-covered)'],
      [6000, 'complete: every row is final; result and summary written'],
    ]);
    expect(eventWords({ type: 'approved', data: { approver: 'li', via: 'console', comment: 'ok' } })).toBe('approved by li (console): ok');
    expect(eventWords({ type: 'rejected', data: { code: 'DUPLICATE_FILE', reason: 'same bytes as B-0' } })).toBe(
      'rejected: DUPLICATE_FILE same bytes as B-0',
    );
  });
});

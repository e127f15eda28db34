/** Batch events on SQLite: stored with their changes, in order, claimed once (checks in test/store/batch-events.ts). */
import { describe, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import {
  checkEventsWithTheirChanges,
  checkHoldMetrics,
  checkOneClaimPerEvent,
  checkOneOfConcurrentPeriodicEvents,
  checkRecordInCallersTransaction,
  checkStaleEventsPerBatch,
} from '../store/batch-events.js';

describe('batch events (SQLite)', () => {
  const t = useTestDatabase('payoutd-events-');
  it('each change stores its event in its transaction; an illegal move stores none', () => checkEventsWithTheirChanges(t.db));
  it("recordBatchEvent joins the caller's transaction and rolls back with it", () => checkRecordInCallersTransaction(t.db));
  it('stale payouts make one event per batch', () => checkStaleEventsPerBatch(t.db));
  it('one claim per event, taken again when its lease ends', () => checkOneClaimPerEvent(t.db));
  it('of instances deciding the same progress event at once, one records it', () => checkOneOfConcurrentPeriodicEvents(t.db));
  it('batches by state count held and awaiting approval apart; the oldest hold is known', () => checkHoldMetrics(t.db));
});

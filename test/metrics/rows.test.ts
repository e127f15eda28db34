/**
 * The row gauges read at scrape time, on a real SQLite file: rows by state summed over batches (the
 * count is grouped per batch, in the order of the (batch_id, state, line) index), and the age of the
 * oldest PENDING payout.
 */
import { describe, expect, it } from 'vitest';
import { PayoutdMetrics } from '../../src/metrics/index.js';
import { useTestDatabase } from '../support/database.js';
import { seedBatch } from '../store/moves.js';

describe('metrics: rows by state', () => {
  const store = useTestDatabase('payoutd-metrics-');

  it('sums each state over every batch, and ages the oldest PENDING payout', async () => {
    const { db } = store;
    await seedBatch(db, 'MA', 3, 'PENDING');
    await seedBatch(db, 'MB', 4, 'PENDING');
    await seedBatch(db, 'MC', 2, 'PAID');
    await db('payouts').where({ batch_id: 'MB', line: 2 }).update({ state: 'PAID' });
    await db('payouts').where({ state: 'PENDING' }).update({ created_at_ms: 50_000 });
    await db('payouts').where({ batch_id: 'MA', line: 3 }).update({ created_at_ms: 40_000 });
    const metrics = new PayoutdMetrics({ db, now: () => 100_000, ready: () => true });
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^payoutd_rows\{state="PENDING"\} 6$/m);
    expect(text).toMatch(/^payoutd_rows\{state="PAID"\} 3$/m);
    expect(text).toMatch(/^payoutd_oldest_pending_payout_age_seconds 60$/m);
  });
});

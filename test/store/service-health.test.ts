/**
 * The rows of service health (src/store/service-health.ts, migration 0010)
 * on a real SQLite file: one row per instance and service, replaced at each
 * write; the row written last is the one `payoutd status` believes; an
 * instance's rows go when it stops, every row when an instance alone starts.
 */
import { describe, expect, it } from 'vitest';
import { forgetServiceHealth, latestServiceHealth, recordServiceHealth } from '../../src/store/service-health.js';
import { useTestDatabase } from '../support/database.js';

describe('store: service health', () => {
  const store = useTestDatabase('payoutd-service-health-');

  it('keeps one row per instance and service; the one written last is believed; forgets by instance or all', async () => {
    const { db } = store;
    const row = { service: 'payout-api', lastErrorCode: null, since: 1_000 };
    await recordServiceHealth(db, { ...row, instanceId: 'a', state: 'closed', updatedAt: 1_000 });
    await recordServiceHealth(db, { ...row, instanceId: 'b', state: 'closed', updatedAt: 1_500 });
    await recordServiceHealth(db, {
      ...row,
      instanceId: 'a',
      state: 'open',
      since: 2_000,
      lastErrorCode: 'ECONNREFUSED',
      updatedAt: 2_000,
    });
    expect(await latestServiceHealth(db)).toEqual([
      { instanceId: 'a', service: 'payout-api', state: 'open', since: 2_000, lastErrorCode: 'ECONNREFUSED', updatedAt: 2_000 },
    ]);
    // A fresher word from another instance (a refresh while it runs) is believed over an older one.
    await recordServiceHealth(db, { ...row, instanceId: 'b', state: 'closed', updatedAt: 3_000 });
    expect((await latestServiceHealth(db)).map((h) => [h.instanceId, h.state])).toEqual([['b', 'closed']]);

    await forgetServiceHealth(db, 'b');
    expect((await latestServiceHealth(db)).map((h) => [h.instanceId, h.state])).toEqual([['a', 'open']]);
    await forgetServiceHealth(db);
    expect(await latestServiceHealth(db)).toEqual([]);
  });
});

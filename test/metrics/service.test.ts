/**
 * The payout service's reachability in /metrics and /readyz, read at scrape
 * time from the circuit breaker's state: up (1) and ready while it is
 * closed; down (0) with the time it has been down, and not ready with the
 * reason, while it is open.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ServiceHealth } from '../../src/domain/service-health.js';
import { PayoutdMetrics } from '../../src/metrics/index.js';
import { useTestDatabase } from '../support/database.js';

const running: PayoutdMetrics[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((m) => m.close()));
});

describe('metrics: the payout service', () => {
  const store = useTestDatabase('payoutd-metrics-service-');

  it('up and ready while reachable; down for N s and not ready, saying why, while unreachable', async () => {
    const since = new Date(2026, 0, 1, 12, 3, 10).getTime();
    let health: ServiceHealth = { state: 'closed', since, lastErrorCode: null };
    const now = since + 42_000;
    const metrics = new PayoutdMetrics({ db: store.db, now: () => now, ready: () => true, serviceHealth: () => health });
    running.push(metrics);
    const base = await metrics.listen('127.0.0.1', 0);

    expect(await metrics.registry.metrics()).toMatch(/^payoutd_service_up\{service="payout-api"\} 1$/m);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    health = { state: 'open', since, lastErrorCode: 'ECONNREFUSED' };
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^payoutd_service_up\{service="payout-api"\} 0$/m);
    expect(text).toMatch(/^payoutd_service_down_seconds\{service="payout-api"\} 42$/m);
    const ready = await fetch(`${base}/readyz`);
    expect([ready.status, await ready.text()]).toEqual([503, 'payout service unreachable since 12:03:10 (ECONNREFUSED), sending paused\n']);
  });
});

/** Batch events on SQLite: stored with their changes, in order, claimed once (checks in test/store/batch-events.ts). */
import { describe, it } from 'vitest';
import { useTestDatabase } from '../support/database.js';
import { BATCH_EVENT_CHECKS } from '../store/batch-events.js';

describe('batch events (SQLite)', () => {
  const t = useTestDatabase('payoutd-events-');
  for (const [name, check] of BATCH_EVENT_CHECKS) it(name, () => check(t.db));
});

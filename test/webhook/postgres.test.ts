/**
 * Deduplication on PostgreSQL: the same insert-or-ignore as on SQLite, now
 * with concurrent copies racing on a real server. Uses the server the
 * PostgreSQL tests use (test/postgres/pg.ts: PAYOUTD_TEST_PG_URL, default
 * the local one), in a throwaway schema; skipped, with the reason printed,
 * when none answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, migrateToLatest, openDatabase } from '../../src/store/db.js';
import { pgReachable, useTestSchema } from '../postgres/pg.js';
import { closeAll, eventBody, eventRows, onClose, send, signedHeaders, startReceiver } from './helpers.js';

afterEach(closeAll);

describe.skipIf(!pgReachable)('webhook deduplication on PostgreSQL', () => {
  const schema = useTestSchema();

  it('records an event once, however many copies race in', async () => {
    const db = openDatabase({ client: 'pg', url: schema.url, filename: '', poolMax: 8, busyTimeoutMs: 5000, synchronous: 'FULL' });
    onClose(() => closeDatabase(db));
    await migrateToLatest(db);
    const h = await startReceiver({ db });
    const body = eventBody({ eventId: 'EV-PG', payoutId: 'PO-PG' });
    // Each copy signed with its own nonce, as a sender's retries are.
    const answers = await Promise.all(Array.from({ length: 8 }, () => send(h.url, { headers: signedHeaders(body, h.clock), body })));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(h.verdicts.filter((v) => v === 'accepted')).toHaveLength(1);
    expect(h.verdicts.filter((v) => v === 'duplicate')).toHaveLength(7);
    expect(await eventRows(db)).toMatchObject([{ event_id: 'EV-PG', payout_id: 'PO-PG', status: 'PAID' }]);
    await expect.poll(() => h.followUps, { timeout: 2000, interval: 5 }).toEqual([['PO-PG']]);
  });
});

/**
 * Deduplication on PostgreSQL: the same insert-or-ignore as on SQLite, now
 * with concurrent copies racing on a real server. Runs only when
 * PAYOUTD_TEST_PG_URL points at a server where the test may create and drop
 * a throwaway database (e.g. postgres://postgres@127.0.0.1/postgres).
 */
import { randomUUID } from 'node:crypto';
import knexFactory from 'knex';
import { afterEach, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../../src/store/db.js';
import { closeAll, eventBody, eventRows, onClose, send, signedHeaders, startReceiver } from './helpers.js';

const ADMIN_URL = process.env['PAYOUTD_TEST_PG_URL'];

afterEach(closeAll);

it.skipIf(!ADMIN_URL)('records an event once on PostgreSQL, however many copies race in', async () => {
  const name = `payoutd_webhook_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = knexFactory({ client: 'pg', connection: ADMIN_URL, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  onClose(async () => {
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  });
  const url = new URL(ADMIN_URL as string);
  url.pathname = `/${name}`;
  const db = openDatabase({ client: 'pg', url: url.toString(), filename: '', poolMax: 8, busyTimeoutMs: 5000, synchronous: 'FULL' });
  onClose(() => db.destroy());
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

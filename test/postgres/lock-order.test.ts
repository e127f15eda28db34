/**
 * A webhook follow-up naming payouts B then A, and a poll answer recording A then B, on one PostgreSQL database:
 * each locks the two rows, so unless both lock them in one order (ascending id) each can hold the row the other
 * waits for, and PostgreSQL aborts one as a deadlock (the webhook answers 500, or the poll answer is lost). The
 * receiver passes one payout per event; its follow-up (followUpNamed) takes several.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { recordAnswers, recordWebhookEvent } from '../../src/store/index.js';
import { followUpNamed } from '../../src/webhook/receiver.js';
import { closePipelines, payoutRequest, startPipeline } from '../pipeline/harness.js';
import { latestSchema, pgQuery, PG_URL, pgReachable, useTestSchema } from './pg.js';

const opened: Database[] = [];

/** A connection to the schema that pg_stat_activity shows under `name`. */
function named(url: string, name: string): Database {
  const db = openDatabase({
    client: 'pg',
    filename: '',
    url: `${url}&application_name=${name}`,
    poolMax: 2,
    busyTimeoutMs: 5000,
    synchronous: 'FULL',
  });
  opened.push(db);
  return db;
}

/** Resolves once a statement of the connection named `name` waits for a lock. */
async function waitsForLock(name: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const rows = await pgQuery<{ n: number }>(
      PG_URL,
      "select count(*)::int as n from pg_stat_activity where application_name = $1 and wait_event_type = 'Lock'",
      [name],
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${name} never waited for a lock`);
}

describe.skipIf(!pgReachable)('rows locked by a webhook and a poll answer together', () => {
  const schema = useTestSchema();
  afterEach(async () => {
    await closePipelines();
    await Promise.all(opened.splice(0).map((db) => closeDatabase(db)));
  });

  it('a webhook naming B then A and a poll answer recording A then B both commit', async () => {
    const p = await startPipeline({ database: latestSchema(schema) });
    await p.insertReadyBatch([payoutRequest('LO-A'), payoutRequest('LO-B')]);
    await p.submit();
    const a = await p.row('LO-A');
    const b = await p.row('LO-B');
    expect([a.state, b.state]).toEqual(['PENDING', 'PENDING']);
    expect(a.id).toBeLessThan(b.id);

    const tag = schema.name.slice(-8);
    const pollDb = named(schema.url, `lo_poll_${tag}`);
    const hookDb = named(schema.url, `lo_hook_${tag}`);

    // Another transaction holds A for a moment: the poll answer queues for A first, then the webhook starts.
    const holder = new pg.Client({ connectionString: schema.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from payouts where id = $1 for update', [a.id]);

      const now = p.clock.now();
      const move = (r: typeof a) => ({
        row: { id: r.id, batchId: r.batchId },
        from: 'PENDING' as const,
        to: 'PENDING' as const,
        patch: { nextPollAt: now + 60_000 },
        history: null,
      });
      const poll = recordAnswers(pollDb, [{ moves: [move(a), move(b)], at: now }]);
      await waitsForLock(`lo_poll_${tag}`);

      const event = { eventId: 'EV-LO-1', payoutId: b.payoutId as string, merchantReferenceId: 'LO-B', status: 'PAID' };
      const hook = recordWebhookEvent(hookDb, event, now, (trx) =>
        followUpNamed(trx, p.clock, p.logger, [
          { ...event },
          { eventId: 'EV-LO-1', payoutId: a.payoutId as string, merchantReferenceId: 'LO-A', status: 'PAID' },
        ]),
      );
      await waitsForLock(`lo_hook_${tag}`);
      await holder.query('commit');

      const [polled, hooked] = await Promise.allSettled([poll, hook]);
      expect(polled.status === 'rejected' ? String(polled.reason) : 'committed').toBe('committed');
      expect(hooked.status === 'rejected' ? String(hooked.reason) : 'committed').toBe('committed');
    } finally {
      await holder.end();
    }
  });
});

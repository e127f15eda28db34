/**
 * Renewing the leases of a claim's waiting rows, and a create answer recording those rows, on one PostgreSQL
 * database: each locks the two rows, so unless both lock them in one order (ascending id) each can hold the row
 * the other waits for, and PostgreSQL aborts one as a deadlock (the answer is lost, or the renewal fails). An
 * UPDATE locks rows in the order it reads them: by lease (an index), which a row's fence renewed alone moves on.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { claimReadyRows, fenceCreate, recordAnswers, renewClaims } from '../../src/store/index.js';
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

describe.skipIf(!pgReachable)('rows locked by a lease renewal and an answer together', () => {
  const schema = useTestSchema();
  afterEach(async () => {
    await closePipelines();
    await Promise.all(opened.splice(0).map((db) => closeDatabase(db)));
  });

  it('a renewal reading B then A and an answer recording A then B both commit', async () => {
    const p = await startPipeline({ database: latestSchema(schema) });
    await p.insertReadyBatch([payoutRequest('LO-A'), payoutRequest('LO-B')]);
    const claimant = p.submitterOptions.claimant;
    const [a, b] = await claimReadyRows(p.db, 2, p.clock.now(), claimant);
    if (a === undefined || b === undefined) throw new Error('not claimed');
    expect(a.id).toBeLessThan(b.id);
    // A's fence renews its lease alone as its send starts: the renewal reads the rows by lease, B then A.
    expect(await fenceCreate(p.db, a, p.clock.now() + 1000, claimant, true)).toBe('sending');

    const tag = schema.name.slice(-8);
    const answerDb = named(schema.url, `lo_answer_${tag}`);
    const renewDb = named(schema.url, `lo_renew_${tag}`);

    // Another transaction holds A for a moment: the answer queues for A first, then the renewal starts.
    const holder = new pg.Client({ connectionString: schema.url });
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from payouts where id = $1 for update', [a.id]);

      const now = p.clock.now();
      const move = (r: typeof a) => ({
        row: { id: r.id, batchId: r.batchId },
        from: 'CREATING' as const,
        to: 'CREATING' as const,
        patch: { nextAttemptAt: now + 60_000 },
        history: null,
      });
      const answer = recordAnswers(answerDb, [{ moves: [move(a), move(b)], at: now }]);
      await waitsForLock(`lo_answer_${tag}`);
      const renewal = renewClaims(renewDb, [a, b], now, claimant);
      await waitsForLock(`lo_renew_${tag}`);
      await holder.query('commit');

      const [answered, renewed] = await Promise.allSettled([answer, renewal]);
      expect(answered.status === 'rejected' ? String(answered.reason) : 'committed').toBe('committed');
      expect(renewed.status === 'rejected' ? String(renewed.reason) : 'committed').toBe('committed');
    } finally {
      await holder.end();
    }
  });
});

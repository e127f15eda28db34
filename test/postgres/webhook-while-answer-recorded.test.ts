/**
 * PostgreSQL: a payout.updated event whose follow-up lands while the poller's transaction is recording an older
 * answer of the same payout. The poller's query is answered PAID by the real sandbox; its transaction has moved
 * the row and is held (another session locks payout_history, so its history insert waits) when the service
 * reverses the payout and its CANCELLED event reaches the real receiver. The follow-up must wait for that
 * transaction rather than skip the row: it then finds the row recorded PAID and the event saying otherwise, so a
 * query of the payout is owed, and the service's answer to it is noted on the row.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { closePipelines, payoutRequest, startPipeline, waitFor } from '../pipeline/harness.js';
import { deliver } from '../webhook/final-rows-world.js';
import { PATH, closeAll, parsedLines, startReceiver } from '../webhook/helpers.js';
import { latestSchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: a webhook while an older answer of its payout is being recorded', () => {
  const schema = useTestSchema();
  const sessions: pg.Client[] = [];
  afterEach(async () => {
    for (const s of sessions.splice(0)) await s.end().catch(() => undefined);
    await closeAll();
    await closePipelines();
  });

  /** A session of its own on the schema, outside the pipeline's pool. */
  async function session(): Promise<pg.Client> {
    const s = new pg.Client({ connectionString: schema.url });
    await s.connect();
    sessions.push(s);
    return s;
  }

  /** Sessions waiting for a lock that session `pid` holds, directly or through others. */
  async function blockedBy(watch: pg.Client, pid: number): Promise<number> {
    const r = await watch.query<{ n: number }>(
      `with recursive w(pid) as (
         select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))
         union select a.pid from pg_stat_activity a join w on w.pid = any(pg_blocking_pids(a.pid)))
       select count(*)::int as n from w`,
      [pid],
    );
    return r.rows[0]?.n ?? 0;
  }

  it('waits for the answer, then finds the row contradicted and makes a query of it owed', async () => {
    const p = await startPipeline({ database: latestSchema(schema) });
    const batchId = await p.insertReadyBatch([payoutRequest('WA-1')]);
    await p.submit();
    const payoutId = (await p.row('WA-1')).payoutId as string;
    expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });

    // Holds the poller's transaction once it has moved the row: its history insert waits for this lock.
    const holder = await session();
    const watch = await session();
    const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid ?? -1;
    await holder.query('begin');
    await holder.query('lock table payout_history in share mode');
    let held = true;
    try {
      p.clock.advance(p.pollerOptions.maxIntervalMs);
      const pass = p.poller.runPass(p.signal);
      await waitFor(async () => (await blockedBy(watch, holderPid)) === 1, "the poller's answer to be recorded and held");

      // The service reverses the payout and says so; the follow-up meets the row while the answer holds it.
      expect(p.sandbox.reverse(payoutId, 'CANCELLED')).toBe(true);
      let delivered = false;
      const delivery = deliver(h, { payoutId, merchantReferenceId: 'WA-1', status: 'CANCELLED' }).finally(() => (delivered = true));
      await waitFor(async () => delivered || (await blockedBy(watch, holderPid)) === 2, 'the follow-up to meet the held row');
      await holder.query('commit');
      held = false;
      await pass;
      await delivery;
    } finally {
      if (held) await holder.query('rollback');
    }

    expect(await p.states(batchId)).toEqual(['PAID']);
    const follow = parsedLines(h.logs).filter((l) => l['merchantReferenceId'] === 'WA-1' && l['level'] !== 'debug');
    expect(follow.map((l) => l['msg'])).not.toContain('webhook accepted: no PENDING row of this payout here; nothing made due');
    expect((await p.row('WA-1')).serviceCheck).toBe('PAYOUT');

    // The poller asks, and the service's answer (CANCELLED) is noted on the row recorded PAID.
    await p.poller.runPass(p.signal);
    const row = await p.row('WA-1');
    expect(row.state).toBe('PAID');
    expect(row.serviceCheck).toBeNull();
    expect(row.serviceNote).toContain('CANCELLED');
  });
});

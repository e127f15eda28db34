/**
 * PostgreSQL: a payout.updated event whose follow-up lands while the poller's transaction is recording an older
 * answer of the same payout. The poller's query is answered PAID by the real sandbox; its transaction has moved
 * the row and is held (another session locks payout_history, so its history insert waits) when the service
 * reverses the payout and its CANCELLED event reaches the real receiver. The follow-up must wait for that
 * transaction rather than skip the row: it then finds the row recorded PAID and the event saying otherwise, so a
 * query of the payout is owed, and the service's answer to it is noted on the row. The same holds for a row waiting
 * on an unknown create outcome whose reference query's answer is being recorded (the submitter's reconcile). An
 * event naming a payout under a row whose reconcile is recording its reference absent finds the row READY once that
 * commits: it is asked again rather than created a second time.
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { requestOfText } from '../../src/domain/request-values.js';
import { claimReadyRows, markInterruptedCreatesUnknown } from '../../src/store/index.js';
import { closePipelines, payoutRequest, startPipeline, waitFor, type Pipeline } from '../pipeline/harness.js';
import { deliver } from '../webhook/final-rows-world.js';
import { adoptedNotCreatedAgain, interruptedCreate, lateCreateLands } from '../pipeline/event-while-ready.js';
import { PATH, closeAll, parsedLines, startReceiver, type Harness } from '../webhook/helpers.js';
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

  /**
   * Runs `pass` while another session holds its answer's transaction once the row has moved (its history insert
   * waits for that lock), and meanwhile `arrives` delivers an event whose follow-up meets the row held.
   */
  async function whileRecorded(pass: () => Promise<unknown>, arrives: () => Promise<void>): Promise<void> {
    const holder = await session();
    const watch = await session();
    const holderPid = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid ?? -1;
    await holder.query('begin');
    await holder.query('lock table payout_history in share mode');
    let held = true;
    try {
      const passing = pass();
      await waitFor(async () => (await blockedBy(watch, holderPid)) === 1, 'the answer to be recorded and held');
      let delivered = false;
      const delivery = arrives().finally(() => (delivered = true));
      await waitFor(async () => delivered || (await blockedBy(watch, holderPid)) === 2, 'the follow-up to meet the held row');
      await holder.query('commit');
      held = false;
      await passing;
      await delivery;
    } finally {
      if (held) await holder.query('rollback');
    }
  }

  /** whileRecorded, the service reversing the payout and saying so meanwhile: a query of the payout is owed. */
  async function reversedWhileRecorded(
    p: Pipeline,
    h: Harness,
    pass: () => Promise<unknown>,
    payoutId: string,
    ref: string,
  ): Promise<void> {
    await whileRecorded(pass, () => {
      expect(p.sandbox.reverse(payoutId, 'CANCELLED')).toBe(true);
      return deliver(h, { payoutId, merchantReferenceId: ref, status: 'CANCELLED' });
    });
    // The follow-up found the row recorded PAID and the event saying otherwise.
    expect((await p.row(ref)).state).toBe('PAID');
    const follow = parsedLines(h.logs).filter((l) => l['merchantReferenceId'] === ref && l['level'] !== 'debug');
    expect(follow.map((l) => l['msg'])).not.toContain('webhook accepted: no PENDING row of this payout here; nothing made due');
    expect((await p.row(ref)).serviceCheck).toBe('PAYOUT');
  }

  it('waits for the answer, then finds the row contradicted and makes a query of it owed', async () => {
    const p = await startPipeline({ database: latestSchema(schema) });
    await p.insertReadyBatch([payoutRequest('WA-1')]);
    await p.submit();
    const payoutId = (await p.row('WA-1')).payoutId as string;
    expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    p.clock.advance(p.pollerOptions.maxIntervalMs);
    await reversedWhileRecorded(p, h, () => p.poller.runPass(p.signal), payoutId, 'WA-1');

    // The poller asks, and the service's answer (CANCELLED) is noted on the row recorded PAID.
    await p.poller.runPass(p.signal);
    const row = await p.row('WA-1');
    expect(row.state).toBe('PAID');
    expect(row.serviceCheck).toBeNull();
    expect(row.serviceNote).toContain('CANCELLED');
  });

  it('a reconcile adopting the payout of a row waiting on an unknown create outcome: the same', async () => {
    const p = await startPipeline({ database: latestSchema(schema) });
    await p.insertReadyBatch([payoutRequest('WU-1')]);
    // The create reaches the service, but its answer is never recorded: at the next start the row is UNKNOWN.
    const [claimed] = await claimReadyRows(p.db, 10, p.clock.now());
    const { payoutId } = await p.client.createPayout(requestOfText(claimed!.requestValues ?? ''));
    expect(p.sandbox.settle({ payoutId }, 'PAID')).toBe(1);
    expect(await markInterruptedCreatesUnknown(p.db, p.clock.now())).toBe(1);
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    await reversedWhileRecorded(p, h, () => p.submit(), payoutId, 'WU-1');
  });

  it('an event while a reconcile records the reference absent: the row is asked again, not created again', async () => {
    const p = await startPipeline({ database: latestSchema(schema), sandbox: { duplicatePolicy: 'allow' } });
    const request = await interruptedCreate(p, 'WR-1');
    const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
    let payoutId = '';
    await whileRecorded(
      () => p.submitter.reconcileUnknown(p.signal),
      async () => {
        payoutId = await lateCreateLands(p, h, 'WR-1', request);
      },
    );
    await adoptedNotCreatedAgain(p, 'WR-1', payoutId);
  });
});

/**
 * PostgreSQL (READ COMMITTED): an operator's cancel committed while the acceptance of the batch it cancels is under
 * way. The acceptance must see the cancel, or the batch is accepted with money (accepted totals) it never sends.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { activateReadBatch } from '../../src/store/acceptance.js';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { closeDatabase, openDatabase, type Database } from '../../src/store/db.js';
import { getBatch, insertBatch, receivedBatch } from '../../src/store/index.js';
import { T0, addRows, request, setRow, validRow } from '../finance/helpers.js';
import { pgReachable, useEmptySchema, useTestSchema } from './pg.js';

/** The backend that waits on a lock `pid` holds (other tests may share the server: only these are looked at). */
async function blockedBy(db: Database, pid: number): Promise<number> {
  for (let i = 0; i < 500; i++) {
    // Asked outside the locking transaction: one sees the activity as it was when it began.
    const r = (await db.raw('select pid from pg_stat_activity where ? = any(pg_blocking_pids(pid))', [pid])) as { rows: { pid: number }[] };
    const blocked = r.rows[0]?.pid;
    if (blocked !== undefined) return blocked;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no backend waited on a lock of backend ${pid}`);
}

describe.skipIf(!pgReachable)('postgres: a cancel committed during the acceptance of its batch', () => {
  const schema = useTestSchema();
  const store = useEmptySchema(schema, { latest: true });

  it('is seen by the acceptance: the batch is accepted with no money, its rows not sent', async () => {
    const db = store.db;
    const file = {
      id: 'B1',
      fileName: 'race.csv',
      storedPath: '/claimed/B1',
      controlPath: null,
      doneMarker: false,
      sha256: 'a'.repeat(64),
      size: 1,
      mtimeMs: T0,
    };
    await insertBatch(db, {
      ...receivedBatch(file, T0),
      state: 'VALIDATING',
      delimiter: ',',
      leaseOwner: 'reader',
      leaseExpiresAt: T0 + 60_000,
    });
    await addRows(db, [validRow('B1', 2, request('RC-1')), validRow('B1', 3, request('RC-2'))]);
    for (const line of [2, 3]) await setRow(db, 'B1', line, { state: 'READY' });
    const other = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
    const locker = new pg.Client({ connectionString: schema.url });
    await locker.connect();
    try {
      // The cancel marks the batch (its row locked) and then waits to record its event: it commits only when let go.
      const lockerPid = (await locker.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      await locker.query('begin');
      await locker.query('lock table batch_events in exclusive mode');
      const cancel = cancelReadyRows(other, 'B1', 'wrong file', T0 + 1, 'ops');
      const cancelPid = await blockedBy(db, lockerPid);
      const accepted = {
        state: 'ACTIVE' as const,
        acceptedAt: T0 + 2,
        acceptedTotalsJson: JSON.stringify({ PHP: '3001' }),
        leaseOwner: null,
        leaseExpiresAt: null,
      };
      const acceptance = activateReadBatch(db, 'B1', accepted, T0 + 2, { type: 'accepted', data: { totals: { PHP: '3001' } } }, 'reader');
      // The acceptance waits on the cancel: for the batch row it updates (or, once fixed, the one it reads).
      await blockedBy(db, cancelPid);
      await locker.query('commit');
      await cancel;
      expect(await acceptance).toBe(2);
    } finally {
      await locker.end();
      await closeDatabase(other);
    }
    const batch = await getBatch(db, 'B1');
    expect(batch?.cancelledAt).toBe(T0 + 1);
    expect(JSON.parse(batch?.acceptedTotalsJson ?? 'null')).toEqual({});
    const states = (await db('payouts').where({ batch_id: 'B1' }).orderBy('line').select('state')) as { state: string }[];
    expect(states.map((r) => r.state)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
  });
});

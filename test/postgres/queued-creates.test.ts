/** PostgreSQL: claimed creates still queued when their batch is cancelled or held, or the daemon stops. */
import { afterEach, describe, it } from 'vitest';
import { migrateToLatest } from '../../src/store/db.js';
import { closePipelines } from '../pipeline/harness.js';
import * as queued from '../pipeline/queued-creates.js';
import { openEmptySchema, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('postgres: queued creates', () => {
  const schema = useTestSchema();
  afterEach(closePipelines);
  const database = async () => {
    const db = await openEmptySchema(schema);
    await migrateToLatest(db);
    return db;
  };

  it('cancel: no queued create goes out', () => queued.checkCancelStopsQueuedCreates(database), 30_000);
  it('FILE_CHANGED hold: no queued create goes out', () => queued.checkHoldStopsQueuedCreates(database), 30_000);
  it(
    'FILE_CHANGED hold: no queued create goes out, renewing fences included',
    () => queued.checkHoldStopsQueuedCreates(database, true),
    30_000,
  );
  it('stop: queued creates are put back READY', () => queued.checkStopKeepsQueuedCreates(database), 30_000);
  it(
    'queued rows whose lease ran out unrenewed are sent: nobody took them over',
    () => queued.checkQueuedPastLeaseAreSent(database),
    30_000,
  );
  it('queued rows have their leases renewed while they wait', () => queued.checkQueuedLeasesRenewed(database), 30_000);
  it('the fence past its lease: taken back unless taken over', () => queued.checkFenceAfterLease(database));
  it('the fence of a create try: batch held or cancelled, claim lost, balance hold run out', () => queued.checkFenceOfBatch(database));
});

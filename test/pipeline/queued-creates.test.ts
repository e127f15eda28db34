/** Claimed creates still queued when their batch is cancelled or held, or the daemon stops (./queued-creates.ts). */
import { afterEach, describe, it } from 'vitest';
import { closePipelines } from './harness.js';
import * as queued from './queued-creates.js';

afterEach(closePipelines);

describe('queued creates', () => {
  it(
    'cancel: no queued create goes out; the cancel counts what it made NOT_SUBMITTED and what is claimed',
    () => queued.checkCancelStopsQueuedCreates(),
    30_000,
  );
  it('FILE_CHANGED hold: no queued create goes out; they wait READY for the release', () => queued.checkHoldStopsQueuedCreates(), 30_000);
  it(
    'FILE_CHANGED hold: the queued rows whose fences renew their leases find it too',
    () => queued.checkHoldStopsQueuedCreates(undefined, true),
    30_000,
  );
  it('stop: queued creates are not sent during the grace period but put back READY', () => queued.checkStopKeepsQueuedCreates(), 30_000);
  it('queued rows whose lease ran out unrenewed are sent: nobody took them over', () => queued.checkQueuedPastLeaseAreSent(), 30_000);
  it('queued rows have their leases renewed while they wait', () => queued.checkQueuedLeasesRenewed(), 30_000);
  it('the fence past its lease: taken back unless taken over', () => queued.checkFenceAfterLease());
  it('the fence of a create try: batch held or cancelled, claim lost, balance hold run out', () => queued.checkFenceOfBatch());
});

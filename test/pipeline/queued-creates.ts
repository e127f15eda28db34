/**
 * Rows claimed for a create (CREATING, intent recorded) but still queued behind the concurrency limit when an
 * operator cancels their batch, a hold falls on it, or the daemon is told to stop: none of them may go out
 * after that. Each goes back to READY, not sent, no attempt charged; a cancel then makes it NOT_SUBMITTED,
 * a hold keeps it until release. Rows queued longer than their lease are still sent, each once, and never
 * taken for interrupted. Shared by the SQLite and PostgreSQL test files.
 */
import { expect } from 'vitest';
import type { Database } from '../../src/store/db.js';
import { cancelReadyRows, cancelReturnedRows } from '../../src/store/cancels.js';
import { claimReadyRows, fenceCreate, markInterruptedCreatesUnknown, renewClaims } from '../../src/store/claims.js';
import { holdBatch, releaseBatchHold } from '../../src/store/holds.js';
import { cancelMessage } from '../../src/cli/commands/operator.js';
import { csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

const refs = Array.from({ length: 12 }, (_, i) => `CQ-${i + 1}`);

/** With one slot, a claim takes eight rows: CQ-1 on the wire, CQ-2..CQ-8 queued, CQ-9..CQ-12 READY. */
const QUEUED = refs.slice(1, 8);
const UNCLAIMED = refs.slice(8);

/** A pipeline with one slot and a slow service, its 12-row batch received. */
async function slowPipeline(database?: (dir: string) => Promise<Database>, latencyMs = 400): Promise<{ p: Pipeline; batchId: string }> {
  const p = await startPipeline({ sandbox: { faults: { latencyMs } }, submitter: { concurrency: 1 }, database });
  const batch = await p.receive('queued.csv', csvFile(refs.map((r) => csvRow(r))));
  return { p, batchId: batch.id };
}

/** Only CQ-1 reached the service; every queued row is READY again, not sent, its attempt given back. */
async function expectOnlyFirstSent(p: Pipeline): Promise<void> {
  expect(p.createRequests()).toBe(1);
  expect(refs.filter((r) => p.ledgerCount(r) > 0)).toEqual(['CQ-1']);
  expect((await p.row('CQ-1')).state).toBe('PENDING');
  for (const ref of QUEUED) {
    const row = await p.row(ref);
    expect({ ref, state: row.state, createAttempts: row.createAttempts }).toEqual({ ref, state: 'READY', createAttempts: 0 });
    expect(await p.events(ref)).toEqual(['intent', 'not-sent']);
  }
}

export async function checkCancelStopsQueuedCreates(database?: (dir: string) => Promise<Database>): Promise<void> {
  const { p, batchId } = await slowPipeline(database);
  const pass = p.submit();
  await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');

  const done = await cancelReadyRows(p.db, batchId, 'cancelled by an operator: wrong file', p.clock.now());
  expect(done).toEqual({ notSubmitted: UNCLAIMED.length, claimed: 1 + QUEUED.length, unknown: 0 });
  // The clock stands still: CQ-1's fence found the batch sendable this very instant, and that look is not trusted.
  const said = cancelMessage(batchId, done);
  expect(said).toContain('4 row(s) not yet sent are now NOT_SUBMITTED');
  expect(said).toContain('8 row(s) were claimed for sending and may already be on the wire');
  await pass;
  await expectOnlyFirstSent(p);
  expect(p.logLines.filter((l) => l.includes('its batch was cancelled or held before the create was sent'))).toHaveLength(QUEUED.length);

  // The finish pass ends them as the cancel said; nothing more is sent.
  expect(await cancelReturnedRows(p.db, p.clock.now())).toBe(QUEUED.length);
  expect((await p.states(batchId)).slice(1)).toEqual(refs.slice(1).map(() => 'NOT_SUBMITTED'));
  await p.submit();
  expect(p.createRequests()).toBe(1);
}

/**
 * The hold falls while the first create is on the wire, the clock standing still (the queued rows' fences read),
 * or with the queued rows' leases past half (their fences renew): either way they find the batch held.
 */
export async function checkHoldStopsQueuedCreates(database?: (dir: string) => Promise<Database>, leasePastHalf = false): Promise<void> {
  const { p, batchId } = await slowPipeline(database);
  const pass = p.submit();
  await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');
  if (leasePastHalf) p.clock.advance(p.submitterOptions.claimant.leaseMs / 2 + 1);

  await holdBatch(p.db, batchId, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, p.clock.now());
  await pass;
  await expectOnlyFirstSent(p);
  for (const ref of UNCLAIMED) expect((await p.row(ref)).state).toBe('READY');

  // Held: nothing more goes out until an operator releases it; then every row is paid once.
  await p.submit();
  expect(p.createRequests()).toBe(1);
  p.sandbox.setFaults({ latencyMs: 0 });
  await releaseBatchHold(p.db, batchId, p.clock.now());
  await p.submit();
  expect(refs.map((r) => p.ledgerCount(r))).toEqual(refs.map(() => 1));
  expect(await p.events('CQ-2')).toEqual(['intent', 'not-sent', 'intent', 'created']);
}

/** The daemon's stop (not yet the grace's abort of calls in flight): the create on the wire ends, queued ones stay. */
export async function checkStopKeepsQueuedCreates(database?: (dir: string) => Promise<Database>): Promise<void> {
  const { p } = await slowPipeline(database, 1500);
  const stop = new AbortController();
  const calls = new AbortController();
  const pass = p.submitter.runOnce(stop.signal, calls.signal);
  await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');

  stop.abort(new Error('stopping'));
  // Put back at once, while the create on the wire is still out (not after its answer, nor the grace).
  await waitFor(
    async () => (await Promise.all(QUEUED.map(async (r) => (await p.row(r)).state))).every((s) => s === 'READY'),
    'queued rows READY',
  );
  expect((await p.row('CQ-1')).state).toBe('CREATING');
  await pass;
  await expectOnlyFirstSent(p);
  expect(p.logLines.filter((l) => l.includes('create outcome unknown'))).toEqual([]);
}

/** The fence itself, on both of its paths (a read while the lease is fresh, a renewal past its half). */
export async function checkFenceOfBatch(database?: (dir: string) => Promise<Database>): Promise<void> {
  const p = await startPipeline({ database });
  const batch = await p.receive('fenced.csv', csvFile([csvRow('CF-1')]));
  const claimant = p.submitterOptions.claimant;
  const [row] = await claimReadyRows(p.db, 1, p.clock.now(), claimant);
  if (row === undefined) throw new Error('nothing claimed');
  const leaseOf = async (): Promise<number | null> => (await p.row('CF-1')).leaseExpiresAt;
  const claimedUntil = await leaseOf();
  const now = p.clock.now();
  expect(await fenceCreate(p.db, row, now, claimant, false)).toBe('sending');
  expect(await fenceCreate(p.db, row, now, { ...claimant, instanceId: 'other' }, false)).toBe('lost');

  await holdBatch(p.db, batch.id, { code: 'FILE_CHANGED', reason: 'changed after the claim', until: null }, now);
  expect(await fenceCreate(p.db, row, now, claimant, false)).toBe('unsendable');
  expect(await fenceCreate(p.db, row, now + 1000, claimant, true)).toBe('unsendable');
  expect(await leaseOf()).toBe(claimedUntil);
  expect(await fenceCreate(p.db, row, now + 1000, { ...claimant, instanceId: 'other' }, true)).toBe('lost');

  // A balance hold whose time has come lets rows go, as it does for a claim.
  await releaseBatchHold(p.db, batch.id, now);
  await holdBatch(p.db, batch.id, { code: 'INSUFFICIENT_BALANCE', reason: 'low balance', until: now + 500 }, now);
  expect(await fenceCreate(p.db, row, now + 1000, claimant, true)).toBe('sending');
  expect(await leaseOf()).toBe(now + 1000 + claimant.leaseMs);
  await cancelReadyRows(p.db, batch.id, 'cancelled by an operator: test', now);
  expect(await fenceCreate(p.db, row, now + 2000, claimant, true)).toBe('unsendable');
}

/** Every row created once, its history only its claim and its create; nothing left for a takeover. */
async function expectAllSentOnce(p: Pipeline): Promise<void> {
  expect(refs.map((r) => p.ledgerCount(r))).toEqual(refs.map(() => 1));
  expect(p.createRequests()).toBe(refs.length);
  for (const ref of refs) expect({ ref, events: await p.events(ref) }).toEqual({ ref, events: ['intent', 'created'] });
  expect(p.logLines.filter((l) => l.includes('create not sent: the claim on its row ended'))).toEqual([]);
  expect(await markInterruptedCreatesUnknown(p.db, p.clock.now(), false)).toBe(0);
}

/**
 * Queued rows whose lease ran out while they waited for the one slot (no renewal came in time: it ticks every
 * third of the lease). Nobody took them over, so each fence takes its lease back and the create goes out.
 * Before, each was left CREATING as "the claim on its row ran out", then taken over as interrupted by the next
 * pass: UNKNOWN though never sent, and queried before anything else was sent.
 */
export async function checkQueuedPastLeaseAreSent(database?: (dir: string) => Promise<Database>): Promise<void> {
  const { p } = await slowPipeline(database);
  const { leaseMs } = p.submitterOptions.claimant;
  const pass = p.submit();
  await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');
  p.clock.advance(leaseMs + 1);
  p.sandbox.setFaults({ latencyMs: 0 });
  await pass;
  await expectAllSentOnce(p);
  for (const ref of QUEUED) expect((await p.row(ref)).leaseExpiresAt).toBeGreaterThan(p.clock.now());
  await p.submit();
  expect(p.createRequests()).toBe(refs.length);
}

/**
 * While rows wait for a slot their leases are renewed in the database, so another instance's pass never takes
 * them over as interrupted though none was sent. A short lease: the renewal ticks each second of real time.
 */
export async function checkQueuedLeasesRenewed(database?: (dir: string) => Promise<Database>): Promise<void> {
  const leaseMs = 3000;
  const p = await startPipeline({
    sandbox: { faults: { latencyMs: 2500 } },
    submitter: { concurrency: 1, claimant: { instanceId: 'test', leaseMs } },
    database,
  });
  await p.receive('queued.csv', csvFile(refs.map((r) => csvRow(r))));
  const pass = p.submit();
  await waitFor(() => p.createRequests() >= 1, 'the first create on the wire');
  p.clock.advance(leaseMs + 1);
  const renewed = async (): Promise<boolean> =>
    (await Promise.all(QUEUED.map(async (r) => (await p.row(r)).leaseExpiresAt ?? 0))).every((at) => at > p.clock.now());
  await waitFor(renewed, 'the leases of the queued rows renewed', 2000);
  p.sandbox.setFaults({ latencyMs: 0 });
  await pass;
  await expectAllSentOnce(p);
}

/**
 * The fence past the end of its lease: a read refuses (a takeover could come between it and the send), a
 * renewal takes the row back while it is still this claim's, and finds it lost once taken over, another's,
 * or another attempt's. The renewal of waiting rows keeps the same terms.
 */
export async function checkFenceAfterLease(database?: (dir: string) => Promise<Database>): Promise<void> {
  const p = await startPipeline({ database });
  await p.receive('fenced.csv', csvFile([csvRow('CF-1'), csvRow('CF-2')]));
  const claimant = p.submitterOptions.claimant;
  const [one, two] = await claimReadyRows(p.db, 2, p.clock.now(), claimant);
  if (one === undefined || two === undefined) throw new Error('not claimed');
  const late = p.clock.now() + claimant.leaseMs + 1;
  expect(await fenceCreate(p.db, one, late, claimant, false)).toBe('lost');
  expect(await fenceCreate(p.db, one, late, claimant, true)).toBe('sending');
  expect((await p.row('CF-1')).leaseExpiresAt).toBe(late + claimant.leaseMs);

  // The takeover comes first for CF-2 only (CF-1 holds a fresh lease again): CF-2's renewal then finds it lost.
  expect(await markInterruptedCreatesUnknown(p.db, late, false)).toBe(1);
  expect(await fenceCreate(p.db, two, late, claimant, true)).toBe('lost');
  expect((await p.row('CF-2')).state).toBe('UNKNOWN');

  const later = late + 2 * claimant.leaseMs;
  expect(await fenceCreate(p.db, one, later, { ...claimant, instanceId: 'other' }, true)).toBe('lost');
  expect(await fenceCreate(p.db, { ...one, createAttempts: one.createAttempts + 1 }, later, claimant, true)).toBe('lost');
  expect(await renewClaims(p.db, [one, two], later, claimant)).toEqual([one.id]);
  expect(await renewClaims(p.db, [one], later, { ...claimant, instanceId: 'other' })).toEqual([]);
  expect((await p.row('CF-1')).leaseExpiresAt).toBe(later + claimant.leaseMs);
  expect(await markInterruptedCreatesUnknown(p.db, later, false)).toBe(0);
}

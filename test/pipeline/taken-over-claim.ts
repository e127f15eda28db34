/**
 * Two instances on one database: instance A claims a row, its create waits (a stall, a rate-limit pause) past
 * the row's lease, instance B takes the row over, finds the reference absent and claims it again, its create
 * on the wire. Only then does A's outcome come: a stop, a call abandoned, or the answer of a create that passed
 * its fence before the takeover. The state alone (CREATING) cannot tell B's claim from A's: A's outcome must be
 * refused, or it would undo B's claim and B's answer would be lost (a stop or an abandoned call put the row
 * back READY, and it was created again: two payouts, one of them named nowhere in the database). A payout A's
 * create made is not B's to ignore either: the row is asked about by reference before anything else is sent.
 * Shared by the SQLite and PostgreSQL test files.
 */
import { expect } from 'vitest';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { gate, payoutRequest, serviceLike, waitFor, type Pipeline } from './harness.js';

/** How A's create ends after B claimed its row again. */
export type LateOutcome = 'stopped' | 'abandoned' | 'created';

const LEASE_MS = 120_000;

/** Runs the scenario for `how` on `p` (its sandbox creating a second payout for a repeated reference). */
export async function lateOutcomeAfterTakeover(p: Pipeline, how: LateOutcome): Promise<void> {
  const ref = `REF-TAKEN-${how}`;
  const deps = { db: p.db, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 };
  // A's create waits before it goes out. `created`: it passed its fence before the takeover and reaches the
  // service only after B claimed the row again (its trail, the fence, already behind it).
  const aWait = gate();
  const a = new PayoutSubmitter(
    {
      ...deps,
      service: serviceLike(p.client, {
        async createPayout(req, signal, trail) {
          await aWait.at();
          return p.client.createPayout(req, signal, how === 'created' ? {} : trail);
        },
      }),
    },
    { ...p.submitterOptions, claimant: { instanceId: 'A', leaseMs: LEASE_MS } },
  );
  // B's create reaches the service; its answer is held until A's outcome is recorded.
  const bAnswer = gate();
  const b = new PayoutSubmitter(
    {
      ...deps,
      service: serviceLike(p.client, {
        async createPayout(...args) {
          const created = await p.client.createPayout(...args);
          await bAnswer.at();
          return created;
        },
      }),
    },
    { ...p.submitterOptions, claimant: { instanceId: 'B', leaseMs: LEASE_MS } },
  );
  await p.insertReadyBatch([payoutRequest(ref)]);

  const aStop = new AbortController();
  const aCalls = new AbortController();
  const aPass = a.runOnce(aStop.signal, aCalls.signal);
  await waitFor(aWait.reached, "A's create waiting");

  // A's lease runs out; B takes the row over, finds the reference absent and sends its own create.
  p.clock.advance(LEASE_MS + 1);
  const bPass = b.runOnce(p.signal);
  await waitFor(() => bAnswer.reached(), "B's create answered");
  expect(await p.row(ref)).toMatchObject({ state: 'CREATING', leaseOwner: 'B' });
  expect(p.ledgerCount(ref)).toBe(1);

  // Only now does A's create end.
  if (how !== 'created') aStop.abort();
  if (how === 'abandoned') aCalls.abort();
  aWait.open();
  await aPass;
  bAnswer.open();
  await bPass;
  // Another pass of B: nothing to send, or (`created`) the reconcile of the row A's payout made UNKNOWN.
  await b.runOnce(p.signal);

  const row = await p.row(ref);
  const payouts = p.sandbox
    .ledger()
    .filter((e) => e.merchantReferenceId === ref)
    .map((e) => e.payoutId);
  const events = await p.events(ref);
  if (how === 'created') {
    // A's payout came while B's create was on the wire: the row was made UNKNOWN (B's answer refused in turn), and
    // the reference's query found both payouts: one adopted, a query of the reference owed to tell finance.
    expect(payouts).toHaveLength(2);
    expect(row).toMatchObject({ state: 'PENDING', serviceCheck: 'REFERENCE' });
    expect(payouts).toContain(row.payoutId);
    expect(events).toEqual([
      'intent',
      'interrupted',
      'reconciled-absent',
      'intent',
      'created-after-takeover',
      'created-after-takeover',
      'reconciled-found',
    ]);
    const history = (await p.db('payout_history').where({ payout_row_id: row.id, event: 'created-after-takeover' }).select('detail')) as {
      detail: string;
    }[];
    expect(history.map((h) => /payoutId (\S+),/.exec(h.detail)?.[1])).toEqual(payouts.slice().reverse());
  } else {
    expect(row).toMatchObject({ state: 'PENDING', payoutId: payouts[0], leaseOwner: 'B' });
    expect(payouts).toHaveLength(1);
    expect(events).toEqual(['intent', 'interrupted', 'reconciled-absent', 'intent', 'created']);
    expect(
      p.logLines.filter((l) => l.includes('the claim on this row ended before its outcome; the outcome is left to its holder')),
    ).toHaveLength(1);
  }
}

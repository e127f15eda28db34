/**
 * Two instances on one database: instance A's create makes payout X, but A records its answer only after its
 * lease ran out and instance B took the row over. How A's refused `created` is written down and told of depends
 * on where the row stands then:
 * - `queried`: B is still querying the reference. Its answer may be older than X and is not taken; the next query
 *   finds X and adopts it. One payout: X is noted in the history, told of at info, never warned of.
 * - `followed-other`: B found the reference absent, created payout Y and recorded it. Two payouts: X is in the
 *   history only, and warned of.
 * Shared by the SQLite and PostgreSQL test files.
 */
import { expect } from 'vitest';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { gate, payoutRequest, serviceLike, waitFor, type Pipeline } from './harness.js';

/** Where B stands with the row when A's answer is recorded. */
export type LateNote = 'queried' | 'followed-other';

const LEASE_MS = 120_000;
const HISTORY_ONLY = 'as the service may hold a payout of it besides';
const ADOPTED = 'payout created after its claim on the row ended; a query of the reference adopts what it made';

/** Runs the scenario `how` on `p` (its sandbox creating a second payout for a repeated reference). */
export async function lateCreatedNote(p: Pipeline, how: LateNote): Promise<void> {
  const ref = `REF-LATE-${how}`;
  const deps = { db: p.db, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds, random: () => 0.5 };
  // `queried`: A's create reaches the service, its answer held. `followed-other`: A's create passed its fence and
  // is held before it reaches the service (its trail, the fence, already behind it), so B finds the reference absent.
  const aGate = gate();
  const a = new PayoutSubmitter(
    {
      ...deps,
      service: serviceLike(p.client, {
        async createPayout(req, signal, trail) {
          if (how === 'queried') {
            const created = await p.client.createPayout(req, signal, trail);
            await aGate.at();
            return created;
          }
          await aGate.at();
          return p.client.createPayout(req, signal, {});
        },
      }),
    },
    { ...p.submitterOptions, claimant: { instanceId: 'A', leaseMs: LEASE_MS } },
  );
  // B's query of the reference is answered, its answer held until A's is recorded.
  const bQuery = gate();
  const b = new PayoutSubmitter(
    {
      ...deps,
      service: serviceLike(p.client, {
        async queryByReferences(...args) {
          const found = await p.client.queryByReferences(...args);
          if (how === 'queried') await bQuery.at();
          return found;
        },
      }),
    },
    { ...p.submitterOptions, claimant: { instanceId: 'B', leaseMs: LEASE_MS } },
  );
  await p.insertReadyBatch([payoutRequest(ref)]);

  const aPass = a.runOnce(p.signal);
  await waitFor(aGate.reached, "A's create held");
  p.clock.advance(LEASE_MS + 1);
  const bPass = b.runOnce(p.signal);
  if (how === 'queried') await waitFor(bQuery.reached, "B's query of the reference answered");
  else await bPass;

  aGate.open();
  await aPass;
  bQuery.open();
  await bPass;
  // `queried`: B's answer may be older than A's payout and is not taken; the next reconcile asks again.
  if (how === 'queried') await b.runOnce(p.signal);

  const ledger = p.sandbox
    .ledger()
    .filter((e) => e.merchantReferenceId === ref)
    .map((e) => e.payoutId);
  const row = await p.row(ref);
  const notes = (await p.db('payout_history').where({ payout_row_id: row.id, event: 'created-after-takeover' }).select('detail')) as {
    detail: string;
  }[];
  const historyOnly = p.logLines.filter((l) => l.includes(HISTORY_ONLY));
  if (how === 'queried') {
    const [x] = ledger;
    expect(ledger).toHaveLength(1);
    expect(row).toMatchObject({ state: 'PENDING', payoutId: x });
    expect(await p.events(ref)).toEqual(['intent', 'interrupted', 'created-after-takeover', 'reconciled-found']);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.detail).toContain(`payoutId ${x}`);
    expect(notes[0]?.detail).not.toContain('follows another outcome');
    expect(historyOnly).toEqual([]);
    expect(p.logLines.filter((l) => l.includes(ADOPTED) && l.includes('"level":"info"') && l.includes(String(x)))).toHaveLength(1);
  } else {
    // B's payout came first; A's, made after, is the second.
    const [y, x] = ledger;
    expect(ledger).toHaveLength(2);
    expect(row).toMatchObject({ state: 'PENDING', payoutId: y, leaseOwner: 'B', serviceCheck: 'REFERENCE' });
    expect(await p.events(ref)).toEqual(['intent', 'interrupted', 'reconciled-absent', 'intent', 'created', 'created-after-takeover']);
    expect(notes).toHaveLength(1);
    expect(notes[0]?.detail).toContain(`payoutId ${x}`);
    expect(notes[0]?.detail).toContain('the row follows another outcome');
    expect(historyOnly.filter((l) => l.includes('"level":"warn"') && l.includes(String(x)))).toHaveLength(1);
  }
}

/**
 * A claim that fails mid-pass (a dropped connection, here a trigger refusing one row's claim) must not leave the
 * rows claimed before it waiting for a slot: the pass ends, their leases are no longer renewed, and the next
 * pass's takeover would make them UNKNOWN though none was sent. They are put back READY, not sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { closePipelines, gate, payoutRequest, serviceLike, startPipeline, waitFor } from './harness.js';

describe('a claim failing in the middle of a pass', () => {
  afterEach(closePipelines);

  it('puts the rows still waiting back READY, not sent, and the creates out are recorded', async () => {
    // Concurrency 2: the first claim takes 16 rows; once one row waits behind the two slots, the pass claims
    // again, and that claim takes row 17, which the trigger refuses.
    const p = await startPipeline({ submitter: { concurrency: 2 } });
    const refs = Array.from({ length: 17 }, (_, i) => `REF-FC-${i + 1}`);
    await p.insertReadyBatch(refs.map((r) => payoutRequest(r)));
    await p.db.raw(
      `CREATE TRIGGER refuse_claim BEFORE UPDATE OF state ON payouts
       WHEN NEW.state = 'CREATING' AND NEW.merchant_reference_id = 'REF-FC-17'
       BEGIN SELECT RAISE(ABORT, 'claim refused by the test'); END`,
    );
    // Rows 14 and 15 are held in their slots, so row 16 is the one waiting when the second claim fails.
    const held = gate();
    const submitter = new PayoutSubmitter(
      {
        db: p.db,
        clock: p.clock,
        monotonic: p.monotonic,
        logger: p.logger,
        holds: p.holds,
        random: () => 0.5,
        service: serviceLike(p.client, {
          async createPayout(req, signal, trail) {
            if (req.merchantReferenceId === 'REF-FC-14' || req.merchantReferenceId === 'REF-FC-15') await held.at();
            return p.client.createPayout(req, signal, trail);
          },
        }),
      },
      p.submitterOptions,
    );
    const pass = submitter.runOnce(p.signal).then(
      () => null,
      (err: unknown) => err,
    );
    // By its history, not its state: before the pass claims it the row is READY too.
    await waitFor(async () => (await p.events('REF-FC-16')).includes('not-sent'), 'the waiting row put back', 10_000);
    held.open();
    expect(String(await pass)).toContain('claim refused by the test');

    expect(await p.row('REF-FC-16')).toMatchObject({ state: 'READY', createAttempts: 0 });
    expect(await p.events('REF-FC-16')).toEqual(['intent', 'not-sent']);
    for (const ref of refs.slice(0, 15)) expect((await p.row(ref)).state).toBe('PENDING');
    expect((await p.row('REF-FC-17')).state).toBe('READY');
    expect(p.sandbox.ledger()).toHaveLength(15);

    // The next pass sends the two rows left.
    await p.db.raw('DROP TRIGGER refuse_claim');
    await submitter.runOnce(p.signal);
    expect(await p.events('REF-FC-16')).toEqual(['intent', 'not-sent', 'intent', 'created']);
    expect(p.sandbox.ledger()).toHaveLength(17);
  });
});

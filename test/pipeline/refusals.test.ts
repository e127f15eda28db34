/**
 * What the service refuses: final business rejections (2002, 2003, 2005)
 * end the row as REJECTED and are never retried; INSUFFICIENT_BALANCE (2001)
 * holds the batch and resumes it after a top-up without skipping or
 * doubling a row; DUPLICATE_REFERENCE (2004) is resolved by query.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { PayoutService } from '../../src/domain/payout.js';
import { holdBatch, releaseBatchHold } from '../../src/store/holds.js';
import { PayoutSubmitter } from '../../src/submit/index.js';
import { closePipelines, csvFile, csvRow, payoutRequest, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: business rejections', () => {
  it('2002 / 2003 / 2005 make the row REJECTED with code and message, and it is never sent again', async () => {
    const p = await startPipeline();
    const batchId = await p.insertReadyBatch([
      payoutRequest('BR-OK'),
      payoutRequest('BR-2002', { sender: { ...payoutRequest('x').sender, country: 'PHL' } }),
      payoutRequest('BR-2003', { payoutCurrency: 'JPY' }),
      payoutRequest('BR-2005', { payoutAmount: '100000000' }), // ~1.78 million USDT: above the service's maximum
    ]);
    await p.submit();
    expect(await p.states(batchId)).toEqual(['PENDING', 'REJECTED', 'REJECTED', 'REJECTED']);

    const r2002 = await p.row('BR-2002');
    expect(r2002.reasonCode).toBe('2002');
    expect(r2002.reason).toContain('sender.country');
    const r2003 = await p.row('BR-2003');
    expect(r2003.reasonCode).toBe('2003');
    expect(r2003.reason).toContain('JPY');
    const r2005 = await p.row('BR-2005');
    expect(r2005.reasonCode).toBe('2005');
    expect(r2005.reason).toContain('100000000');
    for (const ref of ['BR-2002', 'BR-2003', 'BR-2005']) {
      expect(await p.events(ref)).toEqual(['intent', 'create-rejected']);
      expect(p.ledgerCount(ref)).toBe(0);
    }
    expect(p.createRequests()).toBe(4);

    // Time passes, passes run: a final rejection is final.
    for (let i = 0; i < 3; i++) {
      p.clock.advance(3_600_000);
      await p.submit();
    }
    expect(p.createRequests()).toBe(4);
    expect(await p.states(batchId)).toEqual(['PENDING', 'REJECTED', 'REJECTED', 'REJECTED']);
    expect(p.sandbox.stats().businessErrors).toEqual({ '2002': 1, '2003': 1, '2005': 1 });
  });

  it('2004 DUPLICATE_REFERENCE (duplicatePolicy reject) is resolved by query and the existing payout adopted', async () => {
    const p = await startPipeline({ sandbox: { duplicatePolicy: 'reject' } });
    const request = payoutRequest('DR-1');
    await p.insertReadyBatch([request]);
    // Someone else (another process sharing the reference space) created it first.
    const existing = await p.client.createPayout(request);
    // The 2004 makes the row UNKNOWN; the query beside the sending adopts the payout within the pass.
    await p.submit();
    const row = await p.row('DR-1');
    expect(row.reasonCode).toBeNull();
    expect(row.state).toBe('PENDING');
    expect(row.payoutId).toBe(existing.payoutId);
    expect(p.ledgerCount('DR-1')).toBe(1);
    expect(await p.events('DR-1')).toEqual(['intent', 'create-unknown', 'reconciled-found']);
  });
});

describe('pipeline: INSUFFICIENT_BALANCE mid-batch', () => {
  // 562.5 PHP at 56.25 = 10 USDT, plus the 0.5 fee: each row costs 10.5 USDT.
  const REFS = ['IB-1', 'IB-2', 'IB-3', 'IB-4', 'IB-5'];
  const file = csvFile(REFS.map((r) => csvRow(r, { payoutAmount: '562.50' })));

  it('holds the batch when the balance runs out, resumes after a top-up: every row once, none skipped', async () => {
    const hold = 60_000;
    const p = await startPipeline({ balance: '31.5', submitter: { concurrency: 1, insufficientBalanceHoldMs: hold } });
    const batch = await p.receive('balance.csv', file);
    expect(batch.state).toBe('ACTIVE');
    const t0 = p.clock.now();
    await p.submit();

    const rows = await p.rows(batch.id);
    expect(rows.map((r) => r.state)).toEqual(['PENDING', 'PENDING', 'PENDING', 'READY', 'READY']);
    expect(p.sandbox.balances('M001')).toEqual({ USDT: '0' });
    expect(rows[3]?.nextAttemptAt).toBe(t0 + hold);
    expect(await p.events('IB-4')).toEqual(['intent', 'create-deferred']);
    // IB-5 may already have been claimed while IB-4 was on the wire (claims run ahead of the
    // concurrency limit); then it met 2001 too. Either way it is READY and was never created.
    expect([[], ['intent', 'create-deferred']]).toContainEqual(await p.events('IB-5'));
    const sentBeforeHold = p.createRequests();
    expect([4, 5]).toContain(sentBeforeHold);
    const held = await p.batch(batch.id);
    expect(held.holdCode).toBe('INSUFFICIENT_BALANCE');
    expect(held.holdUntil).toBe(t0 + hold);
    expect(held.holdReason).toContain('USDT');
    expect(p.sandbox.stats().businessErrors['2001']).toBe(sentBeforeHold - 3);

    // Held: nothing is tried before hold_until, even after a top-up.
    p.sandbox.setBalance('M001', 'USDT', '100');
    p.clock.advance(hold - 1);
    expect(await p.submit()).toBe(0);
    expect(p.createRequests()).toBe(sentBeforeHold);

    p.clock.advance(1);
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING', 'PENDING']);
    for (const ref of REFS) expect(p.ledgerCount(ref)).toBe(1);
    expect(p.sandbox.stats().creates).toBe(5);
    expect(p.createRequests()).toBe(sentBeforeHold + 2);
    expect(await p.events('IB-4')).toEqual(['intent', 'create-deferred', 'intent', 'created']);
  });

  it('an operator release (hold cleared) resumes the batch before hold_until; deferred rows keep their own time', async () => {
    const p = await startPipeline({ balance: '10.5', submitter: { concurrency: 1 } });
    const batch = await p.receive('release.csv', file);
    await p.submit();
    const first = await p.rows(batch.id);
    expect(first.map((r) => r.state)).toEqual(['PENDING', 'READY', 'READY', 'READY', 'READY']);
    const deferred = new Set<string>();
    for (const r of first) if ((await p.events(r.merchantReferenceId)).includes('create-deferred')) deferred.add(r.merchantReferenceId);
    expect(deferred.has('IB-2')).toBe(true);

    p.sandbox.setBalance('M001', 'USDT', '1000');
    await releaseBatchHold(p.db, batch.id, p.clock.now());
    await p.submit();
    const second = await p.rows(batch.id);
    // Rows that met 2001 wait for their own nextAttemptAt; the rest of the batch goes ahead now.
    expect(second.map((r) => r.state)).toEqual(
      second.map((r, i) => (i === 0 || !deferred.has(r.merchantReferenceId) ? 'PENDING' : 'READY')),
    );

    p.clock.advance(p.submitterOptions.insufficientBalanceHoldMs);
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['PENDING', 'PENDING', 'PENDING', 'PENDING', 'PENDING']);
    for (const ref of REFS) expect(p.ledgerCount(ref)).toBe(1);
    expect(p.sandbox.stats().creates).toBe(5);
  });
});

describe('pipeline: hold decisions at intake', () => {
  // Holds are decided while the batch is not yet claimable: a create must not slip out of a batch
  // that is about to be held (FILE_CHANGED says "NONE will be paid"). Simulated deterministically:
  // the submit pass runs while the balance check is in progress.
  it('sends no create for a batch whose hold is still being decided', async () => {
    const p = await startPipeline({
      checkBalance: async () => {
        await p.submit(); // the submit loop's pass, concurrent with the intake
        return { ok: false, reason: 'insufficient balance: needs about 1000 USDT, 10 available' };
      },
    });
    const batch = await p.receive('held.csv', csvFile([csvRow('HD-1'), csvRow('HD-2')]));
    expect((await p.batch(batch.id)).holdCode).toBe('INSUFFICIENT_BALANCE');
    expect(p.sandbox.ledger()).toEqual([]);
  });

  it('a batch held FILE_CHANGED at intake is never claimed', async () => {
    const p = await startPipeline();
    const claimed = await p.claim('changed.csv', csvFile([csvRow('FC-1')]));
    // The upload went on after the claim: the stored file no longer matches what was claimed.
    const batch = await p.intake.receive({ ...claimed, mtimeMs: claimed.mtimeMs - 5000 });
    expect(batch.state).toBe('ACTIVE');
    expect(batch.holdCode).toBe('FILE_CHANGED');
    p.clock.advance(86_400_000);
    await p.submit();
    expect(await p.states(batch.id)).toEqual(['READY']);
    expect(p.createRequests()).toBe(0);
  });

  // A 2001 answered to a create already on the wire must not replace an indefinite FILE_CHANGED hold
  // with a timed balance hold: that batch waits for an operator.
  it('a balance refusal never replaces a FILE_CHANGED hold', async () => {
    const p = await startPipeline({ balance: '0', submitter: { concurrency: 1 } });
    let batchId = '';
    const service: PayoutService = {
      createPayout: async (req, signal) => {
        try {
          return await p.client.createPayout(req, signal);
        } finally {
          // Meanwhile the intake found that the upload went on after the claim.
          await holdBatch(p.db, batchId, { code: 'FILE_CHANGED', reason: 'modified after the claim', until: null }, p.clock.now());
        }
      },
      queryByReferences: (ids, s) => p.client.queryByReferences(ids, s),
      queryByPayoutIds: (ids, s) => p.client.queryByPayoutIds(ids, s),
      balances: (s) => p.client.balances(s),
      exchangeRates: (c, s) => p.client.exchangeRates(c, s),
    };
    const submitter = new PayoutSubmitter(
      { db: p.db, service, clock: p.clock, monotonic: p.monotonic, logger: p.logger, holds: p.holds },
      { ...p.submitterOptions, concurrency: 1 },
    );
    batchId = await p.insertReadyBatch([payoutRequest('FH-1'), payoutRequest('FH-2'), payoutRequest('FH-3')]);
    await submitter.runOnce(p.signal);
    expect((await p.batch(batchId)).holdCode).toBe('FILE_CHANGED');

    p.sandbox.setBalance('M001', 'USDT', '1000');
    p.clock.advance(86_400_000);
    await p.submit();
    expect(p.sandbox.ledger()).toEqual([]);
  });
});

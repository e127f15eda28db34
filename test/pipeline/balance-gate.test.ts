/**
 * The balance check counts what a payout really costs: the amount at the indicative rate, a buffer, and a fee
 * per payout (configured per coin, or the largest fee of recent payouts in that coin). A fee charged in
 * another currency is named and left out, a coin without a rate is left to its creates while the others are
 * still checked, and creates refused together for the balance tell of the hold once.
 * The real sandbox (fee 0.5 USDT per payout, PHP at 56.25) over HTTP, a real SQLite file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { BalanceGate } from '../../src/holds/index.js';
import { checkLearnedFee, checkRefusedOnce, fortyRows, gateOf, logged, payTwo } from './balance-checks.js';
import { closePipelines, csvFile, csvRow, payoutRequest, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('balance check: fees', () => {
  it('counts the configured fee per payout: 40 rows of 10 PHP against 10 USDT are held, none sent; a top-up lets them go', async () => {
    // The intake's holds call the gate, which needs the pipeline's client and store.
    const made: { gate?: BalanceGate } = {};
    const p = await startPipeline({ balance: '10', checkBalance: (id, s, r) => (made.gate as BalanceGate).check(id, s, r) });
    made.gate = gateOf(p, { feePerPayout: { USDT: '0.5' } });
    const file = csvFile(Array.from({ length: 40 }, (_, i) => csvRow(`FEE-${i + 1}`, { payoutAmount: '10' })));
    const batch = await p.receive('fees.csv', file);

    const held = await p.batch(batch.id);
    expect(held.holdCode).toBe('INSUFFICIENT_BALANCE');
    expect(held.holdReason).toBe(
      'insufficient balance: needs about 27.26 USDT, 10 available (7.12 for the amounts at the indicative rates + 0.15 buffer (2%) + 20 for 40 fees of 0.5 (batch.balanceCheck.feePerPayout))',
    );
    await p.submit();
    expect(p.createRequests()).toBe(0);

    // Enough for the amounts and the fees: the recheck lets the batch go and every row is paid once.
    p.sandbox.setBalance('M001', 'USDT', '30');
    p.clock.advance(60_000);
    await p.holds.reviewDue();
    expect((await p.batch(batch.id)).holdCode).toBeNull();
    await p.submit();
    expect(new Set(await p.states(batch.id))).toEqual(new Set(['PENDING']));
    expect(p.sandbox.stats().creates).toBe(40);
    expect(p.sandbox.balances('M001')).toEqual({ USDT: '2.88888' });
  });

  it('without a configured fee, counts the largest fee of recent payouts in that coin', () => checkLearnedFee(startPipeline));

  it('a fee charged in another currency is named and not added to the coin; with no fee known it says so', async () => {
    const p = await startPipeline();
    const early = await payTwo(p);
    // A service that charges its fees in EUR: 3 EUR cannot be added to USDT without a rate.
    await p.db('payouts').where({ batch_id: early }).update({ total_fee: '3', fee_currency: 'EUR' });
    p.sandbox.setBalance('M001', 'USDT', '5');
    const batchId = await p.insertReadyBatch(fortyRows('EUR'));

    expect((await gateOf(p).check(batchId)).reason).toBe(
      'insufficient balance: needs about 7.26 USDT, 5 available (7.12 for the amounts at the indicative rates + 0.15 buffer (2%) + no fees (none known for USDT: set batch.balanceCheck.feePerPayout.USDT); fees charged in EUR not counted)',
    );
    expect((await gateOf(p, { feePerPayout: { USDT: '0.5' } }).check(batchId)).reason).toBe(
      'insufficient balance: needs about 27.26 USDT, 5 available (7.12 for the amounts at the indicative rates + 0.15 buffer (2%) + 20 for 40 fees of 0.5 (batch.balanceCheck.feePerPayout); fees charged in EUR not counted)',
    );
    const warned = logged(p).filter((l) => l.level === 'warn' && l.msg.includes('fees in EUR'));
    expect(warned.length).toBe(2);
    expect(warned[0]).toMatchObject({ batchId, currency: 'USDT', feeCurrencies: ['EUR'] });
    expect(logged(p).filter((l) => l.level === 'warn' && l.msg.includes('no fee known for USDT')).length).toBe(1);
  });
});

describe('balance check: a coin without a rate', () => {
  it('warns naming the pair and still checks the other coins', async () => {
    const p = await startPipeline({ balance: '10' });
    // The service quotes no rate for DAI: its rows come first, then forty USDT rows the balance will not cover.
    const dai = [1, 2, 3].map((i) => payoutRequest(`DAI-${i}`, { deductionCurrency: 'DAI' }));
    const batchId = await p.insertReadyBatch([...dai, ...fortyRows('USDT')]);
    const verdict = await gateOf(p, { feePerPayout: { USDT: '0.5' } }).check(batchId);
    expect(verdict).toEqual({
      ok: false,
      reason:
        'insufficient balance: needs about 27.26 USDT, 10 available (7.12 for the amounts at the indicative rates + 0.15 buffer (2%) + 20 for 40 fees of 0.5 (batch.balanceCheck.feePerPayout))',
    });
    const warned = logged(p).filter((l) => l.level === 'warn' && l.msg.startsWith('balance check: no usable DAI/PHP rate'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ batchId, deductionCurrency: 'DAI', payoutCurrency: 'PHP', rate: null });
  });
});

describe('balance refusals while sending', () => {
  it('creates refused together for the balance log the hold once; a refusal after the hold ran out logs it again', () =>
    checkRefusedOnce(startPipeline));
});

/**
 * Checks of the balance check and of balance refusals run on both engines (SQLite here in
 * balance-gate.test.ts, PostgreSQL in test/postgres/balance-gate.test.ts), with the helpers they share.
 */
import { expect } from 'vitest';
import { BalanceGate, type BalanceGateOptions } from '../../src/holds/index.js';
import { payoutRequest, type Pipeline, type PipelineOptions } from './harness.js';

export const REFUSED_LINE = 'INSUFFICIENT_BALANCE: batch held until the balance is topped up';

export function gateOf(p: Pipeline, o: Partial<BalanceGateOptions> = {}): BalanceGate {
  return new BalanceGate(p.db, p.client, p.logger, { bufferPercent: 2, ...o });
}

/** Forty rows of 10 PHP: about 7.11 USDT at 56.25, but 27.11 USDT once the sandbox's 0.5 fee per payout is paid. */
export function fortyRows(prefix: string): ReturnType<typeof payoutRequest>[] {
  return Array.from({ length: 40 }, (_, i) => payoutRequest(`${prefix}-${i + 1}`, { payoutAmount: '10' }));
}

export function logged(p: Pipeline): { level: string; msg: string; [k: string]: unknown }[] {
  return p.logLines.map((l) => JSON.parse(l) as { level: string; msg: string });
}

/** A few payouts created, so the store knows the fee the service charges. */
export async function payTwo(p: Pipeline): Promise<string> {
  const batchId = await p.insertReadyBatch([payoutRequest('EARLY-1'), payoutRequest('EARLY-2')]);
  await p.submit();
  expect(await p.states(batchId)).toEqual(['PENDING', 'PENDING']);
  expect((await p.row('EARLY-1')).totalFee).toBe('0.5');
  return batchId;
}

type Start = (o: PipelineOptions) => Promise<Pipeline>;

/** Without a configured fee, the largest fee of recent payouts in the coin is counted. */
export async function checkLearnedFee(start: Start): Promise<void> {
  const p = await start({});
  await payTwo(p);
  p.sandbox.setBalance('M001', 'USDT', '10');
  const batchId = await p.insertReadyBatch(fortyRows('SEEN'));
  expect(await gateOf(p).check(batchId)).toEqual({
    ok: false,
    reason:
      'insufficient balance: needs about 27.26 USDT, 10 available (7.12 for the amounts at the indicative rates + 0.15 buffer (2%) + 20 for 40 fees of 0.5 (the largest fee of the last 200 payouts in USDT))',
  });
  // A configured fee above the one seen is the one counted.
  const verdict = await gateOf(p, { feePerPayout: { USDT: '0.75' } }).check(batchId);
  expect(verdict.reason).toContain('+ 30 for 40 fees of 0.75 (batch.balanceCheck.feePerPayout))');
  // Enough for amounts, buffer and fees.
  p.sandbox.setBalance('M001', 'USDT', '27.27');
  expect(await gateOf(p).check(batchId)).toEqual({ ok: true, reason: null });
}

/** Creates refused together for the balance log the hold once; a refusal after the hold ran out logs it again. */
export async function checkRefusedOnce(start: Start): Promise<void> {
  const p = await start({ balance: '0', submitter: { concurrency: 8 } });
  const batchId = await p.insertReadyBatch(Array.from({ length: 20 }, (_, i) => payoutRequest(`REF-${i + 1}`)));
  await p.submit();
  const refused = p.sandbox.stats().businessErrors['2001'] ?? 0;
  expect(refused).toBeGreaterThan(1); // several creates were in flight when the first refusal came back
  expect((await p.batch(batchId)).holdCode).toBe('INSUFFICIENT_BALANCE');
  expect(logged(p).filter((l) => l.msg === REFUSED_LINE)).toHaveLength(1);

  // The hold runs out with the balance still empty: the next refusals put it on again, told once more.
  p.clock.advance(p.submitterOptions.insufficientBalanceHoldMs);
  await p.submit();
  expect(p.sandbox.stats().businessErrors['2001']).toBeGreaterThan(refused);
  expect(logged(p).filter((l) => l.msg === REFUSED_LINE)).toHaveLength(2);
  expect(p.sandbox.ledger()).toEqual([]);
}

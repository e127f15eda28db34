/**
 * E2E 1: a valid batch dropped into the inbox of the real `payoutd run` is
 * acknowledged, paid once per row, followed to PAID or CANCELLED as the
 * sandbox decides, and reported with exactly the service's values.
 */
import { describe, expect, it } from 'vitest';
import { Decimal } from '../../src/domain/money.js';
import { isCancelRow, makeRows, toCsv, type BatchRow } from './batch-files.js';
import { ledgerByReference, startE2e, type OutboxCsv } from './harness.js';

/** Exact sums of the result rows per (status, measure, currency), as the summary file should state them. */
function expectedSummary(result: OutboxCsv): Map<string, { rows: number; amount: string }> {
  const acc = new Map<string, { rows: number; amount: Decimal }>();
  const add = (key: string, amount: string): void => {
    const cur = acc.get(key) ?? { rows: 0, amount: new Decimal(0) };
    acc.set(key, { rows: cur.rows + 1, amount: cur.amount.plus(new Decimal(amount)) });
  };
  for (const r of result.rows) {
    const s = r['status'] as string;
    add(`${s}|payout_amount|${r['payout_currency']}`, r['payout_amount'] as string);
    if (r['deduction_amount']) add(`${s}|deduction_amount|${r['deduction_currency']}`, r['deduction_amount']);
    if (r['total_fee']) add(`${s}|total_fee|${r['fee_currency']}`, r['total_fee']);
  }
  return new Map([...acc].map(([k, v]) => [k, { rows: v.rows, amount: v.amount.toFixed() }]));
}

describe('e2e: a valid batch', () => {
  it('is acknowledged, paid exactly once per row, and reported with the service values', async () => {
    const e2e = await startE2e();
    const rows: BatchRow[] = makeRows('E2E-VALID', 20, { cancelEvery: 5 });
    expect(rows.filter(isCancelRow)).toHaveLength(4);
    expect(new Set(rows.map((r) => r.payoutCurrency)).size).toBeGreaterThanOrEqual(6);
    const byRef = new Map(rows.map((r) => [r.merchantReferenceId, r]));

    const daemon = await e2e.startDaemon();
    await e2e.drop('payouts-valid.csv', toCsv(rows));

    const accepted = await e2e.waitForBatch('payouts-valid.csv', ['ACTIVE', 'COMPLETE', 'REJECTED', 'DUPLICATE']);
    expect(accepted.state).not.toBe('REJECTED');
    const ack = await e2e.waitForOutbox(accepted, 'ack', 10_000);
    expect(ack.bom).toBe(true);
    expect(ack.header).toEqual(['batch_id', 'file', 'line', 'merchant_reference_id', 'verdict', 'reason']);
    expect(ack.rows.map((r) => [r['line'], r['merchant_reference_id'], r['verdict'], r['reason']])).toEqual(
      rows.map((r, i) => [String(i + 2), r.merchantReferenceId, 'ACCEPTED', '']),
    );
    expect(new Set(ack.rows.map((r) => r['batch_id']))).toEqual(new Set([accepted.id]));

    const result = await e2e.waitForOutbox(accepted, 'result', 30_000);
    const summary = await e2e.waitForOutbox(accepted, 'summary', 5_000);
    const batch = (await e2e.batches()).find((b) => b.id === accepted.id);
    expect(batch?.state).toBe('COMPLETE');

    // Exactly one payout per reference, none for anything else.
    const ledger = e2e.ledger();
    const perRef = ledgerByReference(ledger);
    expect(ledger).toHaveLength(rows.length);
    for (const r of rows) expect(perRef.get(r.merchantReferenceId)?.length, r.merchantReferenceId).toBe(1);
    // return-original would answer a repeat with another body, or one after the payout was final, as if all were well.
    expect(e2e.sandbox.stats().repeatedCreates).toEqual({ mismatched: 0, afterFinal: 0 });

    // One result row per CSV row, in line order, with the service's values as text.
    expect(result.bom).toBe(true);
    expect(result.rows.map((r) => r['line'])).toEqual(rows.map((_, i) => String(i + 2)));
    for (const out of result.rows) {
      const ref = out['merchant_reference_id'] as string;
      const row = byRef.get(ref) as BatchRow;
      const payout = perRef.get(ref)?.[0];
      expect(payout, ref).toBeDefined();
      if (!payout) continue;
      expect(payout.status, ref).toBe(isCancelRow(row) ? 'CANCELLED' : 'PAID');
      expect(
        {
          status: out['status'],
          payout_id: out['payout_id'],
          rate: out['rate'],
          deduction_amount: out['deduction_amount'],
          total_fee: out['total_fee'],
          fee_currency: out['fee_currency'],
          complete_time: out['complete_time'],
          payout_currency: out['payout_currency'],
          deduction_currency: out['deduction_currency'],
        },
        ref,
      ).toEqual({
        status: payout.status,
        payout_id: payout.payoutId,
        rate: payout.rate,
        deduction_amount: payout.deductionAmount,
        total_fee: payout.totalFee,
        fee_currency: payout.feeCurrency,
        complete_time: payout.completeTime,
        payout_currency: row.payoutCurrency,
        deduction_currency: row.deductionCurrency,
      });
      // Leading zeros intact, names with commas and non-ASCII letters intact.
      expect(out['beneficiary_account_number'], ref).toBe(row.accountNumber);
      expect(out['beneficiary_account_name'], ref).toBe(row.accountName);
    }
    expect(result.rows.filter((r) => r['status'] === 'CANCELLED')).toHaveLength(4);
    expect(result.rows.filter((r) => r['status'] === 'PAID')).toHaveLength(16);

    // The summary's sums are the exact sums of the result rows.
    expect(summary.bom).toBe(true);
    const want = expectedSummary(result);
    const got = new Map(
      summary.rows
        .filter((r) => r['measure'] !== 'rows')
        .map((r) => [`${r['status']}|${r['measure']}|${r['currency']}`, { rows: Number(r['row_count']), amount: r['amount'] as string }]),
    );
    expect(got).toEqual(want);
    expect(summary.rows.filter((r) => r['measure'] === 'rows').map((r) => [r['status'], r['row_count']])).toEqual([
      ['PAID', '16'],
      ['CANCELLED', '4'],
      ['ALL', '20'],
    ]);
    expect(summary.rows.every((r) => r['rows_not_summed'] === '' || r['rows_not_summed'] === '0')).toBe(true);

    // The daemon is still running, and no secret reached its log.
    expect(daemon.exited).toBeNull();
    const transcript = daemon.transcript();
    expect(transcript).not.toContain('e2e-api-key');
    expect(transcript).not.toContain('PRIVATE KEY');
    for (const r of rows.filter((x) => x.accountNumber.length >= 10)) expect(transcript).not.toContain(r.accountNumber);
  });

  // docs/result-files.md: payout_amount is written as the CSV gave it (1500.50), not in wire form.
  it('writes payout_amount in the result file as the CSV gave it (trailing zeros kept)', async () => {
    const e2e = await startE2e();
    const rows = makeRows('E2E-AMOUNT', 3);
    expect(rows.map((r) => r.payoutAmount)).toEqual(['1001.50', '152000', '13.00']);
    await e2e.startDaemon();
    await e2e.drop('amounts.csv', toCsv(rows));
    const batch = await e2e.waitForBatch('amounts.csv', ['ACTIVE', 'COMPLETE']);
    const result = await e2e.waitForOutbox(batch, 'result', 30_000);
    expect(result.rows.map((r) => r['payout_amount'])).toEqual(rows.map((r) => r.payoutAmount));
  });
});

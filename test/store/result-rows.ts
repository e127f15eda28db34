/**
 * The beneficiary and the fallback currencies and amount that `resultRowPages`
 * reads from the stored request in SQL, checked on a real database of
 * either engine (SQLite in test/store, PostgreSQL in test/postgres) against
 * what JSON.parse of the same stored text gives: names with quotes, commas,
 * backslashes, non-ASCII and escaped astral characters, a row with no
 * request, a request without a beneficiary number, and a row whose columns
 * are empty so the request's values are shown.
 */
import { expect } from 'vitest';
import { canonicalStringify } from '../../src/json/index.js';
import type { Database } from '../../src/store/db.js';
import { insertRows, type NewPayoutRow } from '../../src/store/payouts.js';
import { resultRowPages } from '../../src/store/results.js';
import { request } from '../finance/helpers.js';

/** Stored request texts: canonical (as the intake writes them) and one with JSON escapes, which must read the same. */
const REQUESTS: (string | null)[] = [
  canonicalStringify(request('R-1', {}, { accountName: 'Cruz, "Ana" José' })),
  canonicalStringify(request('R-2', {}, { accountName: 'Łukasz Żółć 😀 日本', accountNumber: '000 123-4' })),
  canonicalStringify(request('R-3', {}, { accountName: "=SUM(A1) back\\slash 'quoted'", accountNumber: '+639171234567' })),
  null,
  canonicalStringify({ ...request('R-5'), beneficiary: { accountName: 'No Number', bankCode: 'BOPIPHMM' } }),
  '{"beneficiary":{"accountName":"Jos\\u00e9 \\ud83d\\ude00 \\"q\\" a\\/b","accountNumber":"\\u0030123"},"payoutCurrency":"PHP"}',
  canonicalStringify(request('R-7', {}, { accountName: 'Columns Empty' })),
];

/** What the JavaScript reader took from a stored request (the outbox parsed it until the SQL read replaced it). */
function parsedFields(text: string | null): Record<string, string | null> {
  const req = text ? (JSON.parse(text) as Record<string, unknown> & { beneficiary?: Record<string, string> }) : null;
  return {
    beneficiaryAccountName: req?.beneficiary?.accountName ?? null,
    beneficiaryAccountNumber: req?.beneficiary?.accountNumber ?? null,
    payoutCurrency: (req?.payoutCurrency as string | undefined) ?? null,
    payoutAmount: (req?.payoutAmount as string | undefined) ?? null,
    deductionCurrency: (req?.deductionCurrency as string | undefined) ?? null,
  };
}

export async function checkBeneficiaryFromRequest(db: Database): Promise<void> {
  await db('batches').insert({
    id: 'BEN',
    file_name: 'BEN.csv',
    stored_path: '/claimed/BEN.csv',
    sha256: 'BEN'.padEnd(64, '0'),
    size: 1,
    mtime_ms: 1,
    state: 'ACTIVE',
    received_at: 1,
    updated_at: 1,
  });
  const lastLine = REQUESTS.length + 1;
  const rows: NewPayoutRow[] = REQUESTS.map((requestJson, i) => ({
    batchId: 'BEN',
    line: i + 2,
    merchantReferenceId: `BEN-${i + 1}`,
    state: requestJson === null ? 'INVALID' : 'VALIDATED',
    requestJson,
    // The last row's columns are empty: the files show the request's values.
    payoutCurrency: requestJson === null || i + 2 === lastLine ? null : 'PHP',
    payoutAmount: requestJson === null || i + 2 === lastLine ? null : '1500.5',
    deductionCurrency: requestJson === null || i + 2 === lastLine ? null : 'USDT',
    reasonCode: requestJson === null ? 'INVALID_FIELD' : null,
    reason: null,
  }));
  await db.transaction((trx) => insertRows(trx, rows, 1));

  const read = [];
  // Pages of 2: the keyset paging carries on across pages.
  for await (const page of resultRowPages(db, 'BEN', 2)) read.push(...page);
  expect(read.map((r) => r.line)).toEqual(rows.map((r) => r.line));
  read.forEach((r, i) => {
    const stored = REQUESTS[i] ?? null;
    const parsed = parsedFields(stored);
    expect(r.beneficiaryAccountName, `line ${r.line}`).toBe(parsed.beneficiaryAccountName);
    expect(r.beneficiaryAccountNumber, `line ${r.line}`).toBe(parsed.beneficiaryAccountNumber);
    const columns = rows[i];
    expect(r.payoutCurrency, `line ${r.line}`).toBe(columns?.payoutCurrency ?? parsed.payoutCurrency);
    expect(r.payoutAmount, `line ${r.line}`).toBe(columns?.payoutAmount ?? parsed.payoutAmount);
    expect(r.deductionCurrency, `line ${r.line}`).toBe(columns?.deductionCurrency ?? parsed.deductionCurrency);
  });
  // Spot checks that the comparison above compares what it should.
  expect(read[0]?.beneficiaryAccountName).toBe('Cruz, "Ana" José');
  expect(read[3]).toMatchObject({ state: 'INVALID', beneficiaryAccountName: null, payoutCurrency: null, reasonCode: 'INVALID_FIELD' });
  expect(read[5]).toMatchObject({ beneficiaryAccountName: 'José 😀 "q" a/b', beneficiaryAccountNumber: '0123' });
  expect(read[6]).toMatchObject({ payoutCurrency: 'PHP', payoutAmount: '1500.5', deductionCurrency: 'USDT' });
}

/**
 * The beneficiary and the fallback currencies and amount that `resultRowPages`
 * reads from the stored request in SQL, checked on a real database of
 * either engine (SQLite in test/store, PostgreSQL in test/postgres) against
 * what JSON.parse of the same stored text gives: names with quotes, commas,
 * backslashes, non-ASCII and escaped astral characters, a row with no
 * request, a request with an empty beneficiary number, and a row whose
 * columns are empty so the request's values are shown.
 */
import { expect } from 'vitest';
import { REQUEST_VALUE_INDEX, encodeRequest } from '../../src/domain/request-values.js';
import type { Database } from '../../src/store/db.js';
import { insertRows, type NewPayoutRow } from '../../src/store/insert-rows.js';
import { resultRowPages } from '../../src/store/results.js';
import { request } from '../finance/helpers.js';

/** Stored request texts: as the intake writes them, and one with JSON escapes (as SQL may write them), which must read the same. */
const REQUESTS: (string | null)[] = [
  encodeRequest(request('R-1', {}, { accountName: 'Cruz, "Ana" José' })),
  encodeRequest(request('R-2', {}, { accountName: 'Łukasz Żółć 😀 日本', accountNumber: '000 123-4' })),
  encodeRequest(request('R-3', {}, { accountName: "=SUM(A1) back\\slash 'quoted'", accountNumber: '+639171234567' })),
  null,
  encodeRequest(request('R-5', {}, { accountName: 'No Number', accountNumber: '' })),
  '["R-6", "USDT", "PHP", "1500.5", "A", "B", "PH", "PASSPORT", "P1", "Jos\\u00e9 \\ud83d\\ude00 \\"q\\" a\\/b", "\\u0030123", "X"]',
  encodeRequest(request('R-7', {}, { accountName: 'Columns Empty' })),
];

/** What the JavaScript reader takes from a stored request. */
function parsedFields(text: string | null): Record<string, string | null> {
  const values = text ? (JSON.parse(text) as string[]) : null;
  const at = (field: keyof typeof REQUEST_VALUE_INDEX): string | null => values?.[REQUEST_VALUE_INDEX[field]] ?? null;
  return {
    beneficiaryAccountName: at('beneficiary.accountName'),
    beneficiaryAccountNumber: at('beneficiary.accountNumber'),
    payoutCurrency: at('payoutCurrency'),
    payoutAmount: at('payoutAmount'),
    deductionCurrency: at('deductionCurrency'),
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
  const rows: NewPayoutRow[] = REQUESTS.map((requestValues, i) => ({
    batchId: 'BEN',
    line: i + 2,
    merchantReferenceId: `BEN-${i + 1}`,
    state: requestValues === null ? 'INVALID' : 'VALIDATED',
    requestValues,
    // The last row's columns are empty: the files show the request's values.
    payoutCurrency: requestValues === null || i + 2 === lastLine ? null : 'PHP',
    payoutAmount: requestValues === null || i + 2 === lastLine ? null : '1500.5',
    deductionCurrency: requestValues === null || i + 2 === lastLine ? null : 'USDT',
    reasonCode: requestValues === null ? 'INVALID_FIELD' : null,
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

/**
 * One valid payout row (PHP, 100.50, account 1234567890) for tests of every
 * layer, by field path; tests override the fields they are about.
 */
import type { PayoutRequest } from '../../src/domain/payout.js';
import { FIELD_PATHS, type FieldPath } from '../../src/ingest/rules/index.js';

export const VALID_ROW: Readonly<Record<FieldPath, string>> = {
  merchantReferenceId: 'REF-1',
  deductionCurrency: 'USDT',
  payoutCurrency: 'PHP',
  payoutAmount: '100.50',
  'sender.firstName': 'Maria',
  'sender.lastName': 'Santos',
  'sender.country': 'PH',
  'sender.idType': 'PASSPORT',
  'sender.idValue': 'P1234567A',
  'beneficiary.accountName': 'Juan Dela Cruz',
  'beneficiary.accountNumber': '1234567890',
  'beneficiary.bankCode': 'BOPIPHMM',
};

/** The valid row with this reference as a comma-separated CSV line in FIELD_PATHS order. */
export function validCsvRow(ref: string, overrides: Partial<Record<FieldPath, string>> = {}): string {
  const values: Record<string, string> = { ...VALID_ROW, merchantReferenceId: ref, ...overrides };
  return FIELD_PATHS.map((f) => values[f] ?? '').join(',');
}

/** The valid row as a create request, as the intake would store it (for rows put straight into the store). */
export function payoutRequest(ref: string, over: Partial<PayoutRequest> = {}): PayoutRequest {
  return {
    merchantReferenceId: ref,
    deductionCurrency: 'USDT',
    payoutCurrency: 'PHP',
    payoutAmount: '100.5',
    sender: { firstName: 'Maria', lastName: 'Santos', country: 'PH', idType: 'PASSPORT', idValue: 'P1234567A' },
    beneficiary: { accountName: 'Juan Dela Cruz', accountNumber: '1234567890', bankCode: 'BOPIPHMM' },
    ...over,
  };
}

/**
 * The CSV columns a payout row is made of: the create-request field paths of
 * spec 2.4, in one list, and the conversion from a flat row of cell values to
 * the nested PayoutRequest. Everything else in ingest refers to fields by
 * these paths.
 */
import type { PayoutRequest } from '../../domain/payout.js';

export const FIELD_PATHS = [
  'merchantReferenceId',
  'deductionCurrency',
  'payoutCurrency',
  'payoutAmount',
  'sender.firstName',
  'sender.lastName',
  'sender.country',
  'sender.idType',
  'sender.idValue',
  'beneficiary.accountName',
  'beneficiary.accountNumber',
  'beneficiary.bankCode',
] as const;

export type FieldPath = (typeof FIELD_PATHS)[number];

/** One row's cell values by field path (a missing optional column reads as ''). */
export type RowValues = Record<FieldPath, string>;

const FIELD_SET: ReadonlySet<string> = new Set(FIELD_PATHS);

export function isFieldPath(name: string): name is FieldPath {
  return FIELD_SET.has(name);
}

/** A row with every field empty, to fill in. */
export function emptyRowValues(): RowValues {
  const values = {} as RowValues;
  for (const field of FIELD_PATHS) values[field] = '';
  return values;
}

/**
 * The nested request of already-normalized values. Built with its keys in
 * sorted order at every level, so its canonical JSON (the stored
 * request_json) is plain JSON.stringify (src/json's fast path).
 */
export function toPayoutRequest(v: RowValues): PayoutRequest {
  return {
    beneficiary: {
      accountName: v['beneficiary.accountName'],
      accountNumber: v['beneficiary.accountNumber'],
      bankCode: v['beneficiary.bankCode'],
    },
    deductionCurrency: v.deductionCurrency,
    merchantReferenceId: v.merchantReferenceId,
    payoutAmount: v.payoutAmount,
    payoutCurrency: v.payoutCurrency,
    sender: {
      country: v['sender.country'],
      firstName: v['sender.firstName'],
      idType: v['sender.idType'],
      idValue: v['sender.idValue'],
      lastName: v['sender.lastName'],
    },
  };
}

/**
 * toPayoutRequest of values listed in FIELD_PATHS order (the validator's
 * working form: an array per row instead of a 12-key object).
 */
export function requestOfList(v: readonly string[]): PayoutRequest {
  const at = (i: number): string => v[i] ?? '';
  return {
    beneficiary: { accountName: at(9), accountNumber: at(10), bankCode: at(11) },
    deductionCurrency: at(1),
    merchantReferenceId: at(0),
    payoutAmount: at(3),
    payoutCurrency: at(2),
    sender: { country: at(6), firstName: at(4), idType: at(7), idValue: at(8), lastName: at(5) },
  };
}

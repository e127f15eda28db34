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

/** The nested request of already-normalized values. */
export function toPayoutRequest(v: RowValues): PayoutRequest {
  return {
    merchantReferenceId: v.merchantReferenceId,
    deductionCurrency: v.deductionCurrency,
    payoutCurrency: v.payoutCurrency,
    payoutAmount: v.payoutAmount,
    sender: {
      firstName: v['sender.firstName'],
      lastName: v['sender.lastName'],
      country: v['sender.country'],
      idType: v['sender.idType'],
      idValue: v['sender.idValue'],
    },
    beneficiary: {
      accountName: v['beneficiary.accountName'],
      accountNumber: v['beneficiary.accountNumber'],
      bankCode: v['beneficiary.bankCode'],
    },
  };
}

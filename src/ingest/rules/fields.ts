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
  // A literal (one per row at ingest): one object shape, no keyed stores in a loop.
  return {
    merchantReferenceId: '',
    deductionCurrency: '',
    payoutCurrency: '',
    payoutAmount: '',
    'sender.firstName': '',
    'sender.lastName': '',
    'sender.country': '',
    'sender.idType': '',
    'sender.idValue': '',
    'beneficiary.accountName': '',
    'beneficiary.accountNumber': '',
    'beneficiary.bankCode': '',
  };
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

/** Position of each field in FIELD_PATHS. */
const INDEX_OF = Object.fromEntries(FIELD_PATHS.map((field, i) => [field, i])) as Record<FieldPath, number>;

/**
 * toPayoutRequest of values listed in FIELD_PATHS order (the validator's
 * working form: an array per row instead of a 12-key object).
 */
export function requestOfList(v: readonly string[]): PayoutRequest {
  const at = (field: FieldPath): string => v[INDEX_OF[field]] ?? '';
  return {
    beneficiary: {
      accountName: at('beneficiary.accountName'),
      accountNumber: at('beneficiary.accountNumber'),
      bankCode: at('beneficiary.bankCode'),
    },
    deductionCurrency: at('deductionCurrency'),
    merchantReferenceId: at('merchantReferenceId'),
    payoutAmount: at('payoutAmount'),
    payoutCurrency: at('payoutCurrency'),
    sender: {
      country: at('sender.country'),
      firstName: at('sender.firstName'),
      idType: at('sender.idType'),
      idValue: at('sender.idValue'),
      lastName: at('sender.lastName'),
    },
  };
}

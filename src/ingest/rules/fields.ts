/**
 * The CSV columns a payout row is made of: the create-request field paths of
 * spec 2.4 (the domain's PAYOUT_REQUEST_FIELDS, in its order), and a row of
 * cell values by field. Everything else in ingest refers to fields by these
 * paths.
 */
import { PAYOUT_REQUEST_FIELDS, type PayoutRequestField } from '../../domain/request-values.js';

export const FIELD_PATHS = PAYOUT_REQUEST_FIELDS;

export type FieldPath = PayoutRequestField;

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

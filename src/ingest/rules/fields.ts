/** The CSV columns a payout row is made of: the create-request field paths (spec 2.4), in the domain's order. */
import { PAYOUT_REQUEST_FIELDS, type PayoutRequestField } from '../../domain/request-values.js';

export const FIELD_PATHS = PAYOUT_REQUEST_FIELDS;

export type FieldPath = PayoutRequestField;

/** One row's cell values by field path (a missing optional column reads as ''). */
export type RowValues = Record<FieldPath, string>;

const FIELD_SET: ReadonlySet<string> = new Set(FIELD_PATHS);

/**
 * Fields `requiredFields` may not leave out: a row is told apart by its reference and its money is counted and sent
 * in these currencies and this amount, so an empty one could never be created, only retried.
 */
export const ALWAYS_REQUIRED_FIELDS: readonly FieldPath[] = ['merchantReferenceId', 'deductionCurrency', 'payoutCurrency', 'payoutAmount'];

export function isFieldPath(name: string): name is FieldPath {
  return FIELD_SET.has(name);
}

/** Words for a field in a message to finance. */
export const FIELD_WORDS: Record<FieldPath, string> = {
  merchantReferenceId: 'reference',
  deductionCurrency: 'deduction currency',
  payoutCurrency: 'payout currency',
  payoutAmount: 'amount',
  'sender.firstName': "sender's first name",
  'sender.lastName': "sender's last name",
  'sender.country': "sender's country",
  'sender.idType': "sender's id type",
  'sender.idValue': "sender's id number",
  'beneficiary.accountName': 'account name',
  'beneficiary.accountNumber': 'account number',
  'beneficiary.bankCode': 'bank code',
};

/**
 * A PayoutRequest as the list of its values in the CSV's order, and that list as the text a payout row keeps
 * (`request_values`, a JSON array of strings): the object's keys would be most of a million-row file's bytes.
 */
import { PayoutdError } from './errors.js';
import type { PayoutRequest } from './payout.js';

/** The request's fields by path, in the order of the list (and of the CSV columns). */
export const PAYOUT_REQUEST_FIELDS = [
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

export type PayoutRequestField = (typeof PAYOUT_REQUEST_FIELDS)[number];

/** Position of each field in the list. */
export const REQUEST_VALUE_INDEX = Object.freeze(
  Object.fromEntries(PAYOUT_REQUEST_FIELDS.map((field, i) => [field, i])) as Record<PayoutRequestField, number>,
);

export class RequestValuesError extends PayoutdError {
  override readonly name = 'RequestValuesError';
}

/** The nested request of values listed in PAYOUT_REQUEST_FIELDS order. */
export function requestOfValues(v: readonly string[]): PayoutRequest {
  return {
    merchantReferenceId: v[0] as string,
    deductionCurrency: v[1] as string,
    payoutCurrency: v[2] as string,
    payoutAmount: v[3] as string,
    sender: {
      firstName: v[4] as string,
      lastName: v[5] as string,
      country: v[6] as string,
      idType: v[7] as string,
      idValue: v[8] as string,
    },
    beneficiary: {
      accountName: v[9] as string,
      accountNumber: v[10] as string,
      bankCode: v[11] as string,
    },
  };
}

/** The values of a request in PAYOUT_REQUEST_FIELDS order. */
export function valuesOfRequest(r: PayoutRequest): string[] {
  return [
    r.merchantReferenceId,
    r.deductionCurrency,
    r.payoutCurrency,
    r.payoutAmount,
    r.sender.firstName,
    r.sender.lastName,
    r.sender.country,
    r.sender.idType,
    r.sender.idValue,
    r.beneficiary.accountName,
    r.beneficiary.accountNumber,
    r.beneficiary.bankCode,
  ];
}

/** The text kept for a request: its values as a JSON array. */
export function encodeRequestValues(values: readonly string[]): string {
  if (values.length !== PAYOUT_REQUEST_FIELDS.length) {
    throw new RequestValuesError('REQUEST_VALUES', `a request has ${PAYOUT_REQUEST_FIELDS.length} values, got ${values.length}`);
  }
  // JSON.stringify: one string allocated, not a chain of small ones.
  return JSON.stringify(values);
}

/** The text kept for a request. */
export function encodeRequest(request: PayoutRequest): string {
  return encodeRequestValues(valuesOfRequest(request));
}

/** The values of a kept request; throws unless the text is a JSON array of as many strings as there are fields. */
export function decodeRequestValues(text: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new RequestValuesError('REQUEST_VALUES', 'the stored request is not JSON', { cause: err });
  }
  if (!Array.isArray(parsed) || parsed.length !== PAYOUT_REQUEST_FIELDS.length || !parsed.every((v) => typeof v === 'string')) {
    throw new RequestValuesError('REQUEST_VALUES', `the stored request is not a list of ${PAYOUT_REQUEST_FIELDS.length} texts`);
  }
  return parsed as string[];
}

/** The request a kept text holds. */
export function requestOfText(text: string): PayoutRequest {
  return requestOfValues(decodeRequestValues(text));
}

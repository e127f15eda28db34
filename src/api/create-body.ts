/**
 * The body of a create (spec 4.4) as the exact text that is signed and sent, from a PayoutRequest or from a
 * row's kept values. With keys sorted, kept values are written straight into the body's one shape, byte for
 * byte the object path's text (test/api/create-body.test.ts).
 */
import { normalizeAmount } from '../domain/money.js';
import type { CreateRequest, PayoutRequest } from '../domain/payout.js';
import { decodeRequestValues, requestOfValues } from '../domain/request-values.js';
import { JsonNumber, canonicalStringify, type CanonicalOptions } from '../json/index.js';

/** The create body as an object; canonical JSON of it is the text sent. */
function createBodyObject(req: PayoutRequest): Record<string, unknown> {
  return {
    merchantReferenceId: req.merchantReferenceId,
    deductionCurrency: req.deductionCurrency,
    payoutCurrency: req.payoutCurrency,
    payoutAmount: new JsonNumber(normalizeAmount(req.payoutAmount)),
    sender: { ...req.sender },
    beneficiary: { ...req.beneficiary },
  };
}

const text = JSON.stringify;

/** The canonical body (keys sorted) of a request's values in PAYOUT_REQUEST_FIELDS order. */
export function sortedBodyOfValues(v: readonly string[]): string {
  return (
    `{"beneficiary":{"accountName":${text(v[9])},"accountNumber":${text(v[10])},"bankCode":${text(v[11])}},` +
    `"deductionCurrency":${text(v[1])},"merchantReferenceId":${text(v[0])},"payoutAmount":${normalizeAmount(v[3] as string)},` +
    `"payoutCurrency":${text(v[2])},"sender":{"country":${text(v[6])},"firstName":${text(v[4])},"idType":${text(v[7])},` +
    `"idValue":${text(v[8])},"lastName":${text(v[5])}}}`
  );
}

/** The exact text of a create's body. */
export function createBodyText(req: CreateRequest, options: CanonicalOptions): string {
  if ('requestValues' in req) {
    const values = decodeRequestValues(req.requestValues);
    if (options.sortKeys) return sortedBodyOfValues(values);
    return canonicalStringify(createBodyObject(requestOfValues(values)), options);
  }
  return canonicalStringify(createBodyObject(req), options);
}

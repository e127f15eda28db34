/** Shape checks of business request bodies; a failure is a 2002 INVALID_PARAMETER naming the field. */
import { ISO_4217_MINOR_UNITS } from '../domain/iso4217.js';
import { fractionDigits, isPlainDecimal, normalizeAmount } from '../domain/money.js';
import type { PayoutRequest } from '../domain/payout.js';
import { JsonNumber } from '../json/canonical.js';
import { invalidParameter } from './errors.js';

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof JsonNumber);
}

function get(obj: JsonObject, name: string): unknown {
  return Object.hasOwn(obj, name) ? obj[name] : undefined;
}

export function requireObject(value: unknown, name: string): JsonObject {
  if (!isObject(value)) throw invalidParameter(`${name} must be a JSON object`);
  return value;
}

export function requireString(obj: JsonObject, name: string, path = name): string {
  const value = get(obj, name);
  if (typeof value !== 'string' || value.trim() === '') throw invalidParameter(`${path} is required (non-empty string)`);
  return value;
}

function optionalString(obj: JsonObject, name: string): string | undefined {
  return get(obj, name) === undefined ? undefined : requireString(obj, name);
}

/** A positive JSON number written as a plain decimal; returned in normal form. */
function requireAmount(obj: JsonObject, name: string): string {
  const value = get(obj, name);
  if (!(value instanceof JsonNumber)) throw invalidParameter(`${name} must be a JSON number`);
  const lexeme = value.value;
  if (!isPlainDecimal(lexeme)) throw invalidParameter(`${name} must be a positive number in plain decimal form (no sign, no exponent)`);
  if (!/[1-9]/.test(lexeme)) throw invalidParameter(`${name} must be greater than zero`);
  return normalizeAmount(lexeme);
}

/**
 * A payout amount (normal form) with no more decimals than its currency has minor units (ISO 4217), as a service
 * that pays whole minor units refuses one; a currency the table does not know is not checked.
 */
export function requireMinorUnits(amount: string, currency: string): void {
  const minorUnits = ISO_4217_MINOR_UNITS.get(currency);
  const digits = fractionDigits(amount);
  if (minorUnits !== undefined && digits > minorUnits) {
    throw invalidParameter(`payoutAmount ${amount} has ${digits} decimals; ${currency} allows at most ${minorUnits}`);
  }
}

/** The create body of spec 2.4; all fields required. */
export function parseCreateRequest(body: unknown): PayoutRequest {
  const obj = requireObject(body, 'request body');
  const merchantReferenceId = requireString(obj, 'merchantReferenceId');
  const deductionCurrency = requireString(obj, 'deductionCurrency');
  const payoutCurrency = requireString(obj, 'payoutCurrency');
  const payoutAmount = requireAmount(obj, 'payoutAmount');
  const sender = requireObject(get(obj, 'sender'), 'sender');
  const beneficiary = requireObject(get(obj, 'beneficiary'), 'beneficiary');
  const country = requireString(sender, 'country', 'sender.country');
  if (!/^[A-Za-z]{2}$/.test(country)) throw invalidParameter('sender.country must be a two-letter country code');
  return {
    merchantReferenceId,
    deductionCurrency,
    payoutCurrency,
    payoutAmount,
    sender: {
      firstName: requireString(sender, 'firstName', 'sender.firstName'),
      lastName: requireString(sender, 'lastName', 'sender.lastName'),
      country,
      idType: requireString(sender, 'idType', 'sender.idType'),
      idValue: requireString(sender, 'idValue', 'sender.idValue'),
    },
    beneficiary: {
      accountName: requireString(beneficiary, 'accountName', 'beneficiary.accountName'),
      accountNumber: requireString(beneficiary, 'accountNumber', 'beneficiary.accountNumber'),
      bankCode: requireString(beneficiary, 'bankCode', 'beneficiary.bankCode'),
    },
  };
}

function requireStringArray(obj: JsonObject, name: string, max: number): string[] {
  const value = get(obj, name);
  if (!Array.isArray(value) || value.length === 0) throw invalidParameter(`${name} must be a non-empty array`);
  if (value.length > max) throw invalidParameter(`${name} holds ${value.length} ids; at most ${max} per call`);
  value.forEach((item, i) => {
    if (typeof item !== 'string' || item === '') throw invalidParameter(`${name}[${i}] must be a non-empty string`);
  });
  return value as string[];
}

export type PayoutQuery = { by: 'merchantReferenceIds'; ids: string[] } | { by: 'payoutIds'; ids: string[] };

/**
 * Exactly one of merchantReferenceIds / the by-payoutId field (`payoutIdsField`, contract: Payout query),
 * 1..max ids.
 */
export function parseQueryRequest(body: unknown, maxIds: number, payoutIdsField: string): PayoutQuery {
  const obj = requireObject(body, 'request body');
  const hasRefs = get(obj, 'merchantReferenceIds') !== undefined;
  const hasIds = get(obj, payoutIdsField) !== undefined;
  if (hasRefs === hasIds) throw invalidParameter(`exactly one of merchantReferenceIds or ${payoutIdsField} is required`);
  return hasRefs
    ? { by: 'merchantReferenceIds', ids: requireStringArray(obj, 'merchantReferenceIds', maxIds) }
    : { by: 'payoutIds', ids: requireStringArray(obj, payoutIdsField, maxIds) };
}

export function parseRateQuery(body: unknown): string[] {
  return requireStringArray(requireObject(body, 'request body'), 'targetCurrencys', 1000);
}

/** access-token body: grantType required, businessId optional. */
export function parseAccessTokenRequest(body: unknown): { grantType: string; businessId: string | undefined } {
  const obj = requireObject(body, 'request body');
  return { grantType: requireString(obj, 'grantType'), businessId: optionalString(obj, 'businessId') };
}

export function parseRefreshTokenRequest(body: unknown): { refreshToken: string } {
  return { refreshToken: requireString(requireObject(body, 'request body'), 'refreshToken') };
}

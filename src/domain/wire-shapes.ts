/**
 * The payout query's and balance listing's wire shapes where the spec shows nothing (its 2.6, 4.5 and 4.6):
 * contract.md's answers as defaults. One schema serves the daemon's `api` settings and the sandbox's options,
 * so the two cannot default to different answers.
 */
import { z } from 'zod';
import type { PayoutRecord } from './payout.js';
import { isUrlPath } from './url-path.js';

const FIELD_NAME = { error: 'must be a JSON field name (not empty)' };
const fieldName = (def: string) => z.string(FIELD_NAME).min(1, FIELD_NAME).default(def);

/** Each field of a payout record, by the name payoutd reads it as, and the name on the wire. */
export const recordFieldsSchema = z
  .strictObject({
    payoutId: fieldName('payoutId'),
    merchantReferenceId: fieldName('merchantReferenceId'),
    status: fieldName('status'),
    payoutCurrency: fieldName('payoutCurrency'),
    payoutAmount: fieldName('payoutAmount'),
    deductionCurrency: fieldName('deductionCurrency'),
    deductionAmount: fieldName('deductionAmount'),
    rate: fieldName('rate'),
    totalFee: fieldName('totalFee'),
    feeCurrency: fieldName('feeCurrency'),
    createTime: fieldName('createTime'),
    completeTime: fieldName('completeTime'),
    failureReason: fieldName('failureReason'),
  } satisfies Record<keyof PayoutRecord, unknown>)
  // Two fields under one name could not both be read.
  .refine((f) => new Set(Object.values(f)).size === Object.keys(f).length, { error: 'each record field needs a name of its own' })
  .prefault({});

/** The payout query (spec 4.5): its by-reference field, `merchantReferenceIds`, and its path are in the spec. */
export const payoutQueryShapeSchema = z
  .strictObject({
    /** The request field of the by-payoutId form. */
    payoutIdsField: fieldName('payoutIds'),
    /** The field of the answer's `data` holding the records. */
    listField: fieldName('payouts'),
    recordFields: recordFieldsSchema,
  })
  .refine((q) => q.payoutIdsField !== 'merchantReferenceIds', {
    error: 'payoutIdsField must differ from merchantReferenceIds (the by-reference form)',
  })
  .prefault({});

/** The balance listing (spec 4.6 names it, shows neither its path nor its payload); body `{}`. */
export const balanceShapeSchema = z
  .strictObject({
    path: z.string().refine(isUrlPath, { error: 'must be a URL path starting with / (no query)' }).default('/apis/v1/balance/query'),
    /** The field of the answer's `data` holding one entry per currency. */
    listField: fieldName('balances'),
    currencyField: fieldName('currency'),
    availableField: fieldName('available'),
  })
  .prefault({});

export type RecordFields = z.output<typeof recordFieldsSchema>;
export type PayoutQueryShape = z.output<typeof payoutQueryShapeSchema>;
export type BalanceShape = z.output<typeof balanceShapeSchema>;

export const DEFAULT_PAYOUT_QUERY_SHAPE: PayoutQueryShape = payoutQueryShapeSchema.parse(undefined);
export const DEFAULT_BALANCE_SHAPE: BalanceShape = balanceShapeSchema.parse(undefined);

/**
 * The payout as the domain sees it: what a CSV row asks for, the statuses a
 * payout moves through, and which moves are allowed. No HTTP, no SQL.
 */
import { compareAmounts } from './money.js';

/** The create request of spec 2.4, amounts as decimal text. */
export interface PayoutRequest {
  merchantReferenceId: string;
  deductionCurrency: string;
  payoutCurrency: string;
  payoutAmount: string;
  sender: {
    firstName: string;
    lastName: string;
    country: string;
    idType: string;
    idValue: string;
  };
  beneficiary: {
    accountName: string;
    accountNumber: string;
    bankCode: string;
  };
}

/** Statuses of the service (spec 3). */
export type PayoutStatus = 'PENDING' | 'PAID' | 'CANCELLED';

export function isPayoutStatus(status: string): status is PayoutStatus {
  return status === 'PENDING' || status === 'PAID' || status === 'CANCELLED';
}

/** What the service answered to a create (spec 2.5), amounts as decimal text. */
export interface CreatedPayout {
  payoutId: string;
  merchantReferenceId: string;
  rate: string;
  deductionAmount: string;
  totalFee: string;
  feeCurrency: string;
}

/** A payout record as returned by query (contract: Payout query). */
export interface PayoutRecord {
  payoutId: string;
  merchantReferenceId: string;
  status: PayoutStatus;
  payoutCurrency: string;
  payoutAmount: string;
  deductionCurrency: string;
  deductionAmount: string;
  rate: string;
  totalFee: string;
  feeCurrency: string;
  createTime: string;
  completeTime: string | null;
  failureReason: string | null;
}

/** The reason code of a row whose reference the service holds for another payout (src/submit, src/poll). */
export const REFERENCE_TAKEN = 'REFERENCE_TAKEN';

/** What a row asked to pay, and in which currency to be debited, as the service's records show it. */
export interface RequestedMoney {
  payoutCurrency: string;
  payoutAmount: string;
  deductionCurrency: string;
}

/** The fields of a record that say what a payout pays, each named by the setting that reads it from the service's records. */
export type MoneyField = keyof RequestedMoney;

/**
 * The fields in which a payout the service holds under a row's reference differs from what the row asked: none,
 * it is the row's own. One that differs was made by something else under the same reference (a state database
 * restored, another system), or is read from another field of the service's records than the setting says.
 */
export function payoutDifferences(record: RequestedMoney, requested: RequestedMoney): MoneyField[] {
  const differ: MoneyField[] = [];
  // Currency codes in any case: a service writing `php` names the row's own payout.
  if (record.payoutCurrency.toUpperCase() !== requested.payoutCurrency.toUpperCase()) differ.push('payoutCurrency');
  if (compareAmounts(record.payoutAmount, requested.payoutAmount) !== 0) differ.push('payoutAmount');
  // The debit is in this currency: an amount of another one booked under the row's would be wrong money.
  if (record.deductionCurrency.toUpperCase() !== requested.deductionCurrency.toUpperCase()) differ.push('deductionCurrency');
  return differ;
}

/**
 * Whether a payout the service holds under a row's reference is that row's: the same payout currency and amount.
 * The currency it was debited in is not evidence of another's payout (the service may debit another it holds, or
 * payoutd read another field): a difference there is reported before booking, and the payout followed as the row's.
 */
export function isPayoutOf(record: RequestedMoney, requested: RequestedMoney): boolean {
  return payoutDifferences(record, requested).every((f) => f === 'deductionCurrency');
}

/** The settings that read these fields from the service's records, as messages name them. */
export function moneySettings(fields: readonly MoneyField[]): string[] {
  return fields.map((f) => `api.payoutQuery.recordFields.${f}`);
}

/**
 * The money a row asked or a record shows, as messages write it; with the currency it is debited in when that
 * is what differs (`withDeduction`), else the two texts would read alike.
 */
export function moneyText(money: RequestedMoney, withDeduction = false): string {
  const text = `${money.payoutAmount} ${money.payoutCurrency}`;
  return withDeduction ? `${text} debited in ${money.deductionCurrency}` : text;
}

/** Whether a record and a row differ in the currency the payout is debited in (messages then name it). */
export function deductionDiffers(record: RequestedMoney, requested: RequestedMoney): boolean {
  return payoutDifferences(record, requested).includes('deductionCurrency');
}

/**
 * What finance checks should the service show the payout as the row asked: payoutd then reads its records under
 * a wrong field name, which only a setting corrects.
 */
function wrongFieldClause(record: PayoutRecord, requested: RequestedMoney): string {
  const settings = moneySettings(payoutDifferences(record, requested)).join(' and ');
  const asked = moneyText(requested, deductionDiffers(record, requested));
  return `if the service shows it for ${asked}, payoutd reads another field of its records: check ${settings}`;
}

/** Why such a row is not paid, in words finance can act on. */
export function referenceTakenReason(record: PayoutRecord, requested: RequestedMoney): string {
  const d = deductionDiffers(record, requested);
  return (
    `the payout service holds payout ${record.payoutId} under this reference for ${moneyText(record, d)}, ` +
    `not this row's ${moneyText(requested, d)}, so payoutd does not count it as this row's payment; ` +
    `check payout ${record.payoutId} with the payout service before paying this row again, and if it is not this row's, pay the row under a new reference; ` +
    wrongFieldClause(record, requested)
  );
}

/**
 * What finance is told of a row settled by its own payout (an earlier record of it matched the row) whose later
 * record shows other figures: the service changed them, or payoutd reads a wrong field. Money moved either way,
 * so the row is never offered to be paid again; it is to be checked before it is booked.
 */
export function payoutDiffersReason(record: PayoutRecord, requested: RequestedMoney): string {
  const d = deductionDiffers(record, requested);
  return (
    `the payout service's record of payout ${record.payoutId} shows ${moneyText(record, d)} while this row asked ${moneyText(requested, d)}; ` +
    `check payout ${record.payoutId} with the payout service before booking it; ` +
    wrongFieldClause(record, requested)
  );
}

/**
 * A record of a query answer payoutd cannot act on as it stands: a status spec 3 does not name (it leaves
 * intermediate states open), or a field missing or malformed. What could be read of it is kept: with its
 * payoutId and reference it still proves the payout exists, and it is taken as not final.
 */
export interface UnreadRecord {
  payoutId: string | null;
  merchantReferenceId: string | null;
  /** The status as the service wrote it; null when absent or not text. */
  status: string | null;
  /** What could not be read, for an operator. */
  problem: string;
}

/** A query's answer, read record by record: one record payoutd cannot read never hides the others. */
export interface PayoutQueryAnswer {
  records: PayoutRecord[];
  unread: UnreadRecord[];
  /** The service said its answer holds only part of what it found (`hasMore`, a `total` above the records given). */
  partial?: boolean;
}

/** An unread record naming both its payout and its reference: the payout exists, and whose it is is known. */
export function namesItsPayout(r: UnreadRecord): r is UnreadRecord & { payoutId: string; merchantReferenceId: string } {
  return r.payoutId !== null && r.merchantReferenceId !== null;
}

/** Masks an account number for logs: only the last four characters show. */
export function maskAccountNumber(accountNumber: string): string {
  if (accountNumber.length <= 4) return '*'.repeat(accountNumber.length);
  return `${'*'.repeat(Math.min(accountNumber.length - 4, 8))}${accountNumber.slice(-4)}`;
}

/** A create's request as a payout row keeps it: its values as a JSON array (./request-values.ts). */
export interface StoredPayoutRequest {
  merchantReferenceId: string;
  requestValues: string;
}

export type CreateRequest = PayoutRequest | StoredPayoutRequest;

/**
 * One create's companion through the client: the caller's check before each try, and the refusals of the
 * credentials it carried (1009, 1004), each followed by a resend: never processed, so safe.
 */
export interface CreateTrail {
  /**
   * Awaited right before each try goes on the wire (after any rate-limit pause and credential renewal). A throw
   * stops the create there, unsent, and is passed on as it is: the caller confirms the create is still its own.
   */
  beforeSend?: () => Promise<void>;
  /** Absent until a try is refused. */
  refused?: { code: string; detail: string }[];
}

/** The payout service as the submitter and poller need it; errors carry a `kind` saying whether the outcome is known. */
export interface PayoutService {
  createPayout(req: CreateRequest, signal?: AbortSignal, trail?: CreateTrail): Promise<CreatedPayout>;
  queryByReferences(merchantReferenceIds: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer>;
  queryByPayoutIds(payoutIds: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer>;
  balances(signal?: AbortSignal): Promise<{ currency: string; available: string }[]>;
  exchangeRates(currencies: string[], signal?: AbortSignal): Promise<{ sourceCurrency: string; targetCurrency: string; rate: string }[]>;
  /** False while the service is taken for unreachable: callers then leave their work untouched. */
  available?(): boolean;
  /** While unreachable: one probe when its backoff step has come. True when the service is reachable after it. */
  probeIfDue?(signal?: AbortSignal): Promise<boolean>;
}

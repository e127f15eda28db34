/**
 * The payout API's handlers, after authentication (spec 4.1-4.5, contract: Balance). Each returns the envelope's
 * `data` or throws an ApiFailure; amounts leave as JsonNumber so their exact text is written. All Decimal.
 */
import type { Clock } from '../domain/clock.js';
import { Decimal } from '../domain/money.js';
import { maskAccountNumber, type PayoutRequest } from '../domain/payout.js';
import type { RecordFields } from '../domain/wire-shapes.js';
import { JsonNumber } from '../json/canonical.js';
import type { MerchantState } from './auth.js';
import type { CredentialStore, Credentials } from './credentials.js';
import {
  amountOutOfRange,
  duplicateReference,
  insufficientBalance,
  invalidAccess,
  refreshTokenExpired,
  unsupportedCurrency,
} from './errors.js';
import type { Ledger, StoredPayout } from './ledger.js';
import type { PayoutLifecycle } from './lifecycle.js';
import type { SandboxLogger } from './logger.js';
import type { SandboxConfig } from './options.js';
import { quotePayout } from './quote.js';
import type { Random } from './random.js';
import type { SandboxStats } from './stats.js';
import {
  parseAccessTokenRequest,
  parseCreateRequest,
  parseQueryRequest,
  parseRateQuery,
  parseRefreshTokenRequest,
  requireMinorUnits,
  requireObject,
} from './validate.js';

export const STABLECOINS = ['USDT', 'USDC'] as const;

/** What the handlers work with. */
export interface ApiState {
  config: SandboxConfig;
  clock: Clock;
  random: Random;
  ledger: Ledger;
  credentials: CredentialStore;
  lifecycle: PayoutLifecycle;
  stats: SandboxStats;
  logger: SandboxLogger;
}

export interface HandlerResult {
  data: unknown;
  /** True when the answer reports a payout that exists (create): the commit-then-* faults apply. */
  committed?: boolean;
}

/** A value for error messages: a caller's text, bounded and quoted. */
function shown(text: string): string {
  return JSON.stringify(text.length > 32 ? `${text.slice(0, 32)}…` : text);
}

function credentialsData(state: ApiState, creds: Credentials): unknown {
  const { config } = state;
  if (config.authMode === 'client-id') {
    return {
      accessToken: creds.accessToken,
      refreshToken: creds.refreshToken,
      expiresIn: config.accessTokenTtlSeconds,
      secretKey: creds.secretKey,
    };
  }
  return {
    merchantCode: creds.merchantCode,
    businessUserId: creds.businessUserId,
    accessToken: creds.accessToken,
    refreshToken: creds.refreshToken,
    secretKey: creds.secretKey,
    accessTokenExpiresIn: config.accessTokenTtlSeconds,
    refreshTokenExpiresIn: config.refreshTokenTtlSeconds,
    timestamp: Math.floor(creds.issuedAtMs / 1000),
  };
}

export function issueAccessToken(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult {
  const { businessId } = parseAccessTokenRequest(body);
  const creds = state.credentials.issue(merchant.merchantCode, businessId ?? merchant.businessUserId, state.clock.now());
  state.stats.accessTokensIssued++;
  state.logger.info({ merchantCode: merchant.merchantCode }, 'access token issued');
  return { data: credentialsData(state, creds) };
}

export function refreshAccessToken(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult {
  const { refreshToken } = parseRefreshTokenRequest(body);
  const previous = state.credentials.byRefresh(refreshToken);
  if (!previous || previous.merchantCode !== merchant.merchantCode) throw invalidAccess('refresh token is not valid');
  if (state.clock.now() >= previous.refreshExpiresAtMs) throw refreshTokenExpired();
  const creds = state.credentials.issue(merchant.merchantCode, previous.businessUserId, state.clock.now(), previous);
  state.stats.refreshesIssued++;
  state.logger.info({ merchantCode: merchant.merchantCode }, 'credentials refreshed');
  return { data: credentialsData(state, creds) };
}

function rateOf(config: SandboxConfig, currency: string): string | undefined {
  return Object.hasOwn(config.rates, currency) ? config.rates[currency] : undefined;
}

export function queryRates(state: ApiState, body: unknown): HandlerResult {
  const targets = parseRateQuery(body);
  const rateTime = new Date(state.clock.now()).toISOString();
  const exchangeRates = targets.flatMap((targetCurrency, i) => {
    const rate = rateOf(state.config, targetCurrency);
    if (rate === undefined) throw unsupportedCurrency(`targetCurrencys[${i}] ${shown(targetCurrency)} is not supported`);
    return STABLECOINS.map((sourceCurrency) => ({
      id: `XR${state.random.hex(16)}`,
      rateTime,
      sourceCurrency,
      targetCurrency,
      rate: new JsonNumber(rate),
    }));
  });
  return { data: { exchangeRates } };
}

function createdData(stored: StoredPayout): unknown {
  const c = stored.created;
  return {
    payoutId: c.payoutId,
    merchantReferenceId: c.merchantReferenceId,
    rate: new JsonNumber(c.rate),
    deductionAmount: new JsonNumber(c.deductionAmount),
    totalFee: new JsonNumber(c.totalFee),
    feeCurrency: c.feeCurrency,
  };
}

function newPayoutId(state: ApiState): string {
  for (;;) {
    const id = `PO${state.random.hex(22)}`;
    if (!state.ledger.hasPayoutId(id)) return id;
  }
}

/**
 * A create for a reference that has payouts: counted when its body differs from the first payout's or a payout of it
 * is final, as no policy's answer shows the client either (tests assert both stay 0).
 */
function countRepeatedCreate(state: ApiState, req: PayoutRequest, existing: readonly StoredPayout[]): void {
  const first = (existing[0] as StoredPayout).entry;
  const changed = (
    [
      ['payoutAmount', first.payoutAmount, req.payoutAmount],
      ['payoutCurrency', first.payoutCurrency, req.payoutCurrency],
      ['deductionCurrency', first.deductionCurrency, req.deductionCurrency],
      ['beneficiary.accountNumber', first.accountNumber, req.beneficiary.accountNumber],
    ] as const
  )
    .filter(([, was, now]) => was !== now)
    .map(([field]) => field);
  const final = existing.find((p) => p.entry.status !== 'PENDING')?.entry.status;
  if (changed.length > 0) state.stats.repeatedCreates.mismatched++;
  if (final !== undefined) state.stats.repeatedCreates.afterFinal++;
  if (changed.length > 0 || final !== undefined) {
    state.logger.warn(
      { merchantReferenceId: req.merchantReferenceId, payoutId: first.payoutId, changed, final: final ?? null },
      'create for a reference already used, with another body or after its payout is final',
    );
  }
}

export function createPayout(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult {
  const { config, ledger, stats } = state;
  const req = parseCreateRequest(body);
  if (!(STABLECOINS as readonly string[]).includes(req.deductionCurrency)) {
    throw unsupportedCurrency(`deductionCurrency ${shown(req.deductionCurrency)} is not supported (USDT, USDC)`);
  }
  const rate = rateOf(config, req.payoutCurrency);
  if (rate === undefined) throw unsupportedCurrency(`payoutCurrency ${shown(req.payoutCurrency)} is not supported`);
  requireMinorUnits(req.payoutAmount, req.payoutCurrency);
  // Limits are in stablecoin terms, so one table fits currencies as far apart as IDR and EUR.
  const { min, max } = config.amountLimits;
  const worth = new Decimal(req.payoutAmount).div(rate);
  if (worth.lessThan(min) || worth.greaterThan(max)) {
    throw amountOutOfRange(
      `payoutAmount ${req.payoutAmount} ${req.payoutCurrency} is worth ${worth.toDecimalPlaces(6).toFixed()} ${req.deductionCurrency}; allowed ${min} to ${max}`,
    );
  }

  const existing = ledger.findByReference(merchant.merchantCode, req.merchantReferenceId);
  const original = existing[0];
  if (original) countRepeatedCreate(state, req, existing);
  if (original && config.duplicatePolicy === 'return-original') {
    stats.duplicateCreates++;
    return { data: createdData(original), committed: true };
  }
  if (original && config.duplicatePolicy === 'reject') {
    throw duplicateReference(`merchantReferenceId ${shown(req.merchantReferenceId)} was already used`);
  }

  const quote = quotePayout(req.payoutAmount, rate, config.fee.fixed);
  const available = ledger.available(merchant.merchantCode, req.deductionCurrency);
  if (available.lessThan(quote.deductionAmount)) {
    throw insufficientBalance(`${req.deductionCurrency} balance is lower than the deduction amount ${quote.deductionAmount}`);
  }
  const stored = ledger.record({
    payoutId: newPayoutId(state),
    merchantReferenceId: req.merchantReferenceId,
    merchantCode: merchant.merchantCode,
    accountNumber: req.beneficiary.accountNumber,
    payoutCurrency: req.payoutCurrency,
    payoutAmount: req.payoutAmount,
    deductionCurrency: req.deductionCurrency,
    deductionAmount: quote.deductionAmount,
    rate: quote.rate,
    totalFee: quote.totalFee,
    feeCurrency: req.deductionCurrency,
    createTime: new Date(state.clock.now()).toISOString(),
  });
  stats.creates++;
  state.logger.info(
    {
      payoutId: stored.entry.payoutId,
      merchantCode: merchant.merchantCode,
      merchantReferenceId: req.merchantReferenceId,
      payoutAmount: req.payoutAmount,
      payoutCurrency: req.payoutCurrency,
      account: maskAccountNumber(req.beneficiary.accountNumber),
    },
    'payout created',
  );
  state.lifecycle.created(stored);
  return { data: createdData(stored), committed: true };
}

/** The contract's payout record, amounts as JSON numbers, each field under its name in `names`. */
export function recordData(stored: StoredPayout, names: RecordFields): unknown {
  const e = stored.entry;
  const values: { [K in keyof RecordFields]: unknown } = {
    payoutId: e.payoutId,
    merchantReferenceId: e.merchantReferenceId,
    status: e.status,
    payoutCurrency: e.payoutCurrency,
    payoutAmount: new JsonNumber(e.payoutAmount),
    deductionCurrency: e.deductionCurrency,
    deductionAmount: new JsonNumber(e.deductionAmount),
    rate: new JsonNumber(e.rate),
    totalFee: new JsonNumber(e.totalFee),
    feeCurrency: e.feeCurrency,
    createTime: e.createTime,
    completeTime: e.completeTime,
    failureReason: e.failureReason,
  };
  return Object.fromEntries(Object.entries(values).map(([key, value]) => [names[key as keyof RecordFields], value]));
}

export function queryPayouts(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult {
  const shape = state.config.payoutQuery;
  const query = parseQueryRequest(body, state.config.queryMaxIds, shape.payoutIdsField);
  // A Set keeps first-seen order and drops an id asked for twice.
  const found = new Set<StoredPayout>();
  for (const id of query.ids) {
    if (query.by === 'merchantReferenceIds') {
      for (const p of state.ledger.findByReference(merchant.merchantCode, id)) found.add(p);
    } else {
      const p = state.ledger.findById(id);
      if (p && p.entry.merchantCode === merchant.merchantCode) found.add(p);
    }
  }
  return { data: { [shape.listField]: [...found].map((p) => recordData(p, shape.recordFields)) } };
}

export function queryBalance(state: ApiState, merchant: MerchantState, body: unknown): HandlerResult {
  // GET carries no body; POST carries `{}` (or nothing).
  if (body !== undefined) requireObject(body, 'request body');
  const shape = state.config.balance;
  const balances = Object.entries(state.ledger.balanceSnapshot(merchant.merchantCode)).map(([currency, available]) => ({
    [shape.currencyField]: currency,
    [shape.availableField]: new JsonNumber(available),
  }));
  return { data: { [shape.listField]: balances } };
}

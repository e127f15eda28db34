/**
 * PayoutApiClient: the payout service as typed methods. Builds each body once as canonical JSON, signs exactly
 * that text, sends it, and turns every answer into typed data or an ApiError whose `kind` says what may be done.
 * Retries only where repeating cannot pay twice (reads, token calls, creates provably not processed), and only
 * while the service is reachable. Shared by every call: the circuit breaker and the rate-limit pause.
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import type { Logger } from 'pino';
import { backoffDelay, sleep, type BackoffPolicy } from '../domain/backoff.js';
import { systemClock, type Clock } from '../domain/clock.js';
import { PayoutdError } from '../domain/errors.js';
import { normalizeAmount } from '../domain/money.js';
import {
  isPayoutStatus,
  type CreateRequest,
  type CreateTrail,
  type CreatedPayout,
  type PayoutQueryAnswer,
  type PayoutRecord,
  type UnreadRecord,
} from '../domain/payout.js';
import {
  DEFAULT_BALANCE_SHAPE,
  DEFAULT_PAYOUT_QUERY_SHAPE,
  type BalanceShape,
  type PayoutQueryShape,
  type RecordFields,
} from '../domain/wire-shapes.js';
import { JsonNumber, canonicalStringify, parseLossless, plainNumberText } from '../json/index.js';
import { businessStringToSign, hmacKeyBytes, signHmac, signRsa, tokenStringToSign, type HmacKeyEncoding } from '../signing/index.js';
import {
  ACCESS_TOKEN_EXPIRED,
  ApiError,
  NOT_SENT,
  DEFAULT_CODE_TREATMENTS,
  INVALID_ACCESS,
  RATE_LIMITED,
  SERVICE_UNREACHABLE,
  isRateLimit,
  neverSent,
  parseHttpDate,
  parseRetryAfter,
  treatmentOf,
  type CodeTreatment,
} from './errors.js';
import type { Admission, ServiceBreaker } from './breaker.js';
import { createBodyText } from './create-body.js';
import { cleanServiceText, sentValues, type SentValues } from './service-text.js';
import { TransportError, httpOrigin, sendHttp, type HttpOrigin, type HttpResponse } from './http.js';
import { TokenManager, credentialTimes, type Credentials } from './tokens.js';

export const ENDPOINTS = {
  accessToken: '/apis/v1/access-token',
  refreshToken: '/apis/v1/refresh-token',
  exchangeRates: '/apis/v1/exchange-rate/query',
  createPayout: '/apis/v1/fiat-payout/create',
  queryPayouts: '/apis/v1/fiat-payout/query',
  /** The default of `api.balance.path` (contract: Balance). */
  balances: '/apis/v1/balance/query',
} as const;

/** A Retry-After longer than this is not waited out inside one call; the caller's own schedule takes over. */
const MAX_RETRY_AFTER_MS = 120_000;

/** Longest msg of the service's kept (in errors, logs and a row's reason). */
const MAX_SERVICE_MSG = 300;

/** Credentials whose secrets are cleared from the service's texts: the current ones and those before them. */
const REMEMBERED_CREDENTIALS = 2;

export type AuthMode = 'standard' | 'client-id';

export interface PayoutApiClientOptions {
  baseUrl: string;
  merchantCode: string;
  apiKey: string;
  privateKey: KeyObject;
  auth: {
    mode: AuthMode;
    /** client-id mode: the X-Client-Id / clientId value (defaults to merchantCode). */
    clientId?: string;
    /** access-token businessId (optional, spec 4.1). */
    businessId?: string;
    grantType: string;
    /** Renew this many seconds before accessToken expiry. */
    refreshBeforeExpirySeconds: number;
  };
  sortKeys: boolean;
  hmacKeyEncoding: HmacKeyEncoding;
  timeoutMs: number;
  retry: BackoffPolicy & { maxAttempts: number };
  queryMaxIds: number;
  /** (contract) The payout query's by-payoutId field, answer list and record fields; default the contract's. */
  payoutQuery?: PayoutQueryShape;
  /** (contract) The balance listing's path and answer fields; default the contract's. */
  balance?: BalanceShape;
  codeTreatments?: Record<string, CodeTreatment>;
  clock?: Clock;
  random?: () => number;
  /** Called after every HTTP exchange (metrics, debug logs). Never sees secrets. */
  onCall?: (call: ApiCallRecord) => void;
  onTokenRenewed?: (how: 'acquire' | 'refresh') => void;
  /** The service refused the credentials in use (1009, 1004): once per renewal it starts, not per call. */
  onCredentialsRefused?: (code: string) => void;
  /** A 429 / 1429 started a pause of every business call, this long (once per pause, not per call). */
  onRateLimited?: (pauseMs: number) => void;
  /** The service's circuit breaker, told of every exchange; none: every call is sent. */
  breaker?: ServiceBreaker;
  /** Told of query answers that show a record field setting does not match the service. */
  logger?: Pick<Logger, 'warn' | 'error'>;
}

export interface ApiCallRecord {
  endpoint: string;
  durationMs: number;
  /** 'ok' or the error code. */
  outcome: string;
}

export interface ExchangeRate {
  id: string;
  rateTime: string;
  sourceCurrency: string;
  targetCurrency: string;
  rate: string;
}

export interface Balance {
  currency: string;
  available: string;
}

/** What the last token answer said of the service's clock, and when it was asked for and came (ms since epoch, ours). */
export interface ServiceClockReading {
  requestedAt: number;
  receivedAt: number;
  /** The answer's `timestamp` (spec 2.2: issuance time); null when absent. */
  issuedAtByService: number | null;
  /** The answer's HTTP Date header; null when absent. */
  serviceDate: number | null;
}

interface CallOptions {
  /** Repeat on retryable and ambiguous outcomes (only for calls without effects). */
  idempotent: boolean;
  signal?: AbortSignal;
  /** Where a create's refused tries are written down. */
  trail?: CreateTrail;
}

/** What an exchange says of the service's reachability (a create's timeout, drop or 5xx is `unclear`). */
type Reach = 'reached' | 'unreachable' | 'unclear' | 'abandoned';

type Json = Record<string, unknown>;

/**
 * Text of a JSON number or string field from a lossless parse. A number that cannot be written out (its
 * exponent out of range) is a bad field like any other: one odd record is then unread, never the whole answer.
 */
function decimalField(value: unknown, field: string, endpoint: string): string {
  try {
    if (value instanceof JsonNumber) return normalizeAmount(plainNumberText(value.value));
    if (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)) return normalizeAmount(value);
  } catch {
    throw badResponse(endpoint, `field ${field} is a number payoutd cannot write out (its exponent is out of range)`);
  }
  throw badResponse(endpoint, `field ${field} is not a decimal number`);
}

/**
 * Text the service sent, with any NUL character (U+0000) shown as U+FFFD: PostgreSQL cannot store a NUL in a
 * text column, and one in a failure reason would fail the whole commit of answers it came in, again each pass.
 */
function serviceText(value: string): string {
  return value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
}

function stringField(value: unknown, field: string, endpoint: string): string {
  if (typeof value === 'string') return serviceText(value);
  if (value instanceof JsonNumber) return value.value;
  throw badResponse(endpoint, `field ${field} is missing or not a string`);
}

/**
 * A field as messages name it: its name on the wire, and the setting that chose that name, so a service that
 * answers under another name is matched by changing that setting.
 */
function settingField(name: string, setting: string): { name: string; label: string } {
  return { name, label: `${name} (${setting})` };
}

/**
 * The list an answer must hold. A missing or malformed one is BAD_RESPONSE, never an empty list: read as
 * "no payouts", a query answer would let a payout the service holds be created again.
 */
function listField(data: Json, field: { name: string; label: string }, endpoint: string): Json[] {
  const list = data[field.name];
  if (!Array.isArray(list)) throw badResponse(endpoint, `field ${field.label} is missing or not a list`);
  return list as Json[];
}

/**
 * Whether a query answer says it left records out. contract.md adopts `{payouts:[...]}` without paging, but a
 * service that pages or caps its answers anyway says so this way, and a missing id is then no proof of absence.
 */
function saysPartial(data: Json, given: number): boolean {
  if (data.hasMore === true || data.hasMore === 'true') return true;
  const total = data.total instanceof JsonNumber ? data.total.value : data.total;
  const n = typeof total === 'string' || typeof total === 'number' ? Number(total) : Number.NaN;
  return Number.isFinite(n) && n > given;
}

function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? serviceText(value) : null;
}

/** An identifier or status as text, as stringField reads it; null when absent or of another kind. */
function textOrNull(value: unknown): string | null {
  return value instanceof JsonNumber ? value.value : optionalString(value);
}

function toRecord(r: Json, names: RecordFields): PayoutRecord {
  const ep = ENDPOINTS.queryPayouts;
  const text = (key: keyof RecordFields): string => stringField(r[names[key]], recordField(names, key).label, ep);
  const decimal = (key: keyof RecordFields): string => decimalField(r[names[key]], recordField(names, key).label, ep);
  const status = text('status');
  if (!isPayoutStatus(status)) throw badResponse(ep, `status ${JSON.stringify(status)} is none of PENDING, PAID, CANCELLED`);
  return {
    payoutId: text('payoutId'),
    merchantReferenceId: text('merchantReferenceId'),
    status,
    payoutCurrency: text('payoutCurrency'),
    payoutAmount: decimal('payoutAmount'),
    deductionCurrency: text('deductionCurrency'),
    deductionAmount: decimal('deductionAmount'),
    rate: decimal('rate'),
    totalFee: decimal('totalFee'),
    feeCurrency: text('feeCurrency'),
    createTime: text('createTime'),
    completeTime: optionalString(r[names.completeTime]),
    failureReason: optionalString(r[names.failureReason]),
  };
}

function recordField(names: RecordFields, key: keyof RecordFields): { name: string; label: string } {
  return settingField(names[key], `api.payoutQuery.recordFields.${key}`);
}

/** One record of a query answer, read on its own: a record payoutd cannot read is kept as such, never fails the answer. */
function readRecord(value: unknown, names: RecordFields): PayoutRecord | UnreadRecord {
  const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
  const r = isObject ? (value as Json) : {};
  try {
    if (!isObject) throw badResponse(ENDPOINTS.queryPayouts, 'the record is not an object');
    return toRecord(r, names);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return {
      payoutId: textOrNull(r[names.payoutId]),
      merchantReferenceId: textOrNull(r[names.merchantReferenceId]),
      status: textOrNull(r[names.status]),
      problem: err.msg,
    };
  }
}

/** The record field a query form asks by (`merchantReferenceIds`: merchantReferenceId, the other: payoutId). */
type AskedBy = 'merchantReferenceId' | 'payoutId';

/**
 * A record naming a reference (or payout) that was not asked about, kept unread and naming none: its field is
 * read under a wrong name (recordFields mapped to another field the service fills). Dropped as another's, it
 * would let an asked reference be taken as absent and its payout be created again; naming none, no asked
 * reference of the answer is.
 */
function unasked(read: PayoutRecord | UnreadRecord, by: AskedBy, asked: ReadonlySet<string>, names: RecordFields): UnreadRecord | null {
  const value = read[by];
  if (value === null || asked.has(value)) return null;
  const said = `it names ${by} ${JSON.stringify(value.slice(0, 64))}, which was not asked: check ${recordField(names, by).label}`;
  return {
    payoutId: by === 'payoutId' ? null : read.payoutId,
    merchantReferenceId: by === 'merchantReferenceId' ? null : read.merchantReferenceId,
    status: read.status,
    problem: 'problem' in read ? `${read.problem}; ${said}` : said,
  };
}

/**
 * The field a final record is expected to carry under its own key: a PAID one its completion time, a CANCELLED
 * one its reason. Either may be null, but a key never sent at all suggests recordFields names another field.
 */
function expectedFinalField(status: PayoutRecord['status']): 'completeTime' | 'failureReason' | null {
  if (status === 'PAID') return 'completeTime';
  return status === 'CANCELLED' ? 'failureReason' : null;
}

/** The service answered that the request itself is wrong (a business refusal, HTTP 400 or 422). */
function isRefusal(err: unknown): err is ApiError {
  return err instanceof ApiError && (err.kind === 'rejected' || err.status === 400 || err.status === 422);
}

function secondsField(value: unknown, field: string, endpoint: string): number {
  const text = stringField(value, field, endpoint);
  if (!/^\d+$/.test(text)) throw badResponse(endpoint, `field ${field} is not a whole number of seconds`);
  return Number.parseInt(text, 10);
}

function badResponse(endpoint: string, msg: string): ApiError {
  return new ApiError({ endpoint, code: 'BAD_RESPONSE', msg, status: null, kind: 'ambiguous' });
}

/** The service's issuance time of credentials (spec 2.2), ms; seconds in the standard form, ms in the client-id form. */
function issuanceTime(value: unknown, unitMs: number): number | null {
  const text = value instanceof JsonNumber ? value.value : typeof value === 'string' ? value : null;
  if (text === null || !/^\d{1,16}$/.test(text)) return null;
  return Number.parseInt(text, 10) * unitMs;
}

export class PayoutApiClient {
  private readonly tokens: TokenManager;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly treatments: Record<string, CodeTreatment>;
  private readonly basePath: string;
  private readonly queryShape: PayoutQueryShape;
  private readonly balanceShape: BalanceShape;
  private readonly origin: HttpOrigin;
  /** Every business call waits until then (performance.now() ms) after a 429 / 1429: a wait on the wire, like a timeout. */
  private pausedUntil = 0;
  /** The clock readings of the last token answer (start-up checks). */
  private lastTokenAnswer: ServiceClockReading | null = null;
  /** Record fields already warned of as never sent: said once, not for every record. */
  private readonly warnedAbsent = new Set<'completeTime' | 'failureReason'>();
  /**
   * The latest credentials obtained, newest first: a call signed with the previous ones may still be answered
   * after a renewal, echoing them.
   */
  private issued: Credentials[] = [];

  constructor(private readonly o: PayoutApiClientOptions) {
    this.clock = o.clock ?? systemClock;
    this.random = o.random ?? Math.random;
    this.treatments = { ...DEFAULT_CODE_TREATMENTS, ...o.codeTreatments };
    this.queryShape = o.payoutQuery ?? DEFAULT_PAYOUT_QUERY_SHAPE;
    this.balanceShape = o.balance ?? DEFAULT_BALANCE_SHAPE;
    const base = new URL(o.baseUrl);
    this.origin = httpOrigin(base);
    this.basePath = base.pathname.replace(/\/+$/, '');
    this.tokens = new TokenManager(
      { acquire: (signal) => this.requestAccessToken(signal), refresh: (rt, signal) => this.requestRefreshToken(rt, signal) },
      {
        clock: this.clock,
        refreshBeforeMs: o.auth.refreshBeforeExpirySeconds * 1000,
        onRenewed: o.onTokenRenewed,
        onRefused: o.onCredentialsRefused,
      },
    );
  }

  // ---- reachability -----------------------------------------------------

  /** False while the breaker takes the service for unreachable (no call but the probe is sent). */
  available(): boolean {
    return this.o.breaker?.closed ?? true;
  }

  /** While the service is taken for unreachable and a probe is due: one balance query, no retries; true when reachable. */
  async probeIfDue(signal?: AbortSignal): Promise<boolean> {
    const breaker = this.o.breaker;
    if (!breaker || breaker.closed) return true;
    if (!breaker.probeDue()) return false;
    try {
      await this.balances(signal);
    } catch {
      // The probe's outcome is what the breaker was told by the exchange; a failure here is the expected case.
    }
    return breaker.closed;
  }

  /**
   * Obtains credentials now, as the first business call would, and says what the token answer told of the
   * service's clock. Throws the token call's ApiError (`auth`: refused; `retryable`: not reached).
   */
  async verifyAccess(): Promise<ServiceClockReading | null> {
    this.lastTokenAnswer = null;
    await this.tokens.current();
    return this.lastTokenAnswer;
  }

  // ---- business methods -------------------------------------------------

  async exchangeRates(currencies: string[], signal?: AbortSignal): Promise<ExchangeRate[]> {
    const data = await this.business(ENDPOINTS.exchangeRates, { targetCurrencys: currencies }, { idempotent: true, signal });
    const list = listField(data, { name: 'exchangeRates', label: 'exchangeRates' }, ENDPOINTS.exchangeRates);
    return list.map((r) => ({
      id: stringField(r.id, 'id', ENDPOINTS.exchangeRates),
      rateTime: stringField(r.rateTime, 'rateTime', ENDPOINTS.exchangeRates),
      sourceCurrency: stringField(r.sourceCurrency, 'sourceCurrency', ENDPOINTS.exchangeRates),
      targetCurrency: stringField(r.targetCurrency, 'targetCurrency', ENDPOINTS.exchangeRates),
      rate: decimalField(r.rate, 'rate', ENDPOINTS.exchangeRates),
    }));
  }

  /** Creates a payout. ApiError `ambiguous`: the payout may exist; query it by merchantReferenceId first. */
  async createPayout(req: CreateRequest, signal?: AbortSignal, trail?: CreateTrail): Promise<CreatedPayout> {
    const ep = ENDPOINTS.createPayout;
    const data = await this.business(ep, createBodyText(req, { sortKeys: this.o.sortKeys }), { idempotent: false, signal, trail });
    return {
      payoutId: stringField(data.payoutId, 'payoutId', ep),
      merchantReferenceId: typeof data.merchantReferenceId === 'string' ? serviceText(data.merchantReferenceId) : req.merchantReferenceId,
      rate: decimalField(data.rate, 'rate', ep),
      deductionAmount: decimalField(data.deductionAmount, 'deductionAmount', ep),
      totalFee: decimalField(data.totalFee, 'totalFee', ep),
      feeCurrency: stringField(data.feeCurrency, 'feeCurrency', ep),
    };
  }

  /** Payouts with these references (several per reference if the service allowed duplicates). */
  queryByReferences(merchantReferenceIds: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer> {
    return this.query('merchantReferenceIds', 'merchantReferenceId', merchantReferenceIds, signal);
  }

  async queryByPayoutIds(payoutIds: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer> {
    const field = this.queryShape.payoutIdsField;
    try {
      return await this.query(field, 'payoutId', payoutIds, signal);
    } catch (err) {
      // A service that takes this form under another field name refuses the request (spec 4.5 does not show it).
      throw isRefusal(err) ? err.withNote(`the ids were sent as ${field}: check api.payoutQuery.payoutIdsField and api.queryMaxIds`) : err;
    }
  }

  async balances(signal?: AbortSignal): Promise<Balance[]> {
    const shape = this.balanceShape;
    let data: Json;
    try {
      data = await this.business(shape.path, {}, { idempotent: true, signal });
    } catch (err) {
      // The path is the contract's answer, not the spec's: a service without it answers 404.
      throw err instanceof ApiError && err.status === 404 ? err.withNote('no such path on the service: check api.balance.path') : err;
    }
    const list = listField(data, settingField(shape.listField, 'api.balance.listField'), shape.path);
    const currency = settingField(shape.currencyField, 'api.balance.currencyField');
    const available = settingField(shape.availableField, 'api.balance.availableField');
    return list.map((b) => ({
      currency: stringField(b[currency.name], currency.label, shape.path),
      available: decimalField(b[available.name], available.label, shape.path),
    }));
  }

  /**
   * `field`: the request field holding the ids (`merchantReferenceIds`, or the by-payoutId form's); `by`: the
   * record field naming them.
   */
  private async query(field: string, by: AskedBy, ids: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer> {
    const shape = this.queryShape;
    const list = settingField(shape.listField, 'api.payoutQuery.listField');
    const answer: PayoutQueryAnswer = { records: [], unread: [] };
    let strays = 0;
    for (let i = 0; i < ids.length; i += this.o.queryMaxIds) {
      const chunk = ids.slice(i, i + this.o.queryMaxIds);
      const asked = new Set(chunk);
      const data = await this.business(ENDPOINTS.queryPayouts, { [field]: chunk }, { idempotent: true, signal });
      const records = listField(data, list, ENDPOINTS.queryPayouts);
      if (saysPartial(data, records.length)) answer.partial = true;
      for (const value of records) {
        const read = readRecord(value, shape.recordFields);
        const kept = unasked(read, by, asked, shape.recordFields) ?? read;
        if (kept !== read) strays++;
        // Identifiers stay as sent (rows are matched by them); the texts are logged and reach a row's reason.
        if ('problem' in kept) {
          answer.unread.push({ ...kept, status: kept.status === null ? null : this.clean(kept.status), problem: this.clean(kept.problem) });
        } else {
          this.warnIfAbsent(value as Json, kept);
          answer.records.push(kept.failureReason === null ? kept : { ...kept, failureReason: this.clean(kept.failureReason) });
        }
      }
    }
    if (strays > 0) {
      const setting = `api.payoutQuery.recordFields.${by}`;
      this.o.logger?.error(
        { setting, field: shape.recordFields[by], records: strays },
        `records of a payout query name a ${by} that was not asked: ${setting} names another field of the service's records; no ${by} of that answer is taken as absent`,
      );
    }
    return answer;
  }

  /**
   * A final record without the key its status implies (a CANCELLED one without its reason) is read with it
   * null, and its row's result would say nothing of why: the setting naming that key is warned of once.
   */
  private warnIfAbsent(raw: Json, rec: PayoutRecord): void {
    const key = expectedFinalField(rec.status);
    if (key === null || this.warnedAbsent.has(key)) return;
    const name = this.queryShape.recordFields[key];
    if (Object.hasOwn(raw, name)) return;
    this.warnedAbsent.add(key);
    const setting = `api.payoutQuery.recordFields.${key}`;
    this.o.logger?.warn(
      { setting, field: name, status: rec.status, payoutId: rec.payoutId },
      `a ${rec.status} record of a payout query has no field ${name}: ${setting} may not name the service's field; ${key} is read as empty`,
    );
  }

  // ---- calls, signing, classification -----------------------------------

  /** A business call; `body` is the object to send, or the exact text already written (a create's). */
  private async business(endpoint: string, body: Json | string, opts: CallOptions): Promise<Json> {
    const isCreate = endpoint === ENDPOINTS.createPayout;
    const { signal } = opts;
    // Until a try's exchange starts not one byte of it has left, and every earlier try was refused unprocessed:
    // a create failing there was not sent, whatever failed.
    const unsent = async <T>(step: () => T | Promise<T>): Promise<T> => {
      try {
        return await step();
      } catch (err) {
        throw isCreate ? this.notSent(endpoint, err, signal) : err;
      }
    };
    let authRetried = false;
    for (let attempt = 1; ; attempt++) {
      // Credentials are taken after the pause: they must still be fresh when the call leaves.
      const creds = await unsent(async () => {
        if (this.pausedUntil > 0 && this.pausedUntil > performance.now()) await this.rateLimitPause(signal);
        return this.tokens.current(signal);
      });
      // Per try: a pause or a renewal above may have outlasted the caller's claim on a create.
      await opts.trail?.beforeSend?.();
      const call = await unsent(() => this.signBusiness(endpoint, body, creds));
      try {
        return await this.exchange(endpoint, call.path, call.headers, call.body, signal, isCreate);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        // A 401 is refused before processing, so one retry with fresh credentials is safe.
        if (err.kind === 'auth' && !authRetried && (err.code === ACCESS_TOKEN_EXPIRED || err.code === INVALID_ACCESS)) {
          authRetried = true;
          if (opts.trail) (opts.trail.refused ??= []).push({ code: err.code, detail: err.message });
          const code = err.code;
          await unsent(() =>
            code === ACCESS_TOKEN_EXPIRED ? this.tokens.expired(creds, code, signal) : this.tokens.invalid(creds, code, signal),
          );
          continue;
        }
        const limited = isRateLimit(err);
        if (limited) this.pauseAll(err, attempt);
        if (attempt >= this.o.retry.maxAttempts || !this.mayRepeat(err, opts.idempotent)) throw err;
        // A rate-limited call waits out the shared pause at the top of the loop, with every other call.
        if (!limited) await unsent(() => sleep(backoffDelay(attempt, this.o.retry, this.random), signal));
      }
    }
  }

  /**
   * What a create that failed before its try left is: not sent, saying what failed. An error that already says
   * so is kept; a refusal of the credentials stays `auth`, so an operator is told.
   */
  private notSent(endpoint: string, err: unknown, signal: AbortSignal | undefined): ApiError {
    if (neverSent(err)) return err;
    // Only our own errors carry messages known to be safe to log.
    const why = signal?.aborted
      ? 'the call was abandoned (shutting down)'
      : err instanceof PayoutdError
        ? err.message
        : 'unexpected failure while preparing it';
    return new ApiError({
      endpoint,
      code: NOT_SENT,
      msg: `not sent: ${why}`,
      status: null,
      kind: err instanceof ApiError && err.kind === 'auth' ? 'auth' : 'retryable',
    });
  }

  /** Whether a failed call can be sent again without risk of a second effect (and the service is reachable). */
  private mayRepeat(err: ApiError, idempotent: boolean): boolean {
    if (err.waitForBalance || !this.available()) return false;
    if (idempotent) return err.kind === 'retryable' || err.kind === 'ambiguous';
    return err.kind === 'retryable';
  }

  /** Waits while a rate limit pauses every business call (a pause extended meanwhile is waited out too). */
  private async rateLimitPause(signal?: AbortSignal): Promise<void> {
    for (let wait = this.pausedUntil - performance.now(); wait > 0; wait = this.pausedUntil - performance.now()) await sleep(wait, signal);
  }

  /** A 429 / 1429: every business call waits out its Retry-After (within the base delay and MAX_RETRY_AFTER_MS). */
  private pauseAll(err: ApiError, attempt: number): void {
    const ms = Math.min(
      Math.max(err.retryAfterMs ?? backoffDelay(attempt, this.o.retry, this.random), this.o.retry.baseMs),
      MAX_RETRY_AFTER_MS,
    );
    const now = performance.now();
    if (now + ms <= this.pausedUntil) return;
    const started = this.pausedUntil <= now;
    this.pausedUntil = now + ms;
    if (started) this.o.onRateLimited?.(ms);
  }

  /** The signed request of a business call: the exact text sent and its headers. */
  private signBusiness(
    endpoint: string,
    body: Json | string,
    creds: Credentials,
  ): { path: string; headers: Record<string, string>; body: string } {
    const minified = typeof body === 'string' ? body : canonicalStringify(body, { sortKeys: this.o.sortKeys });
    const { timestamp, nonce } = this.stamp();
    const path = this.basePath + endpoint;
    const signature = signHmac(
      hmacKeyBytes(creds.secretKey, this.o.hmacKeyEncoding),
      businessStringToSign({ method: 'POST', path, accessToken: creds.accessToken, minifiedBody: minified, timestamp, nonce }),
    );
    const headers = this.signedHeaders(timestamp, nonce, signature);
    if (this.o.auth.mode === 'client-id') headers.Authorization = `Bearer ${creds.accessToken}`;
    else headers.SvcAuthorization = `Bearer ${creds.accessToken}`;
    return { path, headers, body: minified };
  }

  /** Headers of spec 5.2 common to every call (plus X-Client-Id in client-id mode). */
  private signedHeaders(timestamp: string, nonce: string, signature: string): Record<string, string> {
    const headers: Record<string, string> = {
      'Content-Type': 'application/json',
      SvcApiKey: this.o.apiKey,
      'X-TIMESTAMP': timestamp,
      'X-NONCE': nonce,
      'X-SIGNATURE': signature,
    };
    if (this.o.auth.mode === 'client-id') headers['X-Client-Id'] = this.clientId();
    return headers;
  }

  /**
   * A token call, and when the try that was answered was sent (the credentials' life counts from then) and its Date
   * header. `signal` abandons it, its tries and the waits between them.
   */
  private async tokenCall(
    endpoint: string,
    body: Json,
    signal: AbortSignal | undefined,
  ): Promise<{ data: Json; requestedAt: number; date: string | null }> {
    const minified = canonicalStringify(body, { sortKeys: this.o.sortKeys });
    const path = this.basePath + endpoint;
    const signer = this.o.auth.mode === 'client-id' ? this.clientId() : this.o.merchantCode;
    for (let attempt = 1; ; attempt++) {
      const requestedAt = this.clock.now();
      const { timestamp, nonce } = this.stamp();
      const signature = signRsa(
        this.o.privateKey,
        tokenStringToSign({ method: 'POST', path, minifiedBody: minified, apiKey: this.o.apiKey, merchantCode: signer, timestamp, nonce }),
      );
      const headers = this.signedHeaders(timestamp, nonce, signature);
      const seen = { date: null as string | null };
      try {
        const data = await this.exchange(endpoint, path, headers, minified, signal, false, seen);
        return { data, requestedAt, date: seen.date };
      } catch (err) {
        // Token calls have no lasting effect besides new credentials: safe to repeat (while the service is reachable).
        if (!(err instanceof ApiError) || err.kind === 'auth' || err.kind === 'rejected' || attempt >= this.o.retry.maxAttempts) throw err;
        if (!this.available()) throw err;
        await sleep(Math.min(err.retryAfterMs ?? backoffDelay(attempt, this.o.retry, this.random), MAX_RETRY_AFTER_MS), signal);
      }
    }
  }

  private async requestAccessToken(signal: AbortSignal | undefined): Promise<Credentials> {
    const body: Json =
      this.o.auth.mode === 'client-id'
        ? { clientId: this.clientId(), grantType: this.o.auth.grantType }
        : { merchantCode: this.o.merchantCode, grantType: this.o.auth.grantType };
    if (this.o.auth.businessId) body.businessId = this.o.auth.businessId;
    return this.toCredentials(ENDPOINTS.accessToken, await this.tokenCall(ENDPOINTS.accessToken, body, signal));
  }

  private async requestRefreshToken(refreshToken: string, signal: AbortSignal | undefined): Promise<Credentials> {
    const body: Json =
      this.o.auth.mode === 'client-id' ? { clientId: this.clientId(), refreshToken } : { merchantCode: this.o.merchantCode, refreshToken };
    return this.toCredentials(ENDPOINTS.refreshToken, await this.tokenCall(ENDPOINTS.refreshToken, body, signal));
  }

  /**
   * Text the service wrote, cleared of the secrets this client holds, of the personal values of the request it
   * answers (`sent`), and of account numbers (./service-text.ts).
   */
  private clean(text: string, sent?: SentValues): string {
    const secrets = [this.o.apiKey, ...this.issued.flatMap((c) => [c.accessToken, c.refreshToken, c.secretKey])];
    return cleanServiceText(text, secrets, sent);
  }

  private toCredentials(endpoint: string, answer: { data: Json; requestedAt: number; date: string | null }): Credentials {
    const { data, requestedAt } = answer;
    const standard = this.o.auth.mode === 'standard';
    const receivedAt = this.clock.now();
    const issuedAtByService = issuanceTime(data.timestamp, standard ? 1000 : 1);
    this.lastTokenAnswer = { requestedAt, receivedAt, issuedAtByService, serviceDate: parseHttpDate(answer.date) };
    const accessField = standard ? 'accessTokenExpiresIn' : 'expiresIn';
    const accessIn = secondsField(data[accessField], accessField, endpoint);
    const refreshIn =
      data.refreshTokenExpiresIn === undefined ? null : secondsField(data.refreshTokenExpiresIn, 'refreshTokenExpiresIn', endpoint);
    const creds: Credentials = {
      accessToken: stringField(data.accessToken, 'accessToken', endpoint),
      refreshToken: stringField(data.refreshToken, 'refreshToken', endpoint),
      secretKey: stringField(data.secretKey, 'secretKey', endpoint),
      ...credentialTimes({
        requestedAt,
        receivedAt,
        accessExpiresInSeconds: accessIn,
        refreshExpiresInSeconds: refreshIn,
        issuedAtByService,
      }),
    };
    this.issued = [creds, ...this.issued].slice(0, REMEMBERED_CREDENTIALS);
    return creds;
  }

  private clientId(): string {
    return this.o.auth.clientId ?? this.o.merchantCode;
  }

  private stamp(): { timestamp: string; nonce: string } {
    const now = this.clock.now();
    const timestamp = this.o.auth.mode === 'client-id' ? String(now) : String(Math.floor(now / 1000));
    return { timestamp, nonce: randomUUID().replaceAll('-', '') };
  }

  /** Sends the exact signed text and maps the answer; `isCreate` makes unknown outcomes ambiguous; `seen` gets the Date header. */
  private async exchange(
    endpoint: string,
    path: string,
    headers: Record<string, string>,
    body: string,
    signal: AbortSignal | undefined,
    isCreate: boolean,
    seen?: { date: string | null },
  ): Promise<Json> {
    const admitted = this.o.breaker ? this.o.breaker.admit() : 'call';
    if (admitted === null) throw this.unreachable(endpoint);
    const started = performance.now();
    let outcome = 'ok';
    let told = false;
    const tell = (reach: Reach, code: string): void => {
      told = true;
      this.tellBreaker(admitted, reach, code);
    };
    try {
      let res: HttpResponse;
      try {
        res = await sendHttp({ method: 'POST', origin: this.origin, path, headers, body, timeoutMs: this.o.timeoutMs, signal });
      } catch (err) {
        if (!(err instanceof TransportError)) throw err;
        const safe = err.phase === 'connect';
        tell(err.phase === 'aborted' ? 'abandoned' : safe || !isCreate ? 'unreachable' : 'unclear', err.connectFailure ?? err.code);
        // Abandoned before its connection was made: not one byte left.
        const unsent = err.phase === 'aborted' && !err.mayHaveBeenSent;
        throw new ApiError({
          endpoint,
          code: unsent ? NOT_SENT : err.code,
          msg: err.message,
          status: null,
          kind: safe || unsent ? 'retryable' : isCreate ? 'ambiguous' : 'retryable',
        });
      }
      tell(res.status < 500 ? 'reached' : isCreate ? 'unclear' : 'unreachable', `HTTP_${res.status}`);
      if (seen) seen.date = res.headers.get('date');
      return this.interpret(endpoint, res, isCreate, body);
    } catch (err) {
      outcome = err instanceof ApiError ? err.code : 'error';
      throw err;
    } finally {
      // A probe that ended without a verdict (an unexpected throw) must not leave the breaker waiting for it.
      if (!told) this.tellBreaker(admitted, 'abandoned', 'error');
      this.o.onCall?.({ endpoint, durationMs: performance.now() - started, outcome });
    }
  }

  /** What the breaker learns from one exchange; an unclear create counts only when it was the probe. */
  private tellBreaker(admitted: Admission, reach: Reach, code: string): void {
    const breaker = this.o.breaker;
    if (!breaker) return;
    if (reach === 'reached') breaker.answered();
    else if (reach === 'unreachable' || (reach === 'unclear' && admitted === 'probe')) breaker.failed(code);
    else if (reach === 'abandoned' && admitted === 'probe') breaker.probeAbandoned();
  }

  /** A call held back: the service is taken for unreachable and this call is not the probe. Nothing was sent. */
  private unreachable(endpoint: string): ApiError {
    const h = this.o.breaker?.health();
    return new ApiError({
      endpoint,
      code: SERVICE_UNREACHABLE,
      msg: `not sent: the payout service is unreachable${h?.lastErrorCode ? ` (${h.lastErrorCode})` : ''}`,
      status: null,
      kind: 'retryable',
    });
  }

  /** The answer `res` to the request whose body was `body`; an error's texts are cleaned of that request's values. */
  private interpret(endpoint: string, res: HttpResponse, isCreate: boolean, body: string): Json {
    // The request knows exactly which account and ID numbers an echo of it would show, in whatever format.
    // Not its code: codes are the service's own words (1009 is an expired token, whatever account was sent).
    let sent: SentValues | undefined;
    const clean = (text: string): string => this.clean(text, (sent ??= sentValues(body)));
    let envelope: Json | null = null;
    try {
      const parsed = parseLossless(res.text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) envelope = parsed as Json;
    } catch {
      // Not JSON (a proxy's HTML error page, say): judged by status below.
    }
    const code = envelope && typeof envelope.code === 'string' ? serviceText(envelope.code) : null;
    // Cleaned whole, then cut: a cut first could leave part of a secret that would no longer be recognised. Only
    // for an error: cleaning builds patterns of the request's values, which would cost more than a create's own work.
    const msgOf = (): string =>
      envelope && typeof envelope.msg === 'string' ? serviceText(clean(envelope.msg)).slice(0, MAX_SERVICE_MSG) : '';
    if (res.status === 429) {
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), this.clock.now());
      throw new ApiError({
        endpoint,
        code: code === null ? 'HTTP_429' : this.clean(code),
        msg: msgOf() || 'rate limited',
        status: 429,
        kind: 'retryable',
        retryAfterMs,
      });
    }
    if (res.status >= 500) {
      throw new ApiError({
        endpoint,
        code: 'HTTP_5XX',
        msg: msgOf() || 'server error',
        status: res.status,
        kind: isCreate ? 'ambiguous' : 'retryable',
      });
    }
    if (code === '0000' && res.status >= 200 && res.status < 300) {
      const data = envelope?.data;
      return data && typeof data === 'object' && !Array.isArray(data) ? (data as Json) : {};
    }
    if (code === null) {
      throw new ApiError({
        endpoint,
        code: res.status === 401 ? INVALID_ACCESS : 'BAD_RESPONSE',
        msg: `HTTP ${res.status} without a response envelope`,
        status: res.status,
        kind: res.status === 401 ? 'auth' : isCreate ? 'ambiguous' : 'retryable',
        serviceTimeMs: res.status === 401 ? parseHttpDate(res.headers.get('date')) : null,
      });
    }
    // Spec 7: a 401 is refused before processing, whatever its code says.
    const t = res.status === 401 ? { kind: 'auth' as const } : treatmentOf(code, this.treatments);
    // An unknown code on a read is not dangerous to repeat; on a create it must be resolved by query.
    const kind = t.kind === 'ambiguous' && !isCreate ? 'retryable' : t.kind;
    const retryAfterMs = code === RATE_LIMITED ? parseRetryAfter(res.headers.get('retry-after'), this.clock.now()) : null;
    // A refusal may be a clock out of the service's window: its Date header tells the service's time.
    const serviceTimeMs = res.status === 401 ? parseHttpDate(res.headers.get('date')) : null;
    // Treatments are looked up by the code as sent; errors, logs and reasons show it cleaned.
    throw new ApiError({
      endpoint,
      code: this.clean(code),
      msg: msgOf(),
      status: res.status,
      kind,
      waitForBalance: t.waitForBalance,
      retryAfterMs,
      serviceTimeMs,
    });
  }
}

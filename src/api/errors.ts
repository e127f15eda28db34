/**
 * ApiError: every failure of a call to the payout service, with what the daemon must do about it. A create whose
 * outcome cannot be known is `ambiguous` and must be resolved by a query, never by a blind re-create.
 */
import { PayoutdError } from '../domain/errors.js';

/**
 * - retryable: nothing happened; the same call may be made again after a delay.
 * - rejected: the service refused for good (bad parameter, unsupported currency…).
 * - ambiguous: the effect may or may not have happened; query before deciding.
 * - auth: credentials or signing are wrong; retrying will not help.
 */
export type ApiErrorKind = 'retryable' | 'rejected' | 'ambiguous' | 'auth';

/** How a business code is treated (contract: Business codes beyond the spec). */
export interface CodeTreatment {
  kind: ApiErrorKind;
  /** The batch should wait for the balance to be topped up (2001). */
  waitForBalance?: boolean;
}

export const DEFAULT_CODE_TREATMENTS: Readonly<Record<string, CodeTreatment>> = {
  '1004': { kind: 'auth' },
  '1009': { kind: 'auth' },
  '1010': { kind: 'auth' },
  '2001': { kind: 'retryable', waitForBalance: true },
  '2002': { kind: 'rejected' },
  '2003': { kind: 'rejected' },
  '2004': { kind: 'ambiguous' },
  '2005': { kind: 'rejected' },
  '1429': { kind: 'retryable' },
};

export const ACCESS_TOKEN_EXPIRED = '1009';
export const INVALID_ACCESS = '1004';
export const RATE_LIMITED = '1429';
/** The connection was never made: not one byte of the request left (src/api/http.ts, phase `connect`). */
export const TRANSPORT_CONNECT = 'TRANSPORT_CONNECT';
/** Not sent: the payout service is taken for unreachable and this call was not the probe (src/api/breaker.ts). */
export const SERVICE_UNREACHABLE = 'SERVICE_UNREACHABLE';
/**
 * Not sent: the call failed before one byte of its request left (credentials not obtained, signing, a rate-limit
 * pause or a backoff abandoned, an abort before the connection was made); its message says what failed.
 */
export const NOT_SENT = 'NOT_SENT';

export interface ApiErrorDetails {
  endpoint: string;
  /**
   * Envelope code, or one of ours: TRANSPORT_CONNECT / _TIMEOUT / _DROPPED / _ABORTED, HTTP_5XX, HTTP_429, BAD_RESPONSE,
   * SERVICE_UNREACHABLE, NOT_SENT.
   */
  code: string;
  /** The service's msg (or our description of a transport failure). */
  msg: string;
  /** HTTP status, when a response arrived. */
  status: number | null;
  kind: ApiErrorKind;
  waitForBalance?: boolean;
  /** From Retry-After on 429, ms. */
  retryAfterMs?: number | null;
  /** A refusal of the credentials (401): the service's clock as its Date header said, ms since epoch; null when absent. */
  serviceTimeMs?: number | null;
}

export class ApiError extends PayoutdError {
  override readonly name = 'ApiError';
  readonly endpoint: string;
  readonly status: number | null;
  readonly kind: ApiErrorKind;
  readonly msg: string;
  readonly waitForBalance: boolean;
  readonly retryAfterMs: number | null;
  readonly serviceTimeMs: number | null;

  constructor(d: ApiErrorDetails) {
    super(d.code, `${d.endpoint}: ${d.code}${d.status ? ` (HTTP ${d.status})` : ''} ${d.msg}`.trim());
    this.endpoint = d.endpoint;
    this.status = d.status;
    this.kind = d.kind;
    this.msg = d.msg;
    this.waitForBalance = d.waitForBalance ?? false;
    this.retryAfterMs = d.retryAfterMs ?? null;
    this.serviceTimeMs = d.serviceTimeMs ?? null;
  }

  /** The same failure, a note after the service's msg saying what to check (the setting a mismatch shows up through). */
  withNote(note: string): ApiError {
    return new ApiError({
      endpoint: this.endpoint,
      code: this.code,
      msg: this.msg ? `${this.msg}; ${note}` : note,
      status: this.status,
      kind: this.kind,
      waitForBalance: this.waitForBalance,
      retryAfterMs: this.retryAfterMs,
      serviceTimeMs: this.serviceTimeMs,
    });
  }

  override toLog(): { name: string; code: string; message: string; status: number | null; kind: ApiErrorKind } {
    return { name: this.name, code: this.code, message: this.message, status: this.status, kind: this.kind };
  }
}

export function isApiError(err: unknown, ...kinds: ApiErrorKind[]): err is ApiError {
  return err instanceof ApiError && (kinds.length === 0 || kinds.includes(err.kind));
}

/** The service asked to slow down: HTTP 429 or business code 1429 (with Retry-After). */
export function isRateLimit(err: ApiError): boolean {
  return err.status === 429 || err.code === RATE_LIMITED;
}

/**
 * The call provably never reached the service: no connection was made, it was held back while the service is
 * down, or it failed before its request left.
 */
export function neverSent(err: unknown): err is ApiError {
  return err instanceof ApiError && (err.code === TRANSPORT_CONNECT || err.code === SERVICE_UNREACHABLE || err.code === NOT_SENT);
}

/** Treatment of a business code; codes not in the table are ambiguous (query before deciding). */
export function treatmentOf(code: string, table: Readonly<Record<string, CodeTreatment>>): CodeTreatment {
  return table[code] ?? { kind: 'ambiguous' };
}

/** An HTTP date header (RFC 9110 IMF-fixdate) as ms since epoch; null when absent or unreadable. */
export function parseHttpDate(value: string | null): number | null {
  if (!value) return null;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : null;
}

/** Retry-After as ms: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number.parseInt(trimmed, 10) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

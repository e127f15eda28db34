/** The sandbox's errors. `ApiFailure` is an answer, not a crash: it carries the HTTP status and envelope code. */
import { PayoutdError } from '../domain/errors.js';

/** Misuse of the programmatic API (unknown merchant, bad amount text). */
export class SandboxError extends PayoutdError {
  override readonly name = 'SandboxError';
}

/** An envelope failure: HTTP status + business code + description. */
export class ApiFailure extends PayoutdError {
  override readonly name = 'ApiFailure';
  readonly httpStatus: number;

  constructor(httpStatus: number, apiCode: string, message: string) {
    super(apiCode, message);
    this.httpStatus = httpStatus;
  }
}

/** Business codes: spec section 7 plus the contract's table. */
export const API_CODES = {
  SUCCESS: '0000',
  INVALID_ACCESS: '1004',
  ACCESS_TOKEN_EXPIRED: '1009',
  REFRESH_TOKEN_EXPIRED: '1010',
  NOT_FOUND: '1404',
  PAYLOAD_TOO_LARGE: '1413',
  RATE_LIMITED: '1429',
  INTERNAL_ERROR: '1500',
  INSUFFICIENT_BALANCE: '2001',
  INVALID_PARAMETER: '2002',
  UNSUPPORTED_CURRENCY: '2003',
  DUPLICATE_REFERENCE: '2004',
  AMOUNT_OUT_OF_RANGE: '2005',
} as const;

// Business rule failures travel as HTTP 200 with their code in the envelope:
// the spec only names 401, and a client must read the envelope anyway.
export const invalidAccess = (msg: string): ApiFailure => new ApiFailure(401, API_CODES.INVALID_ACCESS, msg);
export const accessTokenExpired = (): ApiFailure => new ApiFailure(401, API_CODES.ACCESS_TOKEN_EXPIRED, 'access token expired');
export const refreshTokenExpired = (): ApiFailure => new ApiFailure(401, API_CODES.REFRESH_TOKEN_EXPIRED, 'refresh token expired');
export const invalidParameter = (msg: string): ApiFailure => new ApiFailure(200, API_CODES.INVALID_PARAMETER, msg);
export const unsupportedCurrency = (msg: string): ApiFailure => new ApiFailure(200, API_CODES.UNSUPPORTED_CURRENCY, msg);
export const amountOutOfRange = (msg: string): ApiFailure => new ApiFailure(200, API_CODES.AMOUNT_OUT_OF_RANGE, msg);
export const insufficientBalance = (msg: string): ApiFailure => new ApiFailure(200, API_CODES.INSUFFICIENT_BALANCE, msg);
export const duplicateReference = (msg: string): ApiFailure => new ApiFailure(200, API_CODES.DUPLICATE_REFERENCE, msg);

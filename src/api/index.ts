/** The payout service client: signed, token-managed, with classified errors. */
export {
  PayoutApiClient,
  ENDPOINTS,
  type PayoutApiClientOptions,
  type ApiCallRecord,
  type ExchangeRate,
  type Balance,
  type AuthMode,
  type ServiceClockReading,
} from './client.js';
export { ApiError, isApiError, DEFAULT_CODE_TREATMENTS, DUPLICATE_REFERENCE, type ApiErrorKind, type CodeTreatment } from './errors.js';
export type { Credentials } from './tokens.js';
export { ServiceBreaker, type BreakerOptions, type BreakerTransition } from './breaker.js';

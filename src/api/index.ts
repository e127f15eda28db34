/** The payout service client: signed, token-managed, with classified errors. */
export {
  PayoutApiClient,
  ENDPOINTS,
  type PayoutApiClientOptions,
  type ApiCallRecord,
  type Balance,
  type AuthMode,
  type ServiceClockReading,
} from './client.js';
export { ApiError, isApiError, DUPLICATE_REFERENCE } from './errors.js';
export type { Credentials } from './tokens.js';
export { ServiceBreaker, type BreakerOptions, type BreakerTransition } from './breaker.js';

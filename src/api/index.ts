/** The payout service client: signed, token-managed, with classified errors. */
export { PayoutApiClient, ENDPOINTS, type PayoutApiClientOptions, type ApiCallRecord, type ServiceClockReading } from './client.js';
export { ApiError } from './errors.js';
export { ServiceBreaker, type BreakerOptions, type BreakerTransition } from './breaker.js';

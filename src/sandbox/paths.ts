/** The URL paths the sandbox serves, in one list so routing, faults, stats and options cannot disagree. */

export const ACCESS_TOKEN_PATH = '/apis/v1/access-token';
export const REFRESH_TOKEN_PATH = '/apis/v1/refresh-token';
export const EXCHANGE_RATE_PATH = '/apis/v1/exchange-rate/query';
export const CREATE_PATH = '/apis/v1/fiat-payout/create';
export const QUERY_PATH = '/apis/v1/fiat-payout/query';
export const BALANCE_PATH = '/apis/v1/balance/query';

/** Every payout API path; fault `endpoints` must be chosen from these. */
export const API_PATHS = [ACCESS_TOKEN_PATH, REFRESH_TOKEN_PATH, EXCHANGE_RATE_PATH, CREATE_PATH, QUERY_PATH, BALANCE_PATH] as const;
export type ApiPath = (typeof API_PATHS)[number];

/** Spec 5.4: every /apis/v1 endpoint except the two token calls. */
export const BUSINESS_PATHS: readonly ApiPath[] = [EXCHANGE_RATE_PATH, CREATE_PATH, QUERY_PATH, BALANCE_PATH];

export const ADMIN_PREFIX = '/__sandbox/';

/** The payments domain: payouts, statuses, money as decimal text, error base. */
export * from './errors.js';
export * from './money.js';
export * from './payout.js';
export * from './clock.js';
export * from './backoff.js';
export * from './lease.js';
export * from './lifecycle.js';
export * from './request-values.js';
export * from './iso4217.js';
export * from './formula-text.js';
export * from './service-health.js';
export * from './holds.js';
export * from './time-zone.js';
export * from './ready-money.js';

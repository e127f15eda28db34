/** The payments domain: payouts, statuses, money as decimal text, error base. */
export * from './errors.js';
export * from './money.js';
export * from './payout.js';
export * from './clock.js';

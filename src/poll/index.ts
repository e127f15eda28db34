/** Following payouts to their final status. */
export { SettlementPoller, type PollerOptions } from './poller.js';
export { CallRate, MIN_RATE_SAMPLE, ROUND_HEADROOM, nextPollDelay, roundMs, pollIntervalBound, pollIsRecorded } from './schedule.js';

/** Following payouts to their final status. */
export { SettlementPoller, nextPollDelay, type PollerOptions, type PollerDeps } from './poller.js';

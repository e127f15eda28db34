/** Following payouts to their final status. */
export { SettlementPoller, type PollerOptions, type PollerDeps, type PollPass } from './poller.js';
export {
  CallRate,
  MIN_RATE_SAMPLE,
  ROUND_HEADROOM,
  nextPollDelay,
  roundMs,
  pollIntervalBound,
  pollIsRecorded,
  type PollLoad,
} from './schedule.js';

/** Submitting: READY rows become payouts, exactly once. */
export { PayoutSubmitter, type SubmitterOptions } from './submitter.js';

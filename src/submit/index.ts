/** Submitting: READY rows become payouts, exactly once. */
export { PayoutSubmitter, type SubmitterOptions, type SubmitterDeps } from './submitter.js';

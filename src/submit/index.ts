/** Submitting: READY rows become payouts, exactly once. */
export { PayoutSubmitter, type SubmitterOptions, type SubmitterDeps, type SendingHolds } from './submitter.js';

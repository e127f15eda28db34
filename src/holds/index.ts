/**
 * Holds: every decision to hold a batch or let it go (a file changed after
 * it was taken, a balance that will not cover it), with one hold type
 * (src/domain/holds.ts). The intake, the submitter and the daemon's loops
 * call BatchHolds; nothing else holds a batch.
 */
export { BatchHolds, type BalanceCheck, type ContinuedUpload, type TakenFileNews } from './batch-holds.js';
export { BalanceGate, type BalanceGateOptions } from './balance-gate.js';
export { balanceRefusedHold, balanceShortHold, fileChangedHold } from './decide.js';
export { holdForApproval, releaseApproved } from './approval-hold.js';

/**
 * Approval before money moves: a batch over the policy's thresholds or
 * limits waits, held AWAITING_APPROVAL, until approvers other than its
 * uploader approve it (CLI, SFTP approval file or web console, all through
 * decideApproval), is rejected, or expires. Limits are checked at acceptance
 * and again at release. See docs/approval.md.
 */
export {
  decideApproval,
  approvalDepsFrom,
  figuresOf,
  reasonsOf,
  ROLLING_WINDOW_MS,
  type ApprovalDeps,
  type ApprovalEvent,
  type ApprovalEvents,
  type ApprovalOutcome,
  type ApprovalRequest,
  type ApprovalResult,
  type ApprovalVia,
} from './decide.js';
export { ApprovalError, isApprovalError, type ApprovalErrorCode } from './errors.js';
export { approvalAtAcceptance, expireDueApprovals, type GateVerdict } from './gate.js';
export { readApproval, approvalViewOf, approvalAuditText, decisionText, type ApprovalView, type ApprovalDecisionView } from './audit.js';
export { ApprovalFiles, parseApprovalFile, type ApprovalFileOptions, type ApprovalFileContent } from './files.js';
export {
  assess,
  limitBreaches,
  thresholdReasons,
  mayApprove,
  totalsText,
  awaitingApprovalText,
  type ApprovalPolicy,
  type ApprovalReason,
  type Assessment,
  type BatchFigures,
} from './policy.js';
export { SystemUsers, type UserDirectory, type SystemUserOptions } from './users.js';
export { rulesWithRowLimits } from './row-limits.js';

/**
 * Approval before money moves: a batch over the policy's thresholds or
 * limits waits, held AWAITING_APPROVAL, until approvers other than its
 * uploader approve it (CLI, SFTP approval file or web console, all through
 * decideApproval), is rejected, or expires. Limits are checked at acceptance
 * and again at release. See docs/approval.md.
 */
export {
  decideApproval,
  decideWhenReady,
  figuresOf,
  reasonsOf,
  shownRound,
  READY_WAIT_MS,
  approvalDepsFrom,
  type ApprovalDeps,
  type ApprovalRequest,
} from './decide.js';
export { ApprovalError, isApprovalError, PRIVATE_FILE_HOWTO } from './errors.js';
export { approvalAtAcceptance, expireDueApprovals } from './gate.js';
export { readApproval, approvalAuditText, decisionText, uploaderOf, type ApprovalView } from './audit.js';
export { ApprovalFiles, approvalsFolderRisk, othersMayWrite, parseApprovalFile } from './files.js';
export { assess, otherCurrenciesWarning, totalsText, type ApprovalPolicy } from './policy.js';
export { SystemUsers, type UserDirectory } from './users.js';
export { rulesWithRowLimits } from './row-limits.js';

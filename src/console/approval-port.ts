/**
 * The console's approvals through src/approval: a batch's approval state read as the CLI and result files
 * read it, and decisions taken with decideApproval (via 'console', the signed-in user as approver), so a
 * console decision is the same audit record as one from the command line or an approval file.
 */
import { decideApproval, isApprovalError, readApproval, type ApprovalDeps } from '../approval/index.js';
import type { Approvals, ApprovalView } from './approvals.js';
import { ConsoleError } from './errors.js';

const SHOWN_DECISIONS = new Set(['approve', 'reject', 'expire', 'void', 'reopen', 'refuse-limit', 'cancel']);

export function approvalsThrough(deps: ApprovalDeps): Approvals {
  return {
    available: true,
    async read(batchId): Promise<ApprovalView | null> {
      const v = await readApproval(deps.db, batchId);
      if (!v || v.state === 'NONE') return null;
      return {
        awaiting: v.state === 'REQUIRED',
        reason: v.reasons.map((r) => r.text).join('; ') || null,
        uploadedBy: v.uploadedBy,
        decisions: v.decisions
          .filter((d) => SHOWN_DECISIONS.has(d.decision))
          .map((d) => ({ decision: d.decision, approver: d.approver ?? 'payoutd', via: d.via, at: Date.parse(d.at), comment: d.comment })),
      };
    },
    async decide(d): Promise<string> {
      try {
        const r = await decideApproval(deps, {
          batchId: d.batchId,
          sha256: d.sha256,
          decision: d.decision,
          approver: d.approver,
          via: 'console',
          round: d.round,
          comment: d.decision === 'approve' ? d.comment : undefined,
          reason: d.decision === 'reject' ? d.comment : undefined,
        });
        return r.message;
      } catch (err) {
        if (isApprovalError(err)) throw new ConsoleError(err.code, err.message);
        throw err;
      }
    },
  };
}

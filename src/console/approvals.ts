/**
 * The console's seam to batch approvals (src/approval): what a batch's
 * approval stands at, and a decision taken in the console, recorded the
 * same way as one made from the command line or by file. Until a build has
 * approvals, `noApprovals` says so and refuses every decision.
 */
import { ConsoleError } from './errors.js';

export interface ApprovalDecisionRecord {
  decision: string;
  approver: string;
  via: string;
  at: number;
  comment: string | null;
}

export interface ApprovalView {
  /** The batch waits for a decision. */
  awaiting: boolean;
  /** Why it waits (the policy that asked for an approval), in words. */
  reason: string | null;
  /** Who uploaded the batch, as the approval audit has it (a console upload: the console user). */
  uploadedBy?: string | null;
  decisions: ApprovalDecisionRecord[];
}

export interface ApprovalDecision {
  batchId: string;
  /** The hash the approver was shown: a decision about other bytes is refused. */
  sha256: string;
  decision: 'approve' | 'reject';
  approver: string;
  via: 'console';
  comment?: string;
  /** The approval round the approver's page showed (from 1): an approval of an earlier one is refused. */
  round: number | null;
}

export interface Approvals {
  readonly available: boolean;
  read(batchId: string): Promise<ApprovalView | null>;
  /** Records the decision; says in a sentence what became of the batch. */
  decide(decision: ApprovalDecision): Promise<string>;
}

export const noApprovals: Approvals = {
  available: false,
  read: () => Promise.resolve(null),
  decide: () => Promise.reject(new ConsoleError('APPROVALS_UNAVAILABLE', 'this payoutd has no batch approvals')),
};

/** Why an approval or rejection was refused: a code for programs, words for the person who tried. */
import { PayoutdError } from '../domain/errors.js';

export type ApprovalErrorCode =
  | 'APPROVAL_BAD_REQUEST' // no batch id, no SHA-256 of the right shape, no approver
  | 'APPROVAL_REASON_REQUIRED' // a rejection without a reason
  | 'APPROVAL_UNKNOWN_BATCH'
  | 'APPROVAL_NOT_READY' // the batch is still being read: its ack comes first
  | 'APPROVAL_NOT_REQUIRED' // the batch does not wait for approval
  | 'APPROVAL_ALREADY_DECIDED' // approved, rejected or expired already, or this approver already approved
  | 'APPROVAL_EXPIRED' // decided after the batch's deadline (approval.expiresAfter): the decision ends it expired instead
  | 'APPROVAL_HASH_MISMATCH' // the SHA-256 given is not the batch's
  | 'APPROVAL_FILE_CHANGED' // the batch's file changed after it was taken: approvals are void
  | 'APPROVAL_STALE' // an approval for an earlier round than the batch's: it was reopened since, shown other figures
  | 'APPROVAL_OWN_UPLOAD' // the uploader cannot approve their own batch
  | 'APPROVAL_UPLOADER_UNKNOWN' // no uploader recorded for the batch: no approver can be told apart from it
  | 'APPROVAL_UNKNOWN_USER' // the approver has no user name, or no uid when the uploader is known by uid only
  | 'APPROVAL_NOT_ALLOWED' // not an approver under approval.approvers
  | 'APPROVAL_AS_NOT_ALLOWED' // --as from a user who is not a configured service account
  | 'APPROVAL_DECISION_MISMATCH' // an approval file whose stated decision is not its name's (renamed or linked)
  | 'APPROVAL_FILE_SHARED' // an approval file with more than one hard link, or writable by group or others
  | 'APPROVAL_BAD_FILE'; // an approval file that cannot be read as one

export class ApprovalError extends PayoutdError {
  override readonly name = 'ApprovalError';
  declare readonly code: ApprovalErrorCode;

  /**
   * Facts for the reply file and the log beside the message (the owner, mode and links of a refused file, say):
   * never a secret.
   */
  readonly details: Readonly<Record<string, string>>;

  constructor(code: ApprovalErrorCode, message: string, details: Record<string, string> = {}) {
    super(code, message);
    this.details = details;
  }
}

/**
 * How to make a file whose owner proves who wrote it. A chmod afterwards is no cure: whoever could write the file
 * meanwhile may keep it open, or keep a link to it, and write through that later.
 */
export const PRIVATE_FILE_HOWTO =
  'as a NEW file created private from the start (umask 022; over SFTP the server can set it: ForceCommand internal-sftp -u 0022), ' +
  'not as a link, and not a group-writable file chmod-ed afterwards';

export function isApprovalError(err: unknown): err is ApprovalError {
  return err instanceof ApprovalError;
}

/** The errors of the inbox, each with a stable code; messages name files and folders, never contents. */
import { PayoutdError } from '../../domain/errors.js';

export type InboxErrorCode =
  /** The inotify watch limit is reached (ENOSPC from the file watcher). */
  | 'INBOX_WATCH_LIMIT'
  /** Any other error reported by the file watcher. */
  | 'INBOX_WATCH_ERROR'
  /** The inbox folder cannot be resolved or listed. */
  | 'INBOX_UNREADABLE'
  /** An entry of the inbox cannot be examined (lstat failed other than ENOENT). */
  | 'INBOX_STAT_FAILED'
  /** Storage is on another filesystem than the inbox: a rename cannot be atomic. */
  | 'INBOX_CROSS_DEVICE'
  /** A file in the inbox payoutd may not open (its mode or owner): left in place and reported, taken once readable. */
  | 'INBOX_FILE_UNREADABLE'
  /** A claim could not move or read the file. */
  | 'INBOX_CLAIM_FAILED'
  /** The file changed while being claimed and could not be put back. */
  | 'INBOX_CLAIM_RACE'
  /** A file could not be moved aside into the rejected folder. */
  | 'INBOX_MOVE_ASIDE_FAILED'
  /** The file to move aside is gone. */
  | 'INBOX_GONE'
  /** A `<name>.done` marker left alone (no file of its name) could not be removed. */
  | 'INBOX_MARKER_REMOVE_FAILED'
  /** A callback of the caller (onCandidateReady, onRejected) threw. */
  | 'INBOX_CALLBACK_FAILED';

export class InboxError extends PayoutdError {
  override readonly name = 'InboxError';
  declare readonly code: InboxErrorCode;

  constructor(code: InboxErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** The errno code of a Node fs error, if it has one. */
export function errnoCode(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string') return error.code;
  return undefined;
}

/** EACCES or EPERM: a file's mode, owner or an access rule keeps payoutd out (a passing error would say otherwise). */
export function isPermissionDenied(error: unknown): boolean {
  const code = errnoCode(error);
  return code === 'EACCES' || code === 'EPERM';
}

/** A short, loggable description of an unknown error: PayoutdErrors are safe by construction, others give only their code or name. */
export function describeError(error: unknown): string {
  if (error instanceof PayoutdError) return `${error.code}: ${error.message}`;
  const code = errnoCode(error);
  if (code !== undefined) return code;
  return error instanceof Error ? error.name : typeof error;
}

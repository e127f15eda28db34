/** The folders under paths.stateDir that files from the configured folders are renamed into: the daemon's and its start check's. */
import { join } from 'node:path';
import { claimedDirOf } from '../ingest/index.js';

export interface StateFolders {
  /** Files taken from the inbox. */
  claimed: string;
  /** Files refused, moved aside with their reason. */
  rejected: string;
  /** Approval files taken from paths.approvals. */
  approvalFiles: string;
}

export function stateFolders(stateDir: string): StateFolders {
  return { claimed: claimedDirOf(stateDir), rejected: join(stateDir, 'rejected'), approvalFiles: join(stateDir, 'approval-files') };
}

/**
 * `payoutd approve` and `payoutd reject`: an operator's decision on a batch
 * waiting for approval, through the same decideApproval as approval files
 * and the console. The approver is the Unix user who runs the command: under
 * `sudo -u payoutd`, the invoking user (SUDO_UID, cross-checked with
 * SUDO_USER). `--as NAME` names another approver, and only a configured
 * service account may use it.
 */
import type { ResolvedConfig } from '../../config/index.js';
import {
  ApprovalError,
  approvalDepsFrom,
  decideWhenReady,
  READY_WAIT_MS,
  SystemUsers,
  type ApprovalRequest,
  type UserDirectory,
} from '../../approval/index.js';
import { getBatch } from '../../store/index.js';
import { sleep } from '../../domain/backoff.js';
import { print } from '../output.js';
import { withCurrentStore } from './state-database.js';

export interface Invoker {
  name: string;
  uid: number;
}

/** Who runs this command: the sudo caller when sudo switched users, else the process's own user. */
export async function invokingUser(env: NodeJS.ProcessEnv, uid: number, users: UserDirectory): Promise<Invoker> {
  const sudoUid = env.SUDO_UID !== undefined && /^\d+$/.test(env.SUDO_UID) ? Number(env.SUDO_UID) : null;
  if (sudoUid !== null && sudoUid !== uid) {
    const name = await users.nameOfUid(sudoUid);
    if (name === null) throw new ApprovalError('APPROVAL_UNKNOWN_USER', `the invoking uid ${sudoUid} (SUDO_UID) has no user name`);
    if (env.SUDO_USER !== undefined && env.SUDO_USER !== name) {
      throw new ApprovalError('APPROVAL_UNKNOWN_USER', `SUDO_USER ${env.SUDO_USER} is not the user of SUDO_UID ${sudoUid} (${name})`);
    }
    return { name, uid: sudoUid };
  }
  const name = await users.nameOfUid(uid);
  if (name === null) throw new ApprovalError('APPROVAL_UNKNOWN_USER', `uid ${uid} has no user name on this system`);
  return { name, uid };
}

export interface DecisionArgs {
  batch: string;
  sha256?: string;
  as?: string;
  comment?: string;
  reason?: string;
  /** The approval round approved, from the ack or status (absent: the first). */
  round?: number;
}

export async function decideFromCli(config: ResolvedConfig, decision: 'approve' | 'reject', a: DecisionArgs): Promise<void> {
  const users = new SystemUsers();
  const invoker = await invokingUser(process.env, process.getuid?.() ?? -1, users);
  let approver = invoker.name;
  let agent: string | null = null;
  if (a.as !== undefined) {
    if (!config.approval.serviceAccounts.includes(invoker.name)) {
      throw new ApprovalError(
        'APPROVAL_AS_NOT_ALLOWED',
        `--as is for the service accounts of approval.serviceAccounts; ${invoker.name} is not one: decide as yourself`,
      );
    }
    approver = a.as;
    agent = invoker.name;
  }
  await withCurrentStore(config, async (db) => {
    // Without --sha256 the operator approves the file as acknowledged; the file on disk is checked against it.
    const sha256 = a.sha256 ?? (await getBatch(db, a.batch))?.sha256 ?? '0'.repeat(64);
    const request: ApprovalRequest = {
      batchId: a.batch,
      sha256,
      decision,
      approver,
      approverUid: agent === null ? invoker.uid : null,
      agent,
      via: 'cli',
      comment: a.comment,
      reason: a.reason,
      round: a.round ?? null,
    };
    const result = await decideWhenReady(approvalDepsFrom(config, db, { users, instanceId: `cli:${invoker.name}` }), request, {
      sleep,
      maxWaitMs: READY_WAIT_MS,
      stepMs: 1000,
      onWait: (id) =>
        process.stderr.write(
          `payoutd: batch ${id} is still being acknowledged; waiting for it (up to ${READY_WAIT_MS / 60_000} minutes, Ctrl-C stops)\n`,
        ),
    });
    print(result.message);
  });
}

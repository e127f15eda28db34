/**
 * PostgreSQL: approval with two `payoutd run` instances on one inbox, one
 * approvals folder and one database. Both look at every approval file;
 * each is taken and applied once (one decision, one reply), two approvers'
 * files for one batch landing at once release it once, and the same
 * approver by command and by file at once counts once. Nothing is paid
 * before release, and every row once after it.
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, childEnv, ledgerByReference, startE2e, waitFor, type BatchStatus } from '../e2e/harness.js';
import { IS_ROOT, WHY_SKIPPED, approvalText, dropOwned, machineUsers, phpCsv, waitForReply } from '../e2e/approval-world.js';
import { startInstances } from './instances.js';
import { pgReachable, useTestSchema } from './pg.js';

const run = promisify(execFile);

interface Decision {
  decision: string;
  approver: string | null;
  via: string;
}
type WithApproval = BatchStatus & { approval?: { state: string; decisions: Decision[] } | null };

const skip = !pgReachable || !IS_ROOT;
const why = !IS_ROOT ? ` (skipped: ${WHY_SKIPPED})` : '';

describe.skipIf(skip)(`postgres: approval with two instances${why}`, { timeout: 180_000 }, () => {
  const schema = useTestSchema();

  it('each approval is applied once, whichever instance sees it', async () => {
    const [uploader, alice, bob] = machineUsers(3) as [
      { name: string; uid: number },
      { name: string; uid: number },
      { name: string; uid: number },
    ];
    const e2e = await startE2e();
    const approvals = join(e2e.dir, 'approvals');
    await mkdir(approvals);
    const instances = await startInstances(e2e, schema, {
      paths: { approvals },
      inbox: { usePolling: true, stableForMs: 200, rescanIntervalMs: 300 },
      instance: { leaseMs: 5000 },
      api: { timeoutMs: 2400 }, // under half the lease (config refuses more)
      approval: { required: 'always', approvals: 2, approvers: { users: [alice.name, bob.name] } },
    });
    await instances.configure('one');
    await instances.configure('two');
    expect((await instances.cli('one', ['migrate'])).code).toBe(0);
    await Promise.all([instances.start('one'), instances.start('two')]);
    const staging = join(e2e.dir, 'staging');

    await dropOwned(staging, e2e.inbox, 'pa.csv', phpCsv('PGA', 3, '100.00'), uploader.uid);
    await dropOwned(staging, e2e.inbox, 'pb.csv', phpCsv('PGB', 2, '100.00'), uploader.uid);
    const waiting = await e2e.waitForBatches(
      (bs) => {
        const w = (bs as WithApproval[]).filter((b) => b.state === 'ACTIVE' && b.holdCode === 'AWAITING_APPROVAL');
        return w.length === 2 ? w : undefined;
      },
      'both batches waiting for approval',
      40_000,
    );
    const a = waiting.find((b) => b.fileName === 'pa.csv') as WithApproval;
    const b = waiting.find((x) => x.fileName === 'pb.csv') as WithApproval;

    // Batch A: both approvers' files land together; one instance may take one and the other the other.
    await Promise.all([
      dropOwned(staging, approvals, `${a.id}.alice.approve`, approvalText(a.id, a.sha256), alice.uid),
      dropOwned(staging, approvals, `${a.id}.bob.approve`, approvalText(a.id, a.sha256), bob.uid),
    ]);
    const replyA = await Promise.all([
      waitForReply(e2e.outbox, `${a.id}.alice.approve`, 0, 30_000),
      waitForReply(e2e.outbox, `${a.id}.bob.approve`, 0, 30_000),
    ]);
    expect(replyA.map((r) => r.fields.result)).toEqual(['APPLIED', 'APPLIED']);
    expect(replyA.map((r) => r.fields.outcome).sort()).toEqual(['recorded', 'released']);

    // Batch B: Alice by command and by file at the same moment: one of them counts, the other is refused.
    const cli = run(process.execPath, [BIN, 'approve', '--batch', b.id, '--config', instances.configPath('two')], {
      cwd: e2e.dir,
      env: { ...childEnv(), SUDO_UID: String(alice.uid), SUDO_USER: alice.name },
    }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (err: { code: number; stderr: string }) => ({ code: err.code, out: err.stderr }),
    );
    await dropOwned(staging, approvals, `${b.id}.approve`, approvalText(b.id, b.sha256), alice.uid);
    const [cliResult, fileReply] = await Promise.all([cli, waitForReply(e2e.outbox, `${b.id}.approve`, 0, 30_000)]);
    const applied = [cliResult.code === 0, fileReply.fields.result === 'APPLIED'].filter(Boolean).length;
    expect(applied, `${cliResult.out} / ${JSON.stringify(fileReply.fields)}`).toBe(1);
    expect(cliResult.code === 0 ? fileReply.fields.code : cliResult.out).toContain('APPROVAL_ALREADY_DECIDED');
    // B still waits for its second approver: nothing of it is paid.
    expect(e2e.ledger().filter((l) => l.merchantReferenceId.startsWith('PGB-'))).toEqual([]);
    await dropOwned(staging, approvals, `${b.id}.approve`, approvalText(b.id, b.sha256), bob.uid);
    await waitForReply(e2e.outbox, `${b.id}.approve`, 1, 30_000);

    const done = (await e2e.waitForBatches(
      (bs) => (bs.filter((x) => x.state === 'COMPLETE').length === 2 ? bs : undefined),
      'both batches paid',
      40_000,
    )) as WithApproval[];
    for (const x of done) {
      const approves = x.approval?.decisions.filter((d) => d.decision === 'approve') ?? [];
      expect(approves.map((d) => d.approver).sort(), x.fileName).toEqual([alice.name, bob.name].sort());
      expect(x.approval?.state).toBe('APPROVED');
    }
    // One reply per approval file taken, whichever instance took it; every row paid once.
    const replies = (await readdir(e2e.outbox)).filter((n) => n.endsWith('.reply.txt'));
    const taken = [
      ...(await readdir(join(instances.stateDir('one'), 'approval-files')).catch(() => [] as string[])),
      ...(await readdir(join(instances.stateDir('two'), 'approval-files')).catch(() => [] as string[])),
    ];
    expect(replies.length).toBe(taken.length);
    const perRef = ledgerByReference(e2e.ledger());
    expect(e2e.ledger()).toHaveLength(5);
    expect([...perRef.values()].every((l) => l.length === 1)).toBe(true);
    await waitFor(() => instances.logs('approval file applied').length >= 3, 'the applied approvals logged');
  });
});

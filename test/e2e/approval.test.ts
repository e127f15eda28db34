/**
 * Approval before money moves, with the real `payoutd run`: a batch over the
 * threshold waits and nothing of it reaches the sandbox; the uploader's own
 * approval is refused; another user's approval (an approval file whose owner
 * is set with chown) releases it; six eyes needs two distinct approvers;
 * a rejection and an expiry end it NOT_SUBMITTED; a changed file voids
 * approval; an approved batch has its balance checked before its first
 * payout; the rolling 24-hour limit holds across two batches, and an
 * approval given on a 24-hour total that grew since asks again; a currency
 * no threshold or limit names is warned of at start, and held with
 * approval.otherCurrencies; and bad approval files are refused with a reply while the daemon keeps running.
 */
import { execFile } from 'node:child_process';
import { appendFile, chmod, chown, link, mkdir, readdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, MERCHANT_CODE, childEnv, startE2e, waitFor, type BatchStatus, type E2e } from './harness.js';
import { SftpServer, sftpSkipReason } from '../support/sftp.js';
import { makeRows, toCsv } from './batch-files.js';
import { IS_ROOT, WHY_SKIPPED, approvalText, dropOwned, machineUsers, phpCsv, unknownUid, waitForReply } from './approval-world.js';

const run = promisify(execFile);

interface ApprovalJson {
  state: string;
  uploadedBy: string | null;
  needed: number;
  given: string[];
  sha256: string;
  figures: { totals: Record<string, string>; rows: number };
  decisions: { decision: string; approver: string | null; via: string; comment: string | null }[];
}

type WithApproval = BatchStatus & { approval?: ApprovalJson | null };

const [UPLOADER, ALICE, BOB, OUTSIDER] = IS_ROOT ? machineUsers(4) : [];

async function world(approval: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<E2e & { approvals: string }> {
  const e2e = await startE2e();
  const approvals = join(e2e.dir, 'approvals');
  await mkdir(approvals);
  await e2e.writeConfig({
    paths: { approvals },
    approval: { approvers: { users: [UPLOADER?.name, ALICE?.name, BOB?.name] }, ...approval },
    ...extra,
  });
  return Object.assign(e2e, { approvals });
}

async function batchOf(e2e: E2e, fileName: string, pick: (b: WithApproval) => boolean, what: string): Promise<WithApproval> {
  return e2e.waitForBatches((bs) => (bs as WithApproval[]).find((b) => b.fileName === fileName && pick(b)), what, 20_000);
}

const awaiting = (b: WithApproval): boolean => b.state === 'ACTIVE' && b.holdCode === 'AWAITING_APPROVAL';

/** The references the sandbox paid, sorted. */
const paidReferences = (e2e: E2e): string[] =>
  e2e
    .ledger()
    .map((l) => l.merchantReferenceId)
    .sort();

/** Drops a batch file owned by the uploader and waits until it waits for approval. */
async function dropAwaiting(e2e: E2e, name: string, csv: string): Promise<WithApproval> {
  await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, name, csv, (UPLOADER as { uid: number }).uid);
  return batchOf(e2e, name, awaiting, `${name} to wait for approval`);
}

async function approvalFile(e2e: E2e & { approvals: string }, name: string, content: string | Uint8Array, uid: number): Promise<void> {
  await dropOwned(join(e2e.dir, 'staging'), e2e.approvals, name, content, uid);
}

/** `payoutd approve|reject` as if run by `user` through sudo. */
async function cliAs(
  e2e: E2e,
  user: { name: string; uid: number },
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [BIN, ...args, '--config', e2e.configPath], {
      cwd: e2e.dir,
      env: { ...childEnv(), SUDO_UID: String(user.uid), SUDO_USER: user.name },
    });
    return { code: 0, ...r };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

// Each test is a daemon's life of several decisions, each a round trip through the folders: more than the default time.
describe.skipIf(!IS_ROOT)(`approval end to end${IS_ROOT ? '' : ` (skipped: ${WHY_SKIPPED})`}`, { timeout: 180_000 }, () => {
  it('a batch over the threshold waits; the uploader cannot approve it; another user releases it', async () => {
    const e2e = await world({ required: 'above-thresholds', thresholds: { batchTotal: { PHP: '1000' } } });
    const daemon = await e2e.startDaemon();
    const u = UPLOADER as { name: string; uid: number };
    const a = ALICE as { name: string; uid: number };

    // Below the threshold: paid at once, as without approval.
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'small.csv', phpCsv('SMALL', 2, '400.00'), u.uid);
    const small = await batchOf(e2e, 'small.csv', (b) => b.state === 'COMPLETE', 'small.csv to be paid');
    expect(small.approval?.state).toBe('NONE');

    const b = await dropAwaiting(e2e, 'big.csv', phpCsv('BIG', 3, '500.25'));
    expect(b.approval?.uploadedBy).toBe(u.name);
    expect(b.approval?.figures.totals).toEqual({ PHP: '1500.75' });
    const ack = await e2e.waitForOutbox(b, 'ack');
    const held = ack.rows.find((r) => r.verdict === 'HELD');
    // The totals line says who lets it go: approvers, not an operator's release (which refuses it).
    const total = ack.totals[0];
    expect(total?.reason).toContain('Batch HELD: no row is paid until the batch is approved by its approvers');
    expect(total?.reason).not.toContain('releases');
    expect(held?.reason).toContain('AWAITING APPROVAL');
    expect(held?.reason).toContain('1500.75 PHP');
    expect(held?.reason).toContain(b.sha256);
    expect(held?.reason).toContain(`${b.id}.approve`);

    // The uploader's own approval file is refused, with a reply saying why.
    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256), u.uid);
    const own = await waitForReply(e2e.outbox, `${b.id}.approve`);
    expect(own.fields).toMatchObject({ result: 'REFUSED', code: 'APPROVAL_OWN_UPLOAD' });
    // Nothing of the waiting batch reached the sandbox.
    expect(e2e.ledger().filter((l) => l.merchantReferenceId.startsWith('BIG-'))).toEqual([]);
    expect((await batchOf(e2e, 'big.csv', () => true, 'big.csv')).holdCode).toBe('AWAITING_APPROVAL');

    // Another approver's file releases it.
    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256, 'comment: checked against the invoices\n'), a.uid);
    const ok = await waitForReply(e2e.outbox, `${b.id}.approve`, 1);
    expect(ok.fields).toMatchObject({ result: 'APPLIED', outcome: 'released', approver: a.name });
    const done = await batchOf(e2e, 'big.csv', (x) => x.state === 'COMPLETE', 'big.csv to be paid');
    expect(done.approval?.state).toBe('APPROVED');
    expect(done.approval?.decisions).toMatchObject([
      { decision: 'approve', approver: a.name, via: 'sftp', comment: 'checked against the invoices' },
    ]);
    expect(e2e.ledger().filter((l) => l.merchantReferenceId.startsWith('BIG-'))).toHaveLength(3);

    // The audit in the result and summary files, and in status --batch.
    const result = await e2e.waitForOutbox(b, 'result');
    expect(result.header.at(-1)).toBe('approval');
    expect(result.rows[0]?.approval).toContain(`approved by ${a.name} (sftp)`);
    expect(result.rows[0]?.approval).toContain(b.sha256);
    const summary = await e2e.waitForOutbox(b, 'summary');
    expect(summary.rows[0]?.approval).toContain(`approved by ${a.name}`);
    const smallResult = await e2e.waitForOutbox(small, 'result');
    expect(smallResult.header).not.toContain('approval');
    const status = await e2e.cli(['status', '--batch', b.id]);
    expect(status.stdout).toContain('approval: APPROVED');
    expect(status.stdout).toContain(`uploaded by: ${u.name}`);
    expect(status.stdout).toContain(`approved by ${a.name} (sftp)`);

    // The reconciliation report carries it too.
    const rec = await e2e.cli(['report', '--since', '2000-01-01', '--out', join(e2e.dir, 'rec.csv')]);
    expect(rec.code).toBe(0);
    const { readOutboxCsv } = await import('./harness.js');
    const recCsv = await readOutboxCsv(join(e2e.dir, 'rec.csv'));
    expect(recCsv.rows.find((r) => r.batch_id === b.id)?.approval).toContain(`approved by ${a.name}`);
    expect(recCsv.rows.find((r) => r.batch_id === small.id)?.approval).toBe('');
    expect(daemon.exited).toBeNull();
  });

  it('six eyes needs two distinct approvers; the CLI and a file count the same way', async () => {
    const e2e = await world({ required: 'always', approvals: 2 });
    await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    const bob = BOB as { name: string; uid: number };
    const b = await dropAwaiting(e2e, 'six.csv', phpCsv('SIX', 2, '10.00'));

    const first = await cliAs(e2e, a, ['approve', '--batch', b.id, '--comment', 'first look']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('1 of 2');
    // The same person again, by file: refused.
    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${b.id}.approve`)).fields).toMatchObject({
      result: 'REFUSED',
      code: 'APPROVAL_ALREADY_DECIDED',
    });
    expect(e2e.ledger()).toEqual([]);
    expect((await batchOf(e2e, 'six.csv', () => true, 'six.csv')).holdCode).toBe('AWAITING_APPROVAL');

    // `release` does not stand in for an approval.
    const release = await e2e.cli(['release', '--batch', b.id]);
    expect(release.code).toBe(1);
    expect(release.stderr).toContain('APPROVAL_REQUIRED');

    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256), bob.uid);
    expect((await waitForReply(e2e.outbox, `${b.id}.approve`, 1)).fields).toMatchObject({ result: 'APPLIED', outcome: 'released' });
    const done = await batchOf(e2e, 'six.csv', (x) => x.state === 'COMPLETE', 'six.csv paid');
    expect(done.approval?.decisions.map((d) => [d.approver, d.via])).toEqual([
      [a.name, 'cli'],
      [bob.name, 'sftp'],
    ]);
    // A replay after the decision is refused and changes nothing.
    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256), bob.uid);
    expect((await waitForReply(e2e.outbox, `${b.id}.approve`, 2)).fields).toMatchObject({
      result: 'REFUSED',
      code: 'APPROVAL_ALREADY_DECIDED',
    });
    expect(e2e.ledger()).toHaveLength(2);
  });

  it('an approved batch has its balance checked before its first payout: short, it waits and nothing is sent', async () => {
    const e2e = await world({ required: 'always' }, { batch: { balanceCheck: { enabled: true, recheckMs: 500 } } });
    await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    const b = await dropAwaiting(e2e, 'late.csv', phpCsv('LATE', 2, '500.00'));
    // While the batch waited, the balance went to other payments.
    e2e.sandbox.setBalance(MERCHANT_CODE, 'USDT', '1');

    const approved = await cliAs(e2e, a, ['approve', '--batch', b.id]);
    expect(approved.code, approved.stderr).toBe(0);
    const short = await batchOf(e2e, 'late.csv', (x) => x.holdCode === 'INSUFFICIENT_BALANCE', 'late.csv held for its balance');
    expect(short.approval?.state).toBe('APPROVED');
    expect(short.holdReason).toMatch(/insufficient balance: needs about [\d.]+ USDT, 1 available/);
    // Held before its first create: none was sent, not even one the service refused.
    expect(e2e.ledger()).toEqual([]);
    expect(e2e.sandbox.stats().businessErrors['2001'] ?? 0).toBe(0);

    // Topped up: the next check lets it go, and it is paid.
    e2e.sandbox.setBalance(MERCHANT_CODE, 'USDT', '1000000');
    await batchOf(e2e, 'late.csv', (x) => x.state === 'COMPLETE', 'late.csv paid');
    expect(paidReferences(e2e)).toEqual(['LATE-0001', 'LATE-0002']);
  });

  it('a batch not approved in time ends NOT_SUBMITTED, and a late approval is refused', async () => {
    const e2e = await world({ required: 'always', expiresAfter: 2000 });
    await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'late.csv', phpCsv('LATE', 2, '10.00'), (UPLOADER as { uid: number }).uid);
    // Not waited for in its waiting state: on a slow machine the wait may be over before a look sees it.
    const x = await batchOf(e2e, 'late.csv', (b) => b.state === 'COMPLETE', 'late.csv to end');
    const expired = await e2e.waitForOutbox(x, 'result', 20_000);
    expect(expired.rows.map((row) => row.status)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(expired.rows[0]?.reason).toContain('APPROVAL_EXPIRED');
    expect(expired.rows[0]?.approval).toContain('EXPIRED');
    expect(x.approval?.state).toBe('EXPIRED');
    await approvalFile(e2e, `${x.id}.approve`, approvalText(x.id, x.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${x.id}.approve`)).fields).toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
    expect(e2e.ledger()).toEqual([]);
  });

  it('a batch with no known uploader says in its ack and status that no approval can be given, and what to do', async () => {
    const e2e = await world({ required: 'always' });
    await e2e.startDaemon();
    const u = UPLOADER as { name: string; uid: number };
    // The uploader's file, left writable by its group (umask 002): anyone of the group could have written it.
    const staged = join(e2e.dir, 'staging-group.csv');
    await writeFile(staged, phpCsv('GRP', 2, '10.00'));
    await chown(staged, u.uid, u.uid);
    await chmod(staged, 0o664);
    await rename(staged, join(e2e.inbox, 'group.csv'));
    const b = await batchOf(e2e, 'group.csv', awaiting, 'group.csv to wait for approval');
    expect(b.approval?.uploadedBy).toBeNull();
    const said = [
      'AWAITING APPROVAL, WHICH CANNOT BE GIVEN: no uploader is known for this file',
      'every approval of it is refused (APPROVAL_UPLOADER_UNKNOWN)',
      `reject it (payoutd reject --batch ${b.id}`,
      `cancel it (payoutd cancel --batch ${b.id})`,
      'as a NEW file created private from the start (umask 022',
    ];
    // Said at once, where finance and approvers look first, not only when an approval is refused.
    const held = (await e2e.waitForOutbox(b, 'ack')).rows.find((r) => r.verdict === 'HELD');
    const status = await run(process.execPath, [BIN, 'status', '--batch', b.id, '--config', e2e.configPath], {
      cwd: e2e.dir,
      env: childEnv(),
    });
    for (const text of said) {
      expect(held?.reason).toContain(text);
      expect(status.stdout.replace(/\s+/g, ' ')).toContain(text);
    }
    expect(held?.reason).not.toContain(`drop a file named ${b.id}.approve`);
    expect(e2e.ledger()).toEqual([]);
  });

  it('a rejection ends a batch NOT_SUBMITTED with the reason; a file changed after its ack voids approval', async () => {
    const e2e = await world({ required: 'always' });
    await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    const r = await dropAwaiting(e2e, 'rej.csv', phpCsv('REJ', 2, '10.00'));
    await approvalFile(e2e, `${r.id}.reject`, approvalText(r.id, r.sha256, 'reason: wrong amounts on line 3\n', 'reject'), a.uid);
    expect((await waitForReply(e2e.outbox, `${r.id}.reject`)).fields).toMatchObject({ result: 'APPLIED', outcome: 'rejected' });
    const rejected = await e2e.waitForOutbox(r, 'result', 20_000);
    expect(rejected.rows.map((x) => x.status)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(rejected.rows[0]?.reason).toContain(`rejected by ${a.name} (sftp): wrong amounts on line 3`);

    const b = await dropAwaiting(e2e, 'grow.csv', phpCsv('GROW', 2, '10.00'));
    // The sender's session writes on into the taken file.
    const claimed = join(e2e.stateDir, 'claimed');
    const stored = (await readdir(claimed)).find((n) => n.endsWith('__grow.csv')) as string;
    await appendFile(join(claimed, stored), phpCsv('MORE', 1, '99999.00').split('\n')[1] + '\n');
    await approvalFile(e2e, `${b.id}.approve`, approvalText(b.id, b.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${b.id}.approve`)).fields).toMatchObject({ result: 'REFUSED', code: 'APPROVAL_FILE_CHANGED' });
    const after = await batchOf(e2e, 'grow.csv', () => true, 'grow.csv');
    expect(after.approval?.state).toBe('REQUIRED');
    expect(after.approval?.decisions.map((d) => d.decision)).toEqual(['void']);
    expect(e2e.ledger()).toEqual([]);
  });

  it('the rolling 24-hour limit holds across two batches', async () => {
    const e2e = await world({}, { limits: { onExceeded: 'refuse', perCurrency: { PHP: { max24h: '3000', maxRow: '1500' } } } });
    await e2e.startDaemon();
    const u = UPLOADER as { uid: number };
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'day1.csv', phpCsv('DAYA', 2, '1000.00'), u.uid);
    await batchOf(e2e, 'day1.csv', (b) => b.state === 'COMPLETE', 'day1.csv paid');
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'day2.csv', phpCsv('DAYB', 2, '1000.00'), u.uid);
    const second = await batchOf(e2e, 'day2.csv', (b) => b.state === 'REJECTED', 'day2.csv refused');
    expect(second.rejectCode).toBe('LIMIT_EXCEEDED');
    expect(second.rejectReason).toContain('above the 24-hour limit of 3000 PHP');
    const ack = await e2e.waitForOutbox(second, 'ack');
    expect(ack.rows[0]?.reason).toContain('24-hour limit');
    // A row over the row limit is REJECTED with the reason.
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'row.csv', phpCsv('ROWL', 1, '2000.00'), u.uid);
    const row = await batchOf(e2e, 'row.csv', (b) => b.state === 'REJECTED', 'row.csv refused');
    const rowAck = await e2e.waitForOutbox(row, 'ack');
    expect(rowAck.rows.find((r) => r.line === '2')?.reason).toContain('1500');
    expect(paidReferences(e2e)).toEqual(['DAYA-0001', 'DAYA-0002']);
  });

  it('over the 24-hour limit with require-approval: the second batch waits, and the limit is checked again at release', async () => {
    const e2e = await world(
      { required: 'always' },
      { limits: { onExceeded: 'require-approval', perCurrency: { PHP: { max24h: '3000' } } } },
    );
    await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    // Both wait (approval always) and each alone is within the limit; together they are not.
    const one = await dropAwaiting(e2e, 'one.csv', phpCsv('ONE', 2, '1000.00'));
    const two = await dropAwaiting(e2e, 'two.csv', phpCsv('TWO', 2, '1000.00'));
    expect(two.approval?.decisions).toEqual([]);
    await approvalFile(e2e, `${one.id}.approve`, approvalText(one.id, one.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${one.id}.approve`)).fields).toMatchObject({ outcome: 'released' });
    await approvalFile(e2e, `${two.id}.approve`, approvalText(two.id, two.sha256), a.uid);
    // At release the 24-hour limit is found exceeded: it needs approval again, naming the limit.
    expect((await waitForReply(e2e.outbox, `${two.id}.approve`)).fields).toMatchObject({ outcome: 'reopened' });
    const again = await batchOf(e2e, 'two.csv', () => true, 'two.csv');
    expect(again.holdCode).toBe('AWAITING_APPROVAL');
    expect(again.holdReason).toContain('24-hour limit');
    await waitFor(() => e2e.ledger().length === 2, 'the first batch paid');
    expect(e2e.ledger().every((l) => l.merchantReferenceId.startsWith('ONE-'))).toBe(true);
    // Approved again for round 2, with the limit named: now it goes.
    await approvalFile(e2e, `${two.id}.approve`, approvalText(two.id, two.sha256, 'round: 2\n'), a.uid);
    expect((await waitForReply(e2e.outbox, `${two.id}.approve`, 1)).fields).toMatchObject({ outcome: 'released' });
    await batchOf(e2e, 'two.csv', (b) => b.state === 'COMPLETE', 'two.csv paid');
  });

  it('an approval given on a 24-hour total that grew since does not let the batch go: it waits again, shown the total of now', async () => {
    const e2e = await world({}, { limits: { onExceeded: 'require-approval', perCurrency: { PHP: { max24h: '1000' } } } });
    await e2e.startDaemon();
    const a = ALICE as { uid: number };
    const b = BOB as { uid: number };
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'ba.csv', phpCsv('BA', 1, '900.00'), (UPLOADER as { uid: number }).uid);
    await batchOf(e2e, 'ba.csv', (x) => x.state === 'COMPLETE', 'ba.csv paid');
    const bb = await dropAwaiting(e2e, 'bb.csv', phpCsv('BB', 1, '200.00'));
    expect(bb.holdReason).toContain('200 PHP on top of 900 PHP paid or being paid in the last 24 hours is 1100 PHP');
    const bc = await dropAwaiting(e2e, 'bc.csv', phpCsv('BC', 1, '5000.00'));
    await approvalFile(e2e, `${bc.id}.approve`, approvalText(bc.id, bc.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${bc.id}.approve`)).fields).toMatchObject({ outcome: 'released' });
    // Approved on the 1100 its approver was shown; the 24 hours now hold 6100: not paid, a new round.
    await approvalFile(e2e, `${bb.id}.approve`, approvalText(bb.id, bb.sha256), b.uid);
    const reply = await waitForReply(e2e.outbox, `${bb.id}.approve`);
    expect(reply.fields).toMatchObject({ outcome: 'reopened' });
    expect(reply.fields.message).toContain('is 6100 PHP, above the 24-hour limit of 1000 PHP (approved at 1100 PHP)');
    const again = await batchOf(e2e, 'bb.csv', (x) => x.approval?.decisions.length === 2, 'bb.csv to wait again');
    expect(again.holdCode).toBe('AWAITING_APPROVAL');
    expect(again.holdReason).toContain('200 PHP on top of 5900 PHP paid or being paid in the last 24 hours is 6100 PHP');
    expect(again.approval?.decisions.map((d) => d.decision)).toEqual(['approve', 'reopen']);
    await waitFor(() => e2e.ledger().length === 2, 'ba and bc paid');
    expect(paidReferences(e2e)).toEqual(['BA-0001', 'BC-0001']);
    // The status finance reads names the round to approve.
    expect(again.holdReason).toContain(`"round: 2" (or run: payoutd approve --batch ${bb.id} --round 2)`);
    // An approval written on the 1100 (no round: the first) arrives after the reopen: refused, and its writer told why.
    await approvalFile(e2e, `${bb.id}.alice.approve`, approvalText(bb.id, bb.sha256), a.uid);
    const stale = await waitForReply(e2e.outbox, `${bb.id}.alice.approve`);
    expect(stale.fields).toMatchObject({ result: 'REFUSED', code: 'APPROVAL_STALE' });
    expect(stale.fields.message).toContain(`batch ${bb.id} was reopened at `);
    expect(stale.fields.message).toContain('is 6100 PHP, above the 24-hour limit of 1000 PHP (approved at 1100 PHP)');
    expect(stale.fields.message).toContain('approve again for round 2');
    expect((await batchOf(e2e, 'bb.csv', () => true, 'bb.csv')).approval?.state).toBe('REQUIRED');
    // Approved for round 2, on the figures of now: it goes.
    await approvalFile(e2e, `${bb.id}.approve`, approvalText(bb.id, bb.sha256, 'round: 2\n'), b.uid);
    expect((await waitForReply(e2e.outbox, `${bb.id}.approve`, 1)).fields).toMatchObject({ outcome: 'released' });
    await batchOf(e2e, 'bb.csv', (x) => x.state === 'COMPLETE', 'bb.csv paid');
    expect(paidReferences(e2e)).toEqual(['BA-0001', 'BB-0001', 'BC-0001']);
  });

  it('a console approve page opened before a reopen is refused as stale; the page of now names round 2 and its figures', async () => {
    const port = 18_000 + Math.floor(Math.random() * 2000);
    const limits = { onExceeded: 'require-approval', perCurrency: { PHP: { max24h: '1000' } } };
    const e2e = await world({}, { limits, console: { enabled: true, port } });
    const bob = BOB as { name: string; uid: number };
    const password = 'correct-horse-battery-staple-42';
    const { execFileSync } = await import('node:child_process');
    execFileSync(process.execPath, [BIN, 'user', 'add', bob.name, '--role', 'approver', '--config', e2e.configPath], {
      input: `${password}\n`,
      env: childEnv(),
      cwd: e2e.dir,
    });
    await e2e.startDaemon();
    const base = `http://127.0.0.1:${port}`;
    const jar = new Map<string, string>();
    const send = async (path: string, form?: Record<string, string>): Promise<Response> => {
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
      const r = await fetch(base + path, {
        method: form ? 'POST' : 'GET',
        headers: form ? { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: base } : { cookie },
        body: form ? new URLSearchParams(form).toString() : undefined,
        redirect: 'manual',
      });
      for (const c of r.headers.getSetCookie()) {
        const kv = c.split(';')[0] ?? '';
        jar.set(kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1));
      }
      return r;
    };
    const hidden = (page: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(page)?.[1] ?? '';
    const signIn = await (await send('/sign-in')).text();
    await send('/sign-in', { csrf: hidden(signIn, 'csrf'), next: '/', name: bob.name, password });
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'ba.csv', phpCsv('BA', 1, '900.00'), (UPLOADER as { uid: number }).uid);
    await batchOf(e2e, 'ba.csv', (x) => x.state === 'COMPLETE', 'ba.csv paid');
    const bb = await dropAwaiting(e2e, 'bb.csv', phpCsv('BB', 1, '200.00'));
    const bc = await dropAwaiting(e2e, 'bc.csv', phpCsv('BC', 1, '5000.00'));
    // Bob opens the approve page on the 1100.
    const before = await (await send(`/batches/${bb.id}/approve`)).text();
    expect(before).toContain('is 1100 PHP, above the 24-hour limit of 1000 PHP');
    expect(hidden(before, 'round')).toBe('1');
    // Meanwhile bc is let go and alice's approval of bb reopens it at 6100.
    const a = ALICE as { uid: number };
    await approvalFile(e2e, `${bc.id}.approve`, approvalText(bc.id, bc.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${bc.id}.approve`)).fields).toMatchObject({ outcome: 'released' });
    await approvalFile(e2e, `${bb.id}.approve`, approvalText(bb.id, bb.sha256), a.uid);
    expect((await waitForReply(e2e.outbox, `${bb.id}.approve`)).fields).toMatchObject({ outcome: 'reopened' });
    // Bob presses Approve on the page he opened before: refused, and told why.
    const form = (page: string): Record<string, string> => ({
      csrf: hidden(page, 'csrf'),
      sha256: hidden(page, 'sha256'),
      round: hidden(page, 'round'),
      decision: 'approve',
      comment: '',
    });
    const stale = await send(`/batches/${bb.id}/approve`, form(before));
    expect(stale.status).toBe(400);
    const said = await stale.text();
    expect(said).toContain(`batch ${bb.id} was reopened at `);
    expect(said).toContain('approve again for round 2');
    expect((await batchOf(e2e, 'bb.csv', () => true, 'bb.csv')).approval?.state).toBe('REQUIRED');
    // The page of now shows round 2 and the 6100 it approves.
    const now = await (await send(`/batches/${bb.id}/approve`)).text();
    expect(hidden(now, 'round')).toBe('2');
    expect(now).toContain('is 6100 PHP, above the 24-hour limit of 1000 PHP');
    const done = await send(`/batches/${bb.id}/approve`, form(now));
    expect(done.status).toBe(303);
    await batchOf(e2e, 'bb.csv', (x) => x.state === 'COMPLETE', 'bb.csv paid');
  });

  it('a currency whose total nothing bounds: the start names it as paid as read; approval.otherCurrencies holds it', async () => {
    const approval = { required: 'above-thresholds', thresholds: { batchTotal: { PHP: '300' } } };
    // EUR has a row limit only: that bounds no total, so EUR is still another currency.
    const limits = { perCurrency: { PHP: { max24h: '200000' }, EUR: { maxRow: '100000' } } };
    const rules = { payoutCurrencies: ['PHP', 'EUR', 'USD'] };
    const e2e = await world(approval, { limits, batch: { rules } });
    const eurCsv = (prefix: string): string =>
      toCsv(
        makeRows(prefix, 3)
          .filter((r) => r.payoutCurrency === 'EUR')
          .map((r) => ({ ...r, payoutAmount: '90000.00' })),
      );
    const warned = (l: { level?: string; msg?: string }): boolean =>
      l.level === 'warn' && (l.msg ?? '').includes('no approval threshold or limit bounds the total');
    const first = await e2e.startDaemon();
    expect(first.logs.find(warned)?.msg).toContain(
      'bounds the total of a batch paying EUR, USD (enabled in batch.rules.payoutCurrencies): such a batch is not held ' +
        'for approval nor limited by its total, and is paid as read',
    );
    await dropOwned(join(e2e.dir, 'staging'), e2e.inbox, 'eur1.csv', eurCsv('EUA'), (UPLOADER as { uid: number }).uid);
    await batchOf(e2e, 'eur1.csv', (b) => b.state === 'COMPLETE', 'eur1.csv paid as read');
    await first.stop();
    // Held as a currency whose total nothing bounds: no warning, and the batch waits for an approver.
    const config = { paths: { approvals: e2e.approvals }, limits, batch: { rules } };
    const approvers = { users: [UPLOADER?.name, ALICE?.name, BOB?.name] };
    await e2e.writeConfig({ ...config, approval: { approvers, ...approval, otherCurrencies: 'require-approval' } });
    const second = await e2e.startDaemon();
    const eur = await dropAwaiting(e2e, 'eur2.csv', eurCsv('EUB'));
    expect(eur.holdReason).toContain(
      'it pays 90000 EUR, a currency whose batch total no threshold or limit bounds (approval.otherCurrencies: require-approval)',
    );
    expect(second.logs.filter(warned)).toEqual([]);
    await approvalFile(e2e, `${eur.id}.approve`, approvalText(eur.id, eur.sha256), (ALICE as { uid: number }).uid);
    expect((await waitForReply(e2e.outbox, `${eur.id}.approve`)).fields).toMatchObject({ outcome: 'released' });
    await batchOf(e2e, 'eur2.csv', (b) => b.state === 'COMPLETE', 'eur2.csv paid once approved');
    expect(paidReferences(e2e)).toEqual(['EUA-0003', 'EUB-0003']);
    await second.stop();
    // Only PHP enabled, and its total bounded: nothing can escape, so nothing is said.
    await e2e.writeConfig({ ...config, approval: { approvers, ...approval }, batch: { rules: { payoutCurrencies: ['PHP'] } } });
    const third = await e2e.startDaemon();
    expect(third.logs.filter(warned)).toEqual([]);
  });

  it('bad approval files are refused with a reply, nothing is released, and the daemon keeps running', async () => {
    const e2e = await world({ required: 'always', maxFileBytes: 1024 });
    const daemon = await e2e.startDaemon();
    const a = ALICE as { name: string; uid: number };
    const o = OUTSIDER as { name: string; uid: number };
    const b = await dropAwaiting(e2e, 'guard.csv', phpCsv('GUARD', 2, '10.00'));
    const other = await dropAwaiting(e2e, 'other.csv', phpCsv('OTHER', 1, '10.00'));
    const good = approvalText(b.id, b.sha256);
    const cases: [string, string | Uint8Array, number, string][] = [
      [`${b.id}.approve`, '', a.uid, 'APPROVAL_BAD_FILE'], // empty
      [`${b.id}.approve`, 'x'.repeat(5000), a.uid, 'APPROVAL_BAD_FILE'], // huge
      [`${b.id}.approve`, new Uint8Array([0, 1, 2, 255, 0]), a.uid, 'APPROVAL_BAD_FILE'], // binary
      [`${b.id}.approve`, approvalText(other.id, other.sha256), a.uid, 'APPROVAL_BAD_FILE'], // for another batch
      [`${b.id}.approve`, approvalText(b.id, other.sha256), a.uid, 'APPROVAL_HASH_MISMATCH'],
      [`${b.id}.approve`, good, o.uid, 'APPROVAL_NOT_ALLOWED'], // not an approver
      [`${b.id}.approve`, good, unknownUid(), 'APPROVAL_UNKNOWN_USER'],
      ['B20990101-000000-abcdef.approve', approvalText('B20990101-000000-abcdef', b.sha256), a.uid, 'APPROVAL_UNKNOWN_BATCH'],
      [`${b.id}.reject`, approvalText(b.id, b.sha256, '', 'reject'), a.uid, 'APPROVAL_REASON_REQUIRED'],
      [`${b.id}.approve`, good.replace('decision: approve\n', ''), a.uid, 'APPROVAL_BAD_FILE'], // no decision line
      // Alice's rejection renamed to .approve (a rename keeps the owner): refused, not applied as her approval.
      [`${b.id}.approve`, approvalText(b.id, b.sha256, 'reason: wrong amounts\n', 'reject'), a.uid, 'APPROVAL_DECISION_MISMATCH'],
      ['notes.txt', good, a.uid, 'APPROVAL_BAD_FILE'],
    ];
    for (const [i, [name, content, uid, code]] of cases.entries()) {
      await approvalFile(e2e, name, content, uid);
      const previous = cases.slice(0, i).filter((c) => c[0] === name).length;
      expect((await waitForReply(e2e.outbox, name, previous)).fields, `case ${i}: ${name}`).toMatchObject({ result: 'REFUSED', code });
    }
    // A symbolic link to a good approval file.
    const target = join(e2e.dir, 'elsewhere.approve');
    await writeFile(target, good);
    await symlink(target, join(e2e.approvals, `${other.id}.approve`));
    expect((await waitForReply(e2e.outbox, `${other.id}.approve`)).fields).toMatchObject({ result: 'REFUSED', code: 'APPROVAL_BAD_FILE' });
    // A hard link to Alice's rejection kept elsewhere, named .approve: her file, her owner, still not her approval
    // (a second link is a handle through which someone else may write into her file).
    const hers = join(e2e.dir, 'alice.reject');
    await writeFile(hers, approvalText(other.id, other.sha256, 'reason: wrong amounts\n', 'reject'));
    await chown(hers, a.uid, a.uid);
    await link(hers, join(e2e.approvals, `${other.id}.approve`));
    expect((await waitForReply(e2e.outbox, `${other.id}.approve`, 1)).fields).toMatchObject({
      result: 'REFUSED',
      code: 'APPROVAL_FILE_SHARED',
    });
    // Her good approval, left writable by her group (umask 002): anyone of the group could have written it.
    const groupWritable = join(e2e.dir, 'alice-group.approve');
    await writeFile(groupWritable, approvalText(other.id, other.sha256));
    await chown(groupWritable, a.uid, a.uid);
    await chmod(groupWritable, 0o664);
    await rename(groupWritable, join(e2e.approvals, `${other.id}.approve`));
    expect((await waitForReply(e2e.outbox, `${other.id}.approve`, 2)).fields).toMatchObject({
      result: 'REFUSED',
      code: 'APPROVAL_FILE_SHARED',
    });
    expect(daemon.exited).toBeNull();
    expect(e2e.ledger()).toEqual([]);
    const now = (await e2e.batches()) as WithApproval[];
    expect(
      now
        .filter((x) => x.holdCode === 'AWAITING_APPROVAL')
        .map((x) => x.id)
        .sort(),
    ).toEqual([b.id, other.id].sort());
    expect(daemon.logs.some((l) => l.msg?.startsWith('approval file refused'))).toBe(true);
  });

  const noSftp = sftpSkipReason();
  it.skipIf(noSftp !== null)(
    `over real SFTP: the login is the owner, so the uploader cannot approve and another user can${noSftp ? ` (skipped: ${noSftp})` : ''}`,
    async () => {
      const u = UPLOADER as { name: string; uid: number };
      const a = ALICE as { name: string; uid: number };
      const sftp = await SftpServer.start({ sftpOnlyUsers: [u.name, a.name] });
      try {
        const e2e = await world({ required: 'always' });
        // Finance users write into the inbox and the approvals folder (as the SFTP group would).
        for (const d of [e2e.dir, e2e.inbox]) await chmod(d, 0o777);
        // The sticky bit: no finance user may rename or delete another's approval file (payoutd refuses to start without).
        await chmod(e2e.approvals, 0o1777);
        await e2e.startDaemon();
        const local = join(e2e.dir, 'local');
        await mkdir(local);
        await chmod(local, 0o755);
        const upload = (file: string, targetDir: string, remoteName: string, user: string): Promise<unknown> =>
          sftp.upload({ source: join(local, file), targetDir, remoteName, rateKbit: 100_000, user });
        await writeFile(join(local, 'sftp.csv'), phpCsv('SFTP', 2, '10.00'), { mode: 0o644 });
        await upload('sftp.csv', e2e.inbox, 'sftp.csv', u.name);
        const b = await batchOf(e2e, 'sftp.csv', awaiting, 'sftp.csv to wait for approval');
        expect(b.approval?.uploadedBy).toBe(u.name);

        await writeFile(join(local, 'approve'), approvalText(b.id, b.sha256), { mode: 0o644 });
        await upload('approve', e2e.approvals, `${b.id}.approve`, u.name);
        expect((await waitForReply(e2e.outbox, `${b.id}.approve`)).fields).toMatchObject({
          result: 'REFUSED',
          code: 'APPROVAL_OWN_UPLOAD',
        });
        expect(e2e.ledger()).toEqual([]);
        await upload('approve', e2e.approvals, `${b.id}.approve`, a.name);
        expect((await waitForReply(e2e.outbox, `${b.id}.approve`, 1)).fields).toMatchObject({ result: 'APPLIED', approver: a.name });
        await batchOf(e2e, 'sftp.csv', (x) => x.state === 'COMPLETE', 'sftp.csv paid');
        expect(e2e.ledger()).toHaveLength(2);
      } finally {
        await sftp.close();
      }
    },
  );
});

/**
 * The approval decisions on a real SQLite database with a hand-moved clock:
 * who may approve (users, groups, never the uploader), a decision before the
 * ack (refused, or waited for by a command and an approval file), six eyes,
 * a rejection and an expiry ending the batch unpaid, a release asking again
 * when the 24-hour total grew past what was approved; the policy's thresholds
 * and limits; approval files as text; and who runs `payoutd approve` under
 * sudo.
 */
import { createHash } from 'node:crypto';
import { chmod, link, mkdir, mkdtemp, open, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  ApprovalFiles,
  approvalAuditText,
  assess,
  decideApproval,
  decideWhenReady,
  expireDueApprovals,
  otherCurrenciesWarning,
  READY_WAIT_MS,
  parseApprovalFile,
  readApproval,
  type ApprovalDeps,
  type ApprovalPolicy,
  type UserDirectory,
} from '../../src/approval/index.js';
import { invokingUser } from '../../src/cli/commands/approval.js';
import { createLogger } from '../../src/log/index.js';
import { configSchema } from '../../src/config/schema.js';
import { loadConfig } from '../../src/config/index.js';
import { ManualClock } from '../../src/domain/clock.js';
import {
  cancelReadyRows,
  getBatch,
  insertBatch,
  listBatchEvents,
  receivedBatch,
  updateBatch,
  type Database,
} from '../../src/store/index.js';
import { useTestDatabase } from '../support/database.js';

const USERS: Record<number, string> = { 1001: 'uma', 1002: 'ana', 1003: 'ben', 1004: 'gus', 1005: 'out' };
const GROUPS: Record<string, string[]> = { gus: ['finance-approvers'] };

const users: UserDirectory = {
  nameOfUid: (uid) => Promise.resolve(USERS[uid] ?? null),
  uidOfName: (name) => Promise.resolve(Number(Object.entries(USERS).find(([, n]) => n === name)?.[0] ?? NaN) || null),
  groupsOf: (name) => Promise.resolve(GROUPS[name] ?? []),
};

function policy(approval: Record<string, unknown> = {}, limits: Record<string, unknown> = {}): ApprovalPolicy {
  const c = configSchema.parse({
    approval: { required: 'always', approvers: { users: ['uma', 'ana', 'ben'], groups: ['finance-approvers'] }, ...approval },
    limits,
  });
  return { approval: c.approval, limits: c.limits };
}

/** A batch waiting for approval, its file on disk, uploaded by uma. */
async function waitingBatch(
  db: Database,
  clock: ManualClock,
  id: string,
  o: { needed?: number; state?: 'ACTIVE' | 'VALIDATING'; uploaderUnknown?: true } = {},
) {
  const dir = await mkdtemp(join(tmpdir(), 'payoutd-approval-'));
  const path = join(dir, 'batch.csv');
  const bytes = `header\n${id}\n`;
  await writeFile(path, bytes);
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const b = receivedBatch(
    {
      id,
      fileName: 'batch.csv',
      storedPath: path,
      controlPath: null,
      sha256,
      size: bytes.length,
      mtimeMs: 0,
      doneMarker: false,
      uploadedBy: o.uploaderUnknown ? null : 'uma',
      uploadedByUid: o.uploaderUnknown ? null : 1001,
    },
    clock.now(),
  );
  await insertBatch(db, b);
  await updateBatch(db, id, { state: 'VALIDATING' }, clock.now());
  if (o.state !== 'VALIDATING') await updateBatch(db, id, { state: 'ACTIVE' }, clock.now());
  await updateBatch(
    db,
    id,
    {
      approvalState: 'REQUIRED',
      approvalsNeeded: o.needed ?? 1,
      approvalFiguresJson: JSON.stringify({ totals: { PHP: '1500' }, rows: 3, largest: { PHP: '500' } }),
      approvalReasonsJson: JSON.stringify([{ code: 'ALWAYS', text: 'always' }]),
      approvalExpiresAt: clock.now() + 60_000,
      holdCode: 'AWAITING_APPROVAL',
      holdReason: 'awaiting approval',
    },
    clock.now(),
  );
  return { id, sha256 };
}

/** The batch's approval events (type, who) as stored for notifications. */
async function approvalEvents(db: Database, batchId: string): Promise<[string, unknown][]> {
  return (await listBatchEvents(db, batchId)).filter((e) => e.type.includes('approv')).map((e) => [e.type, e.data.by]);
}

describe('decideApproval', () => {
  const t = useTestDatabase('payoutd-approval-');
  const clock = new ManualClock(Date.UTC(2026, 10, 27, 10));
  const deps = (p = policy()): ApprovalDeps => ({ db: t.db, clock, users, policy: p });

  /**
   * An approvals folder, its taken and reply folders, and ApprovalFiles on them where the test's own uid is the
   * approver ana (a rename or a hard link keeps the owner, which is the point); `reply` scans once and returns the one
   * reply, emptying the outbox.
   */
  async function approvalFolder(logger?: ApprovalDeps['logger']) {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-approval-files-'));
    const [folder, taken, replies, home] = ['approvals', 'taken', 'outbox', 'home'].map((d) => join(dir, d)) as [
      string,
      string,
      string,
      string,
    ];
    await Promise.all([folder, taken, replies, home].map((d) => mkdir(d)));
    const me = process.getuid?.() ?? 0;
    const asMe: UserDirectory = { ...users, nameOfUid: (uid) => Promise.resolve(uid === me ? 'ana' : (USERS[uid] ?? null)) };
    const files = new ApprovalFiles(
      { ...deps(), users: asMe, logger },
      { dir: folder, takenDir: taken, replyDir: replies, stableForMs: 0, maxFileBytes: 4096, bom: false },
    );
    const reply = async (): Promise<string> => {
      expect(await files.scan()).toBe(1);
      const [name, ...more] = await readdir(replies);
      expect(more).toEqual([]);
      const text = await readFile(join(replies, name ?? ''), 'utf8');
      await rm(join(replies, name ?? ''));
      return text;
    };
    return { folder, taken, replies, home, files, reply };
  }

  it('refuses the uploader, a user who is no approver, and lets a group member approve', async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-aaaaaa');
    const ask = (approver: string) =>
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver, via: 'console' });
    await expect(ask('uma')).rejects.toMatchObject({ code: 'APPROVAL_OWN_UPLOAD' });
    await expect(ask('out')).rejects.toMatchObject({ code: 'APPROVAL_NOT_ALLOWED' });
    // The uploader's uid under another name (two names for one uid) is still the uploader.
    await expect(
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'ana', approverUid: 1001, via: 'sftp' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_OWN_UPLOAD' });
    expect((await getBatch(t.db, b.id))?.approvalState).toBe('REQUIRED');
    const r = await ask('gus');
    expect(r.outcome).toBe('released');
    const after = await getBatch(t.db, b.id);
    // Let go, but not claimable before the daemon has checked the balance (the approval may come days later).
    expect([after?.approvalState, after?.holdCode, after?.releasedAt]).toEqual(['APPROVED', 'BALANCE_CHECK', clock.now()]);
    const view = await readApproval(t.db, b.id);
    expect(view?.decisions).toMatchObject([{ decision: 'approve', approver: 'gus', via: 'console', sha256: b.sha256 }]);
    // The notification is stored with the decision, once; refusals store none.
    expect(await approvalEvents(t.db, b.id)).toEqual([['approved', 'gus']]);
  });

  it("refuses approving a batch whose uploader is not known (payoutd's own file, no console upload recorded); a rejection goes", async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-uuuuuu', { uploaderUnknown: true });
    const ask = (decision: 'approve' | 'reject') =>
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision, approver: 'ana', via: 'console', reason: 'not ours' });
    await expect(ask('approve')).rejects.toMatchObject({ code: 'APPROVAL_UPLOADER_UNKNOWN' });
    expect((await getBatch(t.db, b.id))?.approvalState).toBe('REQUIRED');
    expect((await ask('reject')).outcome).toBe('rejected');
  });

  it("an uploader known by uid only is refused by name too: the approver's uid is looked up, and with none the approval is refused", async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-uid001');
    // uma's file was taken while her name could not be looked up: only her uid is recorded.
    await updateBatch(t.db, b.id, { uploadedBy: null, uploadedByUid: 1001 }, clock.now());
    const ask = (approver: string, o: { users?: UserDirectory; decision?: 'approve' | 'reject' } = {}) =>
      decideApproval(
        { ...deps(), users: o.users ?? users },
        { batchId: b.id, sha256: b.sha256, decision: o.decision ?? 'approve', approver, via: 'console', reason: 'not ours' },
      );
    await expect(ask('uma')).rejects.toMatchObject({ code: 'APPROVAL_OWN_UPLOAD' });
    // The directory cannot say who ana is: four eyes fails closed.
    const noUids: UserDirectory = { ...users, uidOfName: () => Promise.resolve(null) };
    const blind = ask('ana', { users: noUids });
    await expect(blind).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN_USER' });
    await expect(blind).rejects.toThrow(/known only as uid 1001/);
    expect((await getBatch(t.db, b.id))?.approvalState).toBe('REQUIRED');
    expect((await readApproval(t.db, b.id))?.decisions).toEqual([]);
    // Another approver whose uid is known approves it; the audit keeps the uid looked up.
    expect((await ask('ana')).outcome).toBe('released');
    expect((await t.db('batch_approvals').where({ batch_id: b.id }).pluck('approver_uid')) as number[]).toEqual([1002]);
  });

  it("a decision after the deadline is refused and ends the batch expired, before the daemon's pass", async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-late01');
    const ask = (decision: 'approve' | 'reject', approver: string) =>
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision, approver, via: 'cli', reason: 'too late' });
    clock.advance(60_000);
    const late = ask('approve', 'ana');
    await expect(late).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
    await expect(late).rejects.toThrow(/ran out at 2026-11-27T10:01:00\.000Z .*ends NOT_SUBMITTED.*send the rows again in a new file/);
    expect(await getBatch(t.db, b.id)).toMatchObject({ approvalState: 'EXPIRED', rejectCode: 'APPROVAL_EXPIRED', holdCode: null });
    expect((await readApproval(t.db, b.id))?.decisions.map((d) => [d.decision, d.via])).toEqual([['expire', 'daemon']]);
    expect(await approvalEvents(t.db, b.id)).toEqual([['approval-rejected', null]]);
    // Ended once: the daemon's pass finds nothing, a second decision sees it expired.
    expect(await expireDueApprovals(deps())).toEqual([]);
    await expect(ask('reject', 'ben')).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
    // A rejection after the deadline ends it expired the same way.
    const r = await waitingBatch(t.db, clock, 'B20261127-100000-late02');
    clock.advance(60_000);
    await expect(
      decideApproval(deps(), { batchId: r.id, sha256: r.sha256, decision: 'reject', approver: 'ben', via: 'sftp', reason: 'no' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_EXPIRED' });
    expect((await getBatch(t.db, r.id))?.approvalState).toBe('EXPIRED');
  });

  it('refuses a decision before the ack, a wrong hash, an unknown batch, and a rejection without a reason', async () => {
    const early = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbbb', { state: 'VALIDATING' });
    await expect(
      decideApproval(deps(), { batchId: early.id, sha256: early.sha256, decision: 'approve', approver: 'ana', via: 'sftp' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_NOT_READY' });
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-cccccc');
    await expect(
      decideApproval(deps(), { batchId: b.id, sha256: 'a'.repeat(64), decision: 'approve', approver: 'ana', via: 'sftp' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_HASH_MISMATCH' });
    await expect(
      decideApproval(deps(), { batchId: 'B20990101-000000-000000', sha256: b.sha256, decision: 'approve', approver: 'ana', via: 'sftp' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN_BATCH' });
    await expect(
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'reject', approver: 'ana', via: 'cli' }),
    ).rejects.toMatchObject({
      code: 'APPROVAL_REASON_REQUIRED',
    });
    expect((await readApproval(t.db, b.id))?.decisions).toEqual([]);
  });

  it('a decision asked for while the batch is still acknowledged waits for it, then applies', async () => {
    const early = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb1', { state: 'VALIDATING' });
    const told: string[] = [];
    let sleeps = 0;
    const wait = {
      maxWaitMs: 60_000,
      stepMs: 1000,
      onWait: (id: string) => void told.push(id),
      // The intake finishes the ack and lets the batch wait on the third look.
      sleep: async (ms: number) => {
        clock.advance(ms);
        if (++sleeps === 2) await updateBatch(t.db, early.id, { state: 'ACTIVE' }, clock.now());
      },
    };
    const r = await decideWhenReady(
      deps(),
      { batchId: early.id, sha256: early.sha256, decision: 'approve', approver: 'ana', via: 'cli' },
      wait,
    );
    expect(r.outcome).toBe('released');
    expect([told, sleeps]).toEqual([[early.id], 2]);
    expect((await getBatch(t.db, early.id))?.approvalState).toBe('APPROVED');
  });

  it('a decision that waited in vain for its batch is refused APPROVAL_NOT_READY, nothing recorded', async () => {
    const early = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb2', { state: 'VALIDATING' });
    const started = clock.now();
    const wait = { maxWaitMs: 5000, stepMs: 1000, sleep: (ms: number) => Promise.resolve(clock.advance(ms)) };
    await expect(
      decideWhenReady(deps(), { batchId: early.id, sha256: early.sha256, decision: 'approve', approver: 'ana', via: 'cli' }, wait),
    ).rejects.toMatchObject({ code: 'APPROVAL_NOT_READY' });
    expect(clock.now() - started).toBe(5000);
    expect((await readApproval(t.db, early.id))?.decisions).toEqual([]);
    // Any other refusal comes at once.
    await expect(
      decideWhenReady(deps(), { batchId: early.id, sha256: early.sha256, decision: 'approve', approver: 'out', via: 'cli' }, wait),
    ).rejects.toMatchObject({ code: 'APPROVAL_NOT_ALLOWED' });
    expect(clock.now() - started).toBe(5000);
  });

  it('an approval file for a batch still acknowledged stays in the folder, and is applied once the batch waits', async () => {
    const early = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb3', { state: 'VALIDATING' });
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-approval-files-'));
    const [inbox, taken, replies] = ['approvals', 'taken', 'outbox'].map((d) => join(dir, d)) as [string, string, string];
    await Promise.all([inbox, taken, replies].map((d) => mkdir(d)));
    const me = process.getuid?.() ?? 0;
    const asMe: UserDirectory = { ...users, nameOfUid: (uid) => Promise.resolve(uid === me ? 'ana' : (USERS[uid] ?? null)) };
    const files = new ApprovalFiles(
      { ...deps(), users: asMe },
      { dir: inbox, takenDir: taken, replyDir: replies, stableForMs: 0, maxFileBytes: 4096, bom: false },
    );
    const name = `${early.id}.approve`;
    await writeFile(join(inbox, name), `decision: approve\nbatch: ${early.id}\nsha256: ${early.sha256}\n`);
    expect(await files.scan()).toBe(0);
    expect([await readdir(inbox), await readdir(replies)]).toEqual([[name], []]);
    await updateBatch(t.db, early.id, { state: 'ACTIVE' }, clock.now());
    expect(await files.scan()).toBe(1);
    expect(await readdir(inbox)).toEqual([]);
    const [reply] = await readdir(replies);
    expect(await readFile(join(replies, reply ?? ''), 'utf8')).toContain('result: APPLIED');
    expect((await getBatch(t.db, early.id))?.approvalState).toBe('APPROVED');

    // A batch that never comes to wait: the file is answered after READY_WAIT_MS, not left without a reply.
    const stuck = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb4', { state: 'VALIDATING' });
    await writeFile(join(inbox, `${stuck.id}.approve`), `decision: approve\nbatch: ${stuck.id}\nsha256: ${stuck.sha256}\n`);
    expect(await files.scan()).toBe(0);
    clock.advance(READY_WAIT_MS - 1);
    expect(await files.scan()).toBe(0);
    clock.advance(1);
    expect(await files.scan()).toBe(1);
    const answered = (await readdir(replies)).find((f) => f.includes(stuck.id)) ?? '';
    expect(await readFile(join(replies, answered), 'utf8')).toMatch(/result: REFUSED\ncode: APPROVAL_NOT_READY\n/);
  });

  it('an approval file must state its decision inside: a renamed or hard-linked rejection approves nothing', async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb5');
    const lines: string[] = [];
    const logger = createLogger('info', new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }));
    const { folder, home, files, reply } = await approvalFolder(logger);
    const head = `batch: ${b.id}\nsha256: ${b.sha256}\n`;
    const rejection = `decision: reject\n${head}reason: wrong amounts, do not pay\n`;

    // ana's rejection, renamed to .approve by someone with write access to the folder before it was taken.
    await writeFile(join(folder, `${b.id}.reject`), rejection);
    await rename(join(folder, `${b.id}.reject`), join(folder, `${b.id}.approve`));
    const text = await reply();
    expect(text).toMatch(/result: REFUSED\ncode: APPROVAL_DECISION_MISMATCH\n/);
    expect(text).toContain(`${b.id}.approve is named .approve but says "decision: reject" inside`);
    // A hard link of ana's rejection (kept elsewhere) under an .approve name: a second link is refused before the
    // content counts (a link is a handle to write through in her name).
    await writeFile(join(home, 'mine.reject'), rejection);
    await link(join(home, 'mine.reject'), join(folder, `${b.id}.approve`));
    expect(await reply()).toContain('code: APPROVAL_FILE_SHARED');
    // No decision line (the name alone no longer decides), two decisions, a reason in an approval.
    await writeFile(join(folder, `${b.id}.approve`), head);
    expect(await reply()).toMatch(/code: APPROVAL_BAD_FILE\nmessage: .* holds no "decision:" line: the decision must be stated inside/);
    await writeFile(join(folder, `${b.id}.approve`), `decision: approve\ndecision: reject\n${head}`);
    expect(await reply()).toContain('states more than one decision (approve, reject)');
    await writeFile(join(folder, `${b.id}.approve`), `decision: approve\n${head}reason: wrong amounts\n`);
    expect(await reply()).toContain('approves but holds a "reason:" line, which only a rejection has');
    expect([(await getBatch(t.db, b.id))?.approvalState, (await readApproval(t.db, b.id))?.decisions]).toEqual(['REQUIRED', []]);

    // A folder others may write in without the sticky bit is said (once) while running.
    await chmod(folder, 0o777);
    await writeFile(join(folder, `${b.id}.reject`), rejection);
    expect(await reply()).toMatch(/result: APPLIED\noutcome: rejected\n/);
    expect(await files.scan()).toBe(0);
    const said = lines.filter((l) => l.includes('writable by other users without the sticky bit'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(`chmod +t ${folder}`);
    expect((await readApproval(t.db, b.id))?.decisions).toMatchObject([
      { decision: 'reject', approver: 'ana', comment: 'wrong amounts, do not pay' },
    ]);
  });

  it('an approval file with a second hard link or writable by group or others is refused; the audit keeps a copy', async () => {
    const mine = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb6');
    const theirs = await waitingBatch(t.db, clock, 'B20261127-100000-bbbbb7');
    const lines: string[] = [];
    const logger = createLogger('info', new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString()), done()) }));
    const { folder, taken, reply } = await approvalFolder(logger);
    const me = process.getuid?.() ?? 0;
    // The sticky, group-writable folder of an SFTP group (mode 3770 in production); the files below are ana's.
    await chmod(folder, 0o1777);
    const approve = (x: { id: string; sha256: string }): string => `decision: approve\nbatch: ${x.id}\nsha256: ${x.sha256}\n`;
    const keep = join(folder, '.keep');

    // ana approves her batch in a file left group-writable (umask 002); another user of the group links it away
    // at once to a dotfile, which payoutd leaves alone: the file taken has two links and is refused.
    await writeFile(join(folder, `${mine.id}.approve`), approve(mine), { mode: 0o644 });
    await link(join(folder, `${mine.id}.approve`), keep);
    const linked = await reply();
    expect(linked).toMatch(/result: REFUSED\ncode: APPROVAL_FILE_SHARED\n/);
    expect(linked).toContain(`${mine.id}.approve has 2 hard links`);
    // Whose file it was, its mode and links: the audit copy is payoutd's own now, so the reply and log keep who.
    expect(linked).toContain(`\nowner: ana (uid ${me})\nmode: 0644\nlinks: 2\nmessage: `);
    // What to do is a new file created private, never a chmod of this one (whoever could write it may hold it open).
    expect(linked).toContain('as a NEW file created private from the start (umask 022');
    expect(linked).toContain('never chmod this file');
    expect(linked).not.toContain('chmod 644');
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l['code'] === 'APPROVAL_FILE_SHARED');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 'error', file: `${mine.id}.approve`, owner: `ana (uid ${me})`, mode: '0644', links: '2' });
    expect(logged[0]?.['msg']).toContain(`A second link on a file of ana (uid ${me}) can mean someone else holds a link to it`);
    expect(logged[0]?.['msg']).toContain(`-inum ${logged[0]?.['inode'] as string}`);
    // Later he writes an approval of his own batch into the inode ana owns and links it in: refused too.
    await writeFile(keep, approve(theirs));
    await link(keep, join(folder, `${theirs.id}.x.approve`));
    expect(await reply()).toMatch(/result: REFUSED\ncode: APPROVAL_FILE_SHARED\n/);
    await rm(keep);
    // A file of one link that group or others may write is refused as well.
    for (const mode of [0o664, 0o646]) {
      await writeFile(join(folder, `${theirs.id}.approve`), approve(theirs));
      await chmod(join(folder, `${theirs.id}.approve`), mode);
      const text = await reply();
      expect(text).toMatch(/result: REFUSED\ncode: APPROVAL_FILE_SHARED\n/);
      expect(text).toContain(`(mode 0${mode.toString(8)})`);
      expect(text).toContain(`\nowner: ana (uid ${me})\nmode: 0${mode.toString(8)}\nlinks: 1\n`);
    }
    expect((await readApproval(t.db, theirs.id))?.decisions).toEqual([]);
    expect((await getBatch(t.db, theirs.id))?.approvalState).toBe('REQUIRED');

    // Her approval made right (mode 0644, one link) is applied; a handle kept open on it before it was taken writes
    // into her inode, not into the audit copy, which is payoutd's own file holding the bytes applied.
    await writeFile(join(folder, `${mine.id}.approve`), approve(mine), { mode: 0o644 });
    const kept = await open(join(folder, `${mine.id}.approve`), 'r+');
    const before = await readdir(taken);
    try {
      expect(await reply()).toMatch(/result: APPLIED\noutcome: released\n/);
      await kept.write(approve(theirs), 0);
      const [copy, ...others] = (await readdir(taken)).filter((f) => !before.includes(f));
      expect(others).toEqual([]);
      const st = await stat(join(taken, copy ?? ''));
      expect([st.nlink, st.ino === (await kept.stat()).ino, st.mode & 0o777]).toEqual([1, false, 0o640]);
      expect(await readFile(join(taken, copy ?? ''), 'utf8')).toBe(approve(mine));
    } finally {
      await kept.close();
    }
    expect((await readApproval(t.db, mine.id))?.decisions).toMatchObject([{ decision: 'approve', approver: 'ana' }]);
  });

  it('six eyes: the same approver twice counts once; the second approver releases', async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-dddddd', { needed: 2 });
    const ask = (approver: string) =>
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver, via: 'cli' });
    expect((await ask('ana')).outcome).toBe('recorded');
    await expect(ask('ana')).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
    expect((await getBatch(t.db, b.id))?.holdCode).toBe('AWAITING_APPROVAL');
    expect((await ask('ben')).outcome).toBe('released');
    await expect(ask('gus')).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
  });

  it('a 24-hour total grown since the approvers were shown it is not let go: a new round is shown the figures of now', async () => {
    const p = policy({ required: 'never' }, { onExceeded: 'require-approval', perCurrency: { PHP: { max24h: '1000' } } });
    /** A batch let go now, paying `total` PHP: it counts in the rolling 24 hours. */
    const letGo = async (id: string, total: string) => {
      const l = await waitingBatch(t.db, clock, id);
      const figuresJson = JSON.stringify({ totals: { PHP: total }, rows: 1, largest: { PHP: total } });
      await updateBatch(
        t.db,
        l.id,
        { approvalState: 'NONE', approvalFiguresJson: figuresJson, releasedAt: clock.now(), holdCode: null },
        clock.now(),
      );
    };
    // 200 PHP waits as the gate leaves it: on top of 900 let go, 1100 is over the 24-hour limit of 1000.
    await letGo('B20261127-100000-a00900', '900');
    const figures = { totals: { PHP: '200' }, rows: 1, largest: { PHP: '200' } };
    const gate = assess(figures, p, { PHP: '900' });
    expect(gate).toMatchObject({ kind: 'wait', reasons: [{ code: 'LIMIT_24H:PHP', amount: '1100', limit: '1000' }] });
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-b00200');
    const reasons = gate.kind === 'wait' ? gate.reasons : [];
    await updateBatch(
      t.db,
      b.id,
      { approvalFiguresJson: JSON.stringify(figures), approvalReasonsJson: JSON.stringify(reasons) },
      clock.now(),
    );
    // Meanwhile 5000 PHP more is let go: the approver's page still says 1100, the 24 hours now hold 6100.
    await letGo('B20261127-100000-c05000', '5000');
    const ask = () => decideApproval(deps(p), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'ana', via: 'console' });
    const first = await ask();
    expect(first.outcome).toBe('reopened');
    expect(first.message).toContain('is 6100 PHP, above the 24-hour limit of 1000 PHP (approved at 1100 PHP)');
    const after = await getBatch(t.db, b.id);
    expect([after?.approvalState, after?.approvalRound, after?.holdCode, after?.releasedAt]).toEqual([
      'REQUIRED',
      1,
      'AWAITING_APPROVAL',
      null,
    ]);
    expect(after?.holdReason).toContain('200 PHP on top of 5900 PHP paid or being paid in the last 24 hours is 6100 PHP');
    const view = await readApproval(t.db, b.id);
    expect(view?.reasons).toMatchObject([{ code: 'LIMIT_24H:PHP', amount: '6100' }]);
    expect(view?.given).toEqual([]);
    expect(view?.decisions.map((d) => [d.decision, d.approver])).toEqual([
      ['approve', 'ana'],
      ['reopen', null],
    ]);
    const reopened = (await listBatchEvents(t.db, b.id)).filter((e) => e.type === 'awaiting-approval');
    expect(reopened.map((e) => [e.data.reopened, e.data.round])).toEqual([[true, 2]]);
    expect(String(reopened[0]?.data.reason)).toContain('6100 PHP');
    expect(after?.holdReason).toContain('To approve (approval round 2)');
    expect(after?.holdReason).toContain('"round: 2" (or run: payoutd approve --batch B20261127-100000-b00200 --round 2)');
    // An approval written before the reopen (no round, or round 1) was shown 1100: it lets nothing go.
    const again = (round?: number) =>
      decideApproval(deps(p), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'ben', via: 'sftp', round });
    await expect(again()).rejects.toMatchObject({
      code: 'APPROVAL_STALE',
      message: expect.stringContaining(
        `batch ${b.id} was reopened at ${new Date(clock.now()).toISOString()} because ${first.message.split('at release ')[1]?.split(': not paid')[0]}; ` +
          'this approval names no round (taken as round 1), and the figures it approved no longer stand',
      ),
    });
    await expect(again(1)).rejects.toMatchObject({ code: 'APPROVAL_STALE', message: expect.stringContaining('approve again for round 2') });
    await expect(again(3)).rejects.toMatchObject({
      code: 'APPROVAL_BAD_REQUEST',
      message: expect.stringContaining('round 3 does not exist'),
    });
    expect((await getBatch(t.db, b.id))?.approvalState).toBe('REQUIRED');
    // Approved again for round 2, on the figures of now, with nothing let go since: it goes.
    expect((await again(2)).outcome).toBe('released');
    expect((await getBatch(t.db, b.id))?.approvalState).toBe('APPROVED');
  });

  it('a changed file voids approval', async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-eeeeee', { needed: 2 });
    expect(
      (await decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'ana', via: 'cli' })).outcome,
    ).toBe('recorded');
    const batch = await getBatch(t.db, b.id);
    await writeFile(batch?.storedPath as string, 'header\nsomething else\n');
    await expect(
      decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'ben', via: 'cli' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_FILE_CHANGED' });
    const view = await readApproval(t.db, b.id);
    expect(view?.given).toEqual([]);
    expect(view?.decisions.map((d) => d.decision)).toEqual(['approve', 'void']);
  });

  it('an operator cancel ends the wait: no later approval, expiry or notice, and the audit says so', async () => {
    const b = await waitingBatch(t.db, clock, 'B20261127-100000-cccccc');
    await cancelReadyRows(t.db, b.id, 'cancelled by an operator: wrong month', clock.now(), 'ben');
    expect(await getBatch(t.db, b.id)).toMatchObject({ approvalState: 'CANCELLED', holdCode: null });
    const late = decideApproval(deps(), { batchId: b.id, sha256: b.sha256, decision: 'approve', approver: 'gus', via: 'console' });
    await expect(late).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
    await expect(late).rejects.toThrow(/CANCELLED \(cancel by ben \(cli\)/);
    clock.advance(60_000);
    expect(await expireDueApprovals(deps())).toEqual([]);
    expect(await approvalEvents(t.db, b.id)).toEqual([]);
    const view = await readApproval(t.db, b.id);
    expect(view?.decisions).toMatchObject([
      { decision: 'cancel', approver: 'ben', via: 'cli', comment: 'cancelled by an operator: wrong month' },
    ]);
    expect(approvalAuditText(view ?? null)).toMatch(/^CANCELLED: uploaded by uma; cancelled by ben \(cli\) at .*wrong month/);
  });

  it('migration 0019 ends the wait of a batch cancelled before; a finished batch is not decided on', async () => {
    const name = async () => ((await t.db('payoutd_migrations').orderBy('id').pluck('name')) as string[]).at(-1);
    while ((await name()) !== '0018_batch_cancel') await t.db.migrate.down();
    const cancelled = await waitingBatch(t.db, clock, 'B20261127-100000-dddddd');
    await t.db('batches').where({ id: cancelled.id }).update({ cancelled_at: clock.now(), cancel_reason: 'cancelled by an operator: x' });
    const waiting = await waitingBatch(t.db, clock, 'B20261127-100000-dddd00');
    await t.db.migrate.up();
    expect(await name()).toBe('0019_cancel_ends_approval');
    await t.db.migrate.latest();
    expect((await getBatch(t.db, cancelled.id))?.approvalState).toBe('CANCELLED');
    expect((await getBatch(t.db, waiting.id))?.approvalState).toBe('REQUIRED');
    // Cancelled before 0018 kept the cancel: the batch finished, still shown REQUIRED.
    await updateBatch(t.db, waiting.id, { state: 'COMPLETE', holdCode: null }, clock.now());
    await expect(
      decideApproval(deps(), { batchId: waiting.id, sha256: waiting.sha256, decision: 'approve', approver: 'gus', via: 'cli' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED', message: expect.stringContaining('is COMPLETE') });
    expect(await approvalEvents(t.db, waiting.id)).toEqual([]);
  });

  it('a rejection and an expiry end the batch unpaid, once', async () => {
    const r = await waitingBatch(t.db, clock, 'B20261127-100000-ffffff');
    const rejected = await decideApproval(deps(), {
      batchId: r.id,
      sha256: r.sha256,
      decision: 'reject',
      approver: 'ben',
      via: 'sftp',
      reason: 'wrong file',
    });
    expect(rejected.outcome).toBe('rejected');
    expect(await getBatch(t.db, r.id)).toMatchObject({ approvalState: 'REJECTED', rejectCode: 'APPROVAL_REJECTED', holdCode: null });
    expect((await getBatch(t.db, r.id))?.rejectReason).toContain('rejected by ben (sftp): wrong file');
    expect(await approvalEvents(t.db, r.id)).toEqual([['approval-rejected', 'ben']]);

    const x = await waitingBatch(t.db, clock, 'B20261127-100000-abcdef');
    expect(await expireDueApprovals(deps())).toEqual([]);
    clock.advance(60_000);
    expect(await expireDueApprovals(deps())).toEqual([x.id]);
    expect(await expireDueApprovals(deps())).toEqual([]);
    expect(await getBatch(t.db, x.id)).toMatchObject({ approvalState: 'EXPIRED', rejectCode: 'APPROVAL_EXPIRED' });
    await expect(
      decideApproval(deps(), { batchId: x.id, sha256: x.sha256, decision: 'approve', approver: 'ana', via: 'sftp' }),
    ).rejects.toMatchObject({ code: 'APPROVAL_ALREADY_DECIDED' });
  });
});

describe('the policy', () => {
  const figures = { totals: { PHP: '1500', EUR: '10' }, rows: 4, largest: { PHP: '900', EUR: '10' } };

  it('waits above a threshold, refuses or waits over a limit, counting the rolling 24 hours', () => {
    expect(assess(figures, policy({ required: 'above-thresholds', thresholds: { batchTotal: { PHP: '2000' } } }), {})).toEqual({
      kind: 'release',
    });
    expect(assess(figures, policy({ required: 'above-thresholds', thresholds: { batchTotal: { PHP: '1000' } } }), {})).toMatchObject({
      kind: 'wait',
      reasons: [{ code: 'THRESHOLD_TOTAL:PHP' }],
    });
    expect(
      assess(figures, policy({ required: 'above-thresholds', thresholds: { rows: 3, largestRow: { PHP: '899.99' } } }), {}),
    ).toMatchObject({
      kind: 'wait',
      reasons: [{ code: 'THRESHOLD_ROW:PHP' }, { code: 'THRESHOLD_ROWS' }],
    });
    const limits = { perCurrency: { PHP: { max24h: '3000' } } };
    expect(assess(figures, policy({ required: 'never' }, limits), { PHP: '1500' })).toEqual({ kind: 'release' });
    expect(assess(figures, policy({ required: 'never' }, limits), { PHP: '1500.01' })).toMatchObject({
      kind: 'refuse',
      reasons: [{ code: 'LIMIT_24H:PHP' }],
    });
    expect(assess(figures, policy({ required: 'never' }, { ...limits, onExceeded: 'require-approval' }), { PHP: '2000' })).toMatchObject({
      kind: 'wait',
    });
  });
});

describe('a currency the policy does not name', () => {
  // 270000 EUR beside PHP, with thresholds and limits for PHP only.
  const figures = { totals: { PHP: '100', EUR: '270000' }, rows: 4, largest: { PHP: '100', EUR: '90000' } };
  const phpOnly = { required: 'above-thresholds', thresholds: { batchTotal: { PHP: '300' } } };
  const limits = { perCurrency: { PHP: { max24h: '200000' } } };

  it('is paid as read by default, and waits with approval.otherCurrencies: require-approval', () => {
    expect(assess(figures, policy(phpOnly, limits), {})).toEqual({ kind: 'release' });
    const held = assess(figures, policy({ ...phpOnly, otherCurrencies: 'require-approval' }, limits), {});
    expect(held).toMatchObject({ kind: 'wait', reasons: [{ code: 'OTHER_CURRENCY:EUR' }] });
    expect(held.kind === 'wait' && held.reasons[0]?.text).toBe(
      'it pays 270000 EUR, a currency whose batch total no threshold or limit bounds (approval.otherCurrencies: require-approval)',
    );
    // Named by a limit (or a threshold), EUR has its own rules: not held as another currency.
    const eurLimited = { perCurrency: { ...limits.perCurrency, EUR: { maxBatch: '500000' } } };
    expect(assess(figures, policy({ ...phpOnly, otherCurrencies: 'require-approval' }, eurLimited), {})).toEqual({ kind: 'release' });
    // Thresholds count only under above-thresholds: with required never, only the limits name currencies.
    const never = policy({ required: 'never', thresholds: { batchTotal: { EUR: '1' } }, otherCurrencies: 'require-approval' }, limits);
    expect(assess(figures, never, {})).toMatchObject({ kind: 'wait', reasons: [{ code: 'OTHER_CURRENCY:EUR' }] });
  });

  it('counts a currency as covered only when something bounds its total', () => {
    const eur = { totals: { EUR: '270000' }, rows: 3, largest: { EUR: '90000' } };
    const held = (approval: Record<string, unknown>, l: Record<string, unknown>) =>
      assess(
        eur,
        policy({ required: 'never', otherCurrencies: 'require-approval', ...approval }, { onExceeded: 'require-approval', ...l }),
        {},
      );
    const other = { kind: 'wait', reasons: [{ code: 'OTHER_CURRENCY:EUR' }] };
    // A row threshold, a row limit or an empty entry lets 270000 EUR through: EUR is still another currency.
    expect(held({ ...phpOnly, thresholds: { batchTotal: { PHP: '500000' }, largestRow: { EUR: '100000' } } }, limits)).toMatchObject(other);
    expect(held({}, { perCurrency: { EUR: {} } })).toMatchObject(other);
    expect(held({}, { perCurrency: { EUR: { maxRow: '100000' } } })).toMatchObject(other);
    // A total threshold, a batch limit or a 24-hour limit bounds it.
    expect(held({ ...phpOnly, thresholds: { batchTotal: { PHP: '500000', EUR: '500000' } } }, limits)).toEqual({ kind: 'release' });
    expect(held({}, { perCurrency: { EUR: { maxBatch: '500000' } } })).toEqual({ kind: 'release' });
    expect(held({}, { perCurrency: { EUR: { max24h: '500000' } } })).toEqual({ kind: 'release' });
  });

  it('is warned of at start for the enabled payout currencies nothing covers, named', () => {
    const warning = (
      approval: Record<string, unknown>,
      l: Record<string, unknown> = limits,
      enabled: string[] | null = ['PHP', 'EUR', 'USD'],
    ) => {
      const p = policy(approval, l);
      return otherCurrenciesWarning(p.approval, p.limits, enabled);
    };
    expect(warning(phpOnly)).toBe(
      'no approval threshold or limit bounds the total of a batch paying EUR, USD (enabled in batch.rules.payoutCurrencies): ' +
        'such a batch is not held for approval nor limited by its total, and is paid as read; bound each of these currencies ' +
        'with approval.thresholds.batchTotal or a maxBatch or max24h under limits.perCurrency, set now only for PHP, or set ' +
        'approval.otherCurrencies: require-approval to have such a batch wait for an approver (docs/approval.md)',
    );
    expect(warning({ ...phpOnly, thresholds: { batchTotal: { EUR: '9' }, rows: 10 } }, {})).toMatch(
      /paying PHP, USD \(enabled in batch\.rules\.payoutCurrencies\): .*paid as read \(approval\.thresholds\.rows still counts its rows\);.*set now only for EUR,/,
    );
    // A row bound alone covers nothing: EUR is named as escaping.
    expect(warning({ required: 'never' }, { perCurrency: { PHP: { max24h: '9' }, EUR: { maxRow: '9' } } })).toMatch(/paying EUR, USD \(/);
    // Only the enabled currencies count: with PHP alone enabled and bounded, nothing escapes.
    expect(warning(phpOnly, limits, ['PHP'])).toBeNull();
    expect(warning({ required: 'never' }, limits, ['PHP'])).toBeNull();
    // An open list: any currency but those covered.
    expect(warning(phpOnly, limits, null)).toMatch(/paying any payout currency but PHP: /);
    expect(warning({ ...phpOnly, otherCurrencies: 'require-approval' })).toBeNull();
    expect(warning({ required: 'always' })).toBeNull();
    expect(warning({ required: 'above-thresholds', thresholds: { rows: 10 } }, {})).toBeNull();
  });

  it('with require-approval, needs an approver named, as any approval does', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payoutd-other-currencies-'));
    const file = join(dir, 'payoutd.yaml');
    await writeFile(file, 'approval:\n  otherCurrencies: require-approval\nlimits:\n  perCurrency: { PHP: { max24h: "1000" } }\n');
    expect(() => loadConfig({ file, env: {}, cwd: dir })).toThrow(/approval\.approvers: batches can wait for approval/);
    await writeFile(file, 'limits:\n  perCurrency: { PHP: { max24h: "1000" } }\n');
    expect(loadConfig({ file, env: {}, cwd: dir }).approval.otherCurrencies).toBe('pay');
    await rm(dir, { recursive: true });
  });
});

describe('approval files', () => {
  it('reads key lines, or the batch id and hash bare', () => {
    const sha = 'AB'.repeat(32);
    expect(parseApprovalFile(`\uFEFFDecision: Approve\r\nbatch: B20261127-100000-abcdef\r\nsha256: ${sha}\r\ncomment: fine\r\n`)).toEqual({
      decisions: ['approve'],
      batchId: 'B20261127-100000-abcdef',
      sha256: sha.toLowerCase(),
      comment: 'fine',
      reason: null,
      round: null,
    });
    expect(parseApprovalFile(`decision: approve\nround: 2\n`).round).toBe(2);
    expect(parseApprovalFile(`decision: approve\nround: two\n`).round).toBeNaN();
    expect(parseApprovalFile(`B20261127-100000-abcdef,${sha}\nreason: wrong amounts`)).toMatchObject({
      batchId: 'B20261127-100000-abcdef',
      reason: 'wrong amounts',
    });
    expect(parseApprovalFile('hello')).toMatchObject({ decisions: [], batchId: null, sha256: null });
  });
});

describe('who runs payoutd approve', () => {
  it('is the sudo caller when sudo switched users, else the process user', async () => {
    expect(await invokingUser({ SUDO_UID: '1002', SUDO_USER: 'ana' }, 0, users)).toEqual({ name: 'ana', uid: 1002 });
    expect(await invokingUser({}, 1003, users)).toEqual({ name: 'ben', uid: 1003 });
    // The same user (no switch): SUDO_* of an outer session say nothing about who runs this.
    expect(await invokingUser({ SUDO_UID: '1003', SUDO_USER: 'ben' }, 1003, users)).toEqual({ name: 'ben', uid: 1003 });
    await expect(invokingUser({ SUDO_UID: '1002', SUDO_USER: 'ben' }, 0, users)).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN_USER' });
    await expect(invokingUser({}, 4242, users)).rejects.toMatchObject({ code: 'APPROVAL_UNKNOWN_USER' });
  });
});

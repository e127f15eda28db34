/**
 * Who the console says uploaded a batch, over real HTTP on a real SQLite
 * file with the real approvals: the uploader the daemon recorded when it
 * took the file, never an earlier console upload of the same name and bytes;
 * an uploader recorded by uid only is still refused her own batch; an
 * uploader who is an approver may reject her own batch, never approve it.
 */
import { createHash } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserDirectory } from '../../src/approval/index.js';
import { addUser, approvalsThrough } from '../../src/console/index.js';
import { configSchema } from '../../src/config/schema.js';
import { ManualClock } from '../../src/domain/clock.js';
import { getBatch, insertBatch, receivedBatch, type Database } from '../../src/store/index.js';
import { startTestConsole, type TestConsole } from '../support/console.js';

const PASSWORD = 'a long enough password';
const CSV = 'merchantReferenceId,payoutAmount\nINV-1,100.00\n';
let t: TestConsole;
let dir = '';
let db: Database;
let base = '';

const users: UserDirectory = {
  nameOfUid: (uid) => Promise.resolve(uid === 1001 ? 'mallory' : null),
  uidOfName: (name) => Promise.resolve(name === 'mallory' ? 1001 : null),
  groupsOf: () => Promise.resolve([]),
};

beforeAll(async () => {
  const c = configSchema.parse({ approval: { required: 'always', approvers: { users: ['bob', 'mallory'] } } });
  t = await startTestConsole('payoutd-console-uploader-', (db) => ({
    approvals: approvalsThrough({ db, clock: new ManualClock(Date.now()), users, policy: { approval: c.approval, limits: c.limits } }),
  }));
  ({ dir, db, base } = t);
  for (const name of ['bob', 'mallory']) await addUser(db, name, 'admin', PASSWORD, Date.now());
}, 60_000);

afterAll(() => t?.close());

async function session(name: string): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${base}/sign-in`, { redirect: 'manual' });
  const pre = (form.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const token = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const r = await fetch(`${base}/sign-in`, {
    method: 'POST',
    headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: token, name, password: PASSWORD, next: '/batches' }),
    redirect: 'manual',
  });
  const cookie = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0] as string)
    .find((c) => c.startsWith('payoutd_session=')) as string;
  const page = await (await fetch(`${base}/batches`, { headers: { cookie } })).text();
  return { cookie, csrf: /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] as string };
}

const text = (page: string): string => page.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

/** A batch of `csv` (stored in the state folder) waiting for one approval, uploaded by whom `uploader` says; its SHA-256. */
async function awaitingBatch(
  id: string,
  csv: string,
  uploader: { uploadedBy: string | null; uploadedByUid: number | null },
): Promise<string> {
  const path = join(dir, 'state', `${id}.csv`);
  await writeFile(path, csv);
  const sha256 = createHash('sha256').update(csv).digest('hex');
  const file = { fileName: `${id}.csv`, storedPath: path, controlPath: null, doneMarker: false, size: csv.length, mtimeMs: Date.now() };
  await insertBatch(db, {
    ...receivedBatch({ ...file, id, sha256, ...uploader }, Date.now()),
    state: 'ACTIVE',
    holdCode: 'AWAITING_APPROVAL',
    approvalState: 'REQUIRED',
    approvalsNeeded: 1,
    approvalExpiresAt: Date.now() + 3_600_000,
  });
  return sha256;
}

/** A decision posted from the batch's confirmation. */
function decide(s: { cookie: string; csrf: string }, id: string, fields: Record<string, string>): Promise<Response> {
  return fetch(`${base}/batches/${id}/approve`, {
    method: 'POST',
    headers: { cookie: s.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: s.csrf, ...fields }),
    redirect: 'manual',
  });
}

describe('console: the uploader of a batch', () => {
  it('an SFTP resend of a file once uploaded in the console is its sender’s, not the console user’s', async () => {
    const bob = await session('bob');
    const up = await fetch(`${base}/upload`, {
      method: 'POST',
      headers: { cookie: bob.cookie, 'x-csrf-token': bob.csrf, 'x-file-name': 'payroll.csv', 'content-type': 'application/octet-stream' },
      body: CSV,
    });
    expect(up.status).toBe(201);
    // Taken by the daemon (as bob's), and its batch ends; later mallory sends the same file over SFTP.
    await rename(join(dir, 'inbox', 'payroll.csv'), join(dir, 'state', 'taken'));
    const file = {
      fileName: 'payroll.csv',
      storedPath: join(dir, 'state', 'taken'),
      controlPath: null,
      doneMarker: false,
      size: CSV.length,
      mtimeMs: Date.now(),
      sha256: createHash('sha256').update(CSV).digest('hex'),
    };
    const t0 = Date.now();
    await insertBatch(db, {
      ...receivedBatch({ ...file, id: 'B-FIRST', uploadedBy: 'bob', uploadedByUid: null }, t0 + 1),
      state: 'REJECTED',
    });
    await insertBatch(db, {
      ...receivedBatch({ ...file, id: 'B-RESEND', uploadedBy: 'mallory', uploadedByUid: 1001 }, t0 + 1000),
      state: 'ACTIVE',
      holdCode: 'AWAITING_APPROVAL',
      approvalState: 'REQUIRED',
      approvalsNeeded: 1,
    });
    const page = text(await (await fetch(`${base}/batches/B-RESEND`, { headers: { cookie: bob.cookie } })).text());
    expect(page).toContain('Uploaded by mallory');
    expect(page).toContain('received (uploaded by mallory)');
    const list = await (await fetch(`${base}/batches`, { headers: { cookie: bob.cookie } })).text();
    expect(text(/data-batch="B-RESEND"[\s\S]*?<\/tr>/.exec(list)?.[0] ?? '')).toContain('mallory');
    // Bob may approve mallory's batch; mallory may only reject it.
    expect(await (await fetch(`${base}/batches/B-RESEND/approve`, { headers: { cookie: bob.cookie } })).text()).toContain(
      'value="approve"',
    );
    const mallory = await session('mallory');
    const hers = await (await fetch(`${base}/batches/B-RESEND/approve`, { headers: { cookie: mallory.cookie } })).text();
    expect(hers).toContain('value="reject"');
    expect(hers).not.toContain('value="approve"');
    // Bob's own console upload stays his.
    expect(text(await (await fetch(`${base}/batches/B-FIRST`, { headers: { cookie: bob.cookie } })).text())).toContain(
      'received (uploaded by bob in the console)',
    );
  });

  it('an uploader whose name could not be looked up cannot approve her own batch in the console', async () => {
    // mallory's SFTP file was taken while her name could not be looked up: only her uid (1001) is recorded.
    const sha256 = await awaitingBatch('B-NAMELESS', `${CSV}INV-2,50.00\n`, { uploadedBy: null, uploadedByUid: 1001 });
    const r = await decide(await session('mallory'), 'B-NAMELESS', { decision: 'approve', sha256 });
    expect(r.status).toBe(400);
    expect(text(await r.text())).toContain('mallory uploaded batch B-NAMELESS and cannot approve it');
    expect(await getBatch(db, 'B-NAMELESS')).toMatchObject({ approvalState: 'REQUIRED', holdCode: 'AWAITING_APPROVAL' });
  });
});

describe('console: an uploader who is an approver', () => {
  it('may reject her own batch in the console, and never approve it', async () => {
    const sha256 = await awaitingBatch('B-OWN', `${CSV}INV-3,75.00\n`, { uploadedBy: 'bob', uploadedByUid: null });
    const bob = await session('bob');
    const page = await (await fetch(`${base}/batches/B-OWN`, { headers: { cookie: bob.cookie } })).text();
    expect(text(page)).toContain('You uploaded it, so someone else must approve it. Reject it');
    expect(page).toContain('href="/batches/B-OWN/approve"');
    const form = await fetch(`${base}/batches/B-OWN/approve`, { headers: { cookie: bob.cookie } });
    expect(form.status).toBe(200);
    const formPage = await form.text();
    expect(text(formPage)).toContain('You uploaded this batch, so someone else must approve it; you may reject it.');
    expect(formPage).not.toContain('value="approve"');

    const approve = await decide(bob, 'B-OWN', { decision: 'approve', sha256, comment: 'mine' });
    expect(approve.status).toBe(403);
    expect(text(await approve.text())).toContain('You uploaded this batch, so someone else must approve it; you may reject it.');
    expect(await getBatch(db, 'B-OWN')).toMatchObject({ approvalState: 'REQUIRED', holdCode: 'AWAITING_APPROVAL' });

    const reject = await decide(bob, 'B-OWN', { decision: 'reject', sha256, comment: 'wrong file uploaded' });
    expect(reject.status).toBe(303);
    expect(reject.headers.get('location')).toBe('/batches/B-OWN');
    expect(await getBatch(db, 'B-OWN')).toMatchObject({ approvalState: 'REJECTED' });
  });
});

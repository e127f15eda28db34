/**
 * Who the console says uploaded a batch, over real HTTP on a real SQLite
 * file with the real approvals: the uploader the daemon recorded when it
 * took the file, never an earlier console upload of the same name and bytes;
 * an uploader recorded by uid only is still refused her own batch.
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
    // Bob may approve mallory's batch; mallory may not.
    expect((await fetch(`${base}/batches/B-RESEND/approve`, { headers: { cookie: bob.cookie } })).status).toBe(200);
    const mallory = await session('mallory');
    expect((await fetch(`${base}/batches/B-RESEND/approve`, { headers: { cookie: mallory.cookie } })).status).toBe(403);
    // Bob's own console upload stays his.
    expect(text(await (await fetch(`${base}/batches/B-FIRST`, { headers: { cookie: bob.cookie } })).text())).toContain(
      'received (uploaded by bob in the console)',
    );
  });

  it('an uploader whose name could not be looked up cannot approve her own batch in the console', async () => {
    // mallory's SFTP file was taken while her name could not be looked up: only her uid (1001) is recorded.
    const csv = `${CSV}INV-2,50.00\n`;
    const path = join(dir, 'state', 'nameless.csv');
    await writeFile(path, csv);
    const sha256 = createHash('sha256').update(csv).digest('hex');
    await insertBatch(db, {
      ...receivedBatch(
        {
          id: 'B-NAMELESS',
          fileName: 'nameless.csv',
          storedPath: path,
          controlPath: null,
          doneMarker: false,
          sha256,
          size: csv.length,
          mtimeMs: Date.now(),
          uploadedBy: null,
          uploadedByUid: 1001,
        },
        Date.now(),
      ),
      state: 'ACTIVE',
      holdCode: 'AWAITING_APPROVAL',
      approvalState: 'REQUIRED',
      approvalsNeeded: 1,
      approvalExpiresAt: Date.now() + 3_600_000,
    });
    const mallory = await session('mallory');
    const r = await fetch(`${base}/batches/B-NAMELESS/approve`, {
      method: 'POST',
      headers: { cookie: mallory.cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf: mallory.csrf, decision: 'approve', sha256 }),
      redirect: 'manual',
    });
    expect(r.status).toBe(400);
    expect(text(await r.text())).toContain('mallory uploaded batch B-NAMELESS and cannot approve it');
    expect(await getBatch(db, 'B-NAMELESS')).toMatchObject({ approvalState: 'REQUIRED', holdCode: 'AWAITING_APPROVAL' });
  });
});

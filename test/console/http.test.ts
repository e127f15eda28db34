/**
 * The console over real HTTP on 127.0.0.1, on a real SQLite file and real
 * inbox/outbox folders: every action tried with every role (the server
 * refuses what the role forbids), requests without a session or with a
 * wrong CSRF token change nothing, uploads that are too large, of the
 * wrong kind or named to escape the inbox are refused with a message and
 * leave nothing behind, downloads are of the batch's listed outbox files
 * only, pages show account numbers masked, and a 1,000-batch history pages.
 */
import { createHash } from 'node:crypto';
import { readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConsoleServer, addUser, type Role } from '../../src/console/index.js';
import type { PayoutRequest } from '../../src/domain/payout.js';
import { encodeRequest } from '../../src/domain/request-values.js';
import { outboxName } from '../../src/daemon/outbox.js';
import { consoleUploaderOf, insertBatch, receivedBatch, type Database } from '../../src/store/index.js';
import { insertRows } from '../../src/store/insert-rows.js';
import { startTestConsole, type TestConsole } from '../support/console.js';
import { inodeOf } from '../support/files.js';

const PASSWORD = 'a long enough password';
const ROLES: Role[] = ['viewer', 'uploader', 'approver', 'admin'];
const ACCOUNT = '001234567890';
const MAX_UPLOAD = 4096;

let t: TestConsole;
let dir = '';
let db: Database;
/** The same console, believing the user header from 127.0.0.1 (a reverse proxy on this machine). */
let proxied: ConsoleServer;
let proxiedBase = '';
let base = '';
const inbox = (): string => join(dir, 'inbox');
const outbox = (): string => join(dir, 'outbox');

const request = (ref: string, amount: string): PayoutRequest => ({
  merchantReferenceId: ref,
  deductionCurrency: 'USDT',
  payoutCurrency: 'PHP',
  payoutAmount: amount,
  sender: { firstName: 'Ana', lastName: 'Cruz', country: 'PH', idType: 'PASSPORT', idValue: 'P1234567A' },
  beneficiary: { accountName: 'Juan Dela Cruz', accountNumber: ACCOUNT, bankCode: 'BOPIPHMM' },
});

async function seed(): Promise<void> {
  const now = Date.now();
  // A batch with rows and outbox files.
  const file = {
    fileName: 'payouts.csv',
    storedPath: join(dir, 'state', 'x'),
    controlPath: null,
    doneMarker: false,
    size: 10,
    mtimeMs: now,
  };
  await insertBatch(db, {
    ...receivedBatch({ ...file, id: 'B-MAIN', sha256: 'a'.repeat(64) }, now),
    state: 'ACTIVE',
    acceptedAt: now,
    totalsJson: '{"PHP":"300.75"}',
  });
  await db.transaction((trx) =>
    insertRows(
      trx,
      [
        ['INV-1', '100.25'],
        ['INV-2', '200.50'],
        ['OTHER-3', '1.00'],
      ].map(([ref, amount], i) => ({
        batchId: 'B-MAIN',
        line: i + 2,
        merchantReferenceId: ref as string,
        state: 'READY' as const,
        requestValues: encodeRequest(request(ref as string, amount as string)),
        payoutCurrency: null,
        payoutAmount: null,
        deductionCurrency: null,
        reasonCode: null,
        reason: null,
      })),
      now,
    ),
  );
  const name = outboxName({ id: 'B-MAIN', fileName: 'payouts.csv' });
  await writeFile(join(outbox(), `${name}.result.csv`), `line,account\n2,${ACCOUNT}\n`);
  await writeFile(join(outbox(), `${name}.result.xlsx`), 'PK\u0003\u0004 workbook bytes');
  await writeFile(join(outbox(), 'B-OTHER_else.csv.result.csv'), 'not this batch\n');
  await writeFile(join(dir, 'secret.txt'), 'outside the outbox\n');
  await symlink(join(dir, 'secret.txt'), join(outbox(), `${name}.link.csv`));
  // A history of 1,000 batches, a second apart.
  const many = Array.from({ length: 999 }, (_, i) => ({
    ...receivedBatch(
      { ...file, id: `B-${String(i).padStart(4, '0')}`, fileName: `old-${i}.csv`, sha256: 'b'.repeat(64) },
      now - (i + 1) * 1000,
    ),
    state: 'COMPLETE' as const,
  }));
  for (let i = 0; i < many.length; i += 100) await db('batches').insert(many.slice(i, i + 100).map((b) => toColumns(b)));
}

/** A batch record as its table's columns (the bulk insert of the history). */
function toColumns(b: ReturnType<typeof receivedBatch>): Record<string, unknown> {
  return {
    id: b.id,
    file_name: b.fileName,
    stored_path: b.storedPath,
    sha256: b.sha256,
    size: b.size,
    mtime_ms: b.mtimeMs,
    state: 'COMPLETE',
    received_at: b.receivedAt,
    updated_at: b.updatedAt,
    final_counts_json: '{}',
  };
}

beforeAll(async () => {
  t = await startTestConsole('payoutd-console-http-', () => ({ inboxIgnore: ['*.skip.csv'], maxUploadBytes: MAX_UPLOAD }));
  ({ dir, db, base } = t);
  for (const role of ROLES) await addUser(db, role, role, PASSWORD, Date.now());
  await seed();
  await addUser(db, 'sso-approver', 'approver', null, Date.now());
  proxied = new ConsoleServer({ ...t.options, trustedProxies: ['127.0.0.1'] });
  proxiedBase = await proxied.listen();
}, 60_000);

afterAll(async () => {
  await proxied?.close();
  await t?.close();
});

interface Session {
  cookie: string;
  csrf: string;
}

const sessions = new Map<Role, Session>();

async function get(path: string, cookie = ''): Promise<Response> {
  return fetch(base + path, { headers: cookie ? { cookie } : {}, redirect: 'manual' });
}

async function signIn(name: string, password = PASSWORD): Promise<Response> {
  const form = await get('/sign-in');
  const pre = (form.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const token = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  return fetch(`${base}/sign-in`, {
    method: 'POST',
    headers: { cookie: pre, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: token, name, password, next: '/batches' }),
    redirect: 'manual',
  });
}

async function session(role: Role): Promise<Session> {
  const kept = sessions.get(role);
  if (kept) return kept;
  const r = await signIn(role);
  expect(r.status).toBe(303);
  const cookie = r.headers
    .getSetCookie()
    .map((c) => c.split(';')[0] as string)
    .find((c) => c.startsWith('payoutd_session=')) as string;
  const page = await (await get('/batches', cookie)).text();
  const csrf = /name="csrf-token" content="([^"]+)"/.exec(page)?.[1] as string;
  const s = { cookie, csrf };
  sessions.set(role, s);
  return s;
}

function upload(name: string, body: string | Uint8Array, s: Partial<Session>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/upload`, {
    method: 'POST',
    headers: {
      ...(s.cookie ? { cookie: s.cookie } : {}),
      ...(s.csrf ? { 'x-csrf-token': s.csrf } : {}),
      'x-file-name': encodeURIComponent(name),
      'content-type': 'application/octet-stream',
      ...headers,
    },
    body,
  });
}

function postForm(path: string, fields: Record<string, string>, cookie = ''): Promise<Response> {
  return fetch(base + path, {
    method: 'POST',
    headers: { ...(cookie ? { cookie } : {}), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
    redirect: 'manual',
  });
}

const names = async (d: string): Promise<string[]> => (await readdir(d)).sort();
const RESULT_XLSX = `/batches/B-MAIN/files/${encodeURIComponent('B-MAIN_payouts.csv.result.xlsx')}`;
const CSV = 'merchantReferenceId,payoutAmount\nINV-9,1.00\n';

describe('console: every action with every role', () => {
  const expected: Record<string, Record<Role, number>> = {
    list: { viewer: 200, uploader: 200, approver: 200, admin: 200 },
    batch: { viewer: 200, uploader: 200, approver: 200, admin: 200 },
    download: { viewer: 403, uploader: 200, approver: 200, admin: 200 },
    upload: { viewer: 403, uploader: 201, approver: 403, admin: 201 },
    // Allowed roles get as far as the batch, which does not wait for an approval.
    approveForm: { viewer: 403, uploader: 403, approver: 409, admin: 409 },
    approve: { viewer: 403, uploader: 403, approver: 409, admin: 409 },
    users: { viewer: 403, uploader: 403, approver: 403, admin: 200 },
  };

  for (const role of ROLES) {
    it(`${role}`, async () => {
      const s = await session(role);
      const status: Record<string, number> = {};
      status.list = (await get('/batches', s.cookie)).status;
      status.batch = (await get('/batches/B-MAIN', s.cookie)).status;
      status.download = (await get(RESULT_XLSX, s.cookie)).status;
      const before = await names(inbox());
      const up = await upload(`by-${role}.csv`, CSV, s);
      status.upload = up.status;
      expect((await names(inbox())).includes(`by-${role}.csv`)).toBe(up.status === 201);
      if (up.status !== 201) expect(await names(inbox())).toEqual(before);
      status.approveForm = (await get('/batches/B-MAIN/approve', s.cookie)).status;
      status.approve = (
        await postForm('/batches/B-MAIN/approve', { csrf: s.csrf, decision: 'approve', sha256: 'a'.repeat(64) }, s.cookie)
      ).status;
      status.users = (await get('/users', s.cookie)).status;
      expect(status).toEqual(Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, v[role]])));
    });
  }

  it('pages carry no inline script or style, so the Content-Security-Policy can forbid them', async () => {
    const { cookie } = await session('admin');
    for (const path of ['/batches', '/batches/B-MAIN', '/users', '/sign-in']) {
      const r = await get(path, path === '/sign-in' ? '' : cookie);
      expect(r.status, path).toBe(200);
      expect(r.headers.get('content-security-policy'), path).toContain("script-src 'self'");
      const page = await r.text();
      expect(page, path).not.toMatch(/\sstyle=|<style|\son[a-z]+=/);
      const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.map((m) => [m[1]?.trim(), m[2]])).toEqual([['src="/static/console.js" defer', '']]);
    }
  });

  it('the page offers only what the role allows', async () => {
    const viewer = await (await get('/batches/B-MAIN', (await session('viewer')).cookie)).text();
    expect(viewer).not.toContain('/files/');
    expect(viewer).toContain('cannot download');
    expect(await (await get('/batches', (await session('viewer')).cookie)).text()).not.toContain('upload-file');
    const uploader = await (await get('/batches/B-MAIN', (await session('uploader')).cookie)).text();
    expect(uploader).toContain(RESULT_XLSX);
  });
});

describe('console: no session, a wrong CSRF token', () => {
  it('without a session: pages send to sign-in, actions are refused, nothing changes', async () => {
    const before = await names(inbox());
    for (const path of ['/batches', '/batches/B-MAIN', RESULT_XLSX, '/batches/B-MAIN/approve', '/users']) {
      const r = await get(path);
      expect(r.status, path).toBe(303);
      expect(r.headers.get('location')).toBe(`/sign-in?next=${encodeURIComponent(path)}`);
    }
    expect((await get('/batches/rows')).status).toBe(401);
    expect((await upload('anon.csv', CSV, {})).status).toBe(401);
    expect((await upload('anon.csv', CSV, { csrf: (await session('admin')).csrf })).status).toBe(401);
    expect((await postForm('/batches/B-MAIN/approve', { decision: 'approve' })).status).toBe(401);
    expect((await postForm('/sign-out', {})).status).toBe(401);
    expect(await names(inbox())).toEqual(before);
  });

  it('with a wrong or missing CSRF token: refused, nothing changes, the session stays', async () => {
    const s = await session('admin');
    const before = await names(inbox());
    // One character changed: a forged token must differ from the real one whatever its last character is.
    const forged = `${s.csrf.slice(0, -1)}${s.csrf.endsWith('0') ? '1' : '0'}`;
    expect(forged).not.toBe(s.csrf);
    expect((await upload('forged.csv', CSV, { cookie: s.cookie, csrf: forged })).status).toBe(403);
    expect((await upload('forged.csv', CSV, { cookie: s.cookie })).status).toBe(403);
    expect(await names(inbox())).toEqual(before);
    expect((await postForm('/batches/B-MAIN/approve', { csrf: 'nope', decision: 'approve' }, s.cookie)).status).toBe(403);
    expect((await postForm('/sign-out', { csrf: 'nope' }, s.cookie)).status).toBe(403);
    expect((await get('/batches', s.cookie)).status).toBe(200);
  });

  it('a sign-in without its form token, or with a wrong password, starts no session', async () => {
    const r = await postForm('/sign-in', { name: 'admin', password: PASSWORD });
    expect(r.status).toBe(401);
    expect(r.headers.getSetCookie().some((c) => c.startsWith('payoutd_session='))).toBe(false);
    const wrong = await signIn('admin', 'not the password');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Wrong user name or password');
    expect(wrong.headers.getSetCookie().some((c) => c.startsWith('payoutd_session='))).toBe(false);
  });

  it('the session cookie is HTTP-only and SameSite=Strict, and sign-out ends the session', async () => {
    const r = await signIn('viewer');
    const set = r.headers.getSetCookie().find((c) => c.startsWith('payoutd_session=')) as string;
    expect(set).toMatch(/; HttpOnly/);
    expect(set).toMatch(/; SameSite=Strict/);
    const cookie = set.split(';')[0] as string;
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(await (await get('/batches', cookie)).text())?.[1] as string;
    expect((await postForm('/sign-out', { csrf }, cookie)).status).toBe(303);
    expect((await get('/batches', cookie)).status).toBe(303);
  });
});

describe('console: uploads', () => {
  const refused = async (name: string, body: string | Uint8Array, status: number, message: RegExp): Promise<void> => {
    const s = await session('uploader');
    const before = await names(inbox());
    const r = await upload(name, body, s);
    expect(r.status, name).toBe(status);
    expect(((await r.json()) as { message: string }).message).toMatch(message);
    expect(await names(inbox())).toEqual(before);
    expect(await names(dir)).toEqual(['inbox', 'outbox', 'secret.txt', 'state']);
    expect(await names(join(dir, 'state', 'console-upload'))).toEqual([]);
  };

  it('refuses names that would escape the inbox, and names the inbox would never take', async () => {
    await refused('../escape.csv', CSV, 400, /names a folder/);
    await refused('sub/escape.csv', CSV, 400, /names a folder/);
    await refused('..\\escape.csv', CSV, 400, /names a folder/);
    await refused('..', CSV, 400, /names a folder|not a \.csv/);
    await refused('.hidden.csv', CSV, 400, /never takes/);
    await refused('x.skip.csv', CSV, 400, /never takes/);
    await refused('bad\u0007name.csv', CSV, 400, /control characters/);
  });

  it('refuses what is not CSV or XLSX, by name and by bytes', async () => {
    await refused('payouts.txt', CSV, 400, /not a \.csv or \.xlsx/);
    await refused('payouts.csv', new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 1]), 400, /not a text CSV/);
    await refused('payouts.xlsx', CSV, 400, /not an Excel workbook/);
    await refused('empty.csv', '', 400, /empty/);
  });

  it('refuses a file over the limit, said by its length or found while reading', async () => {
    await refused('big.csv', 'x'.repeat(MAX_UPLOAD + 1), 413, /larger than 4096 bytes/);
    const s = await session('uploader');
    // Sent in chunks without a length: the limit is found while reading.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 10; i++) c.enqueue(new TextEncoder().encode('y'.repeat(1000)));
        c.close();
      },
    });
    const r = await fetch(`${base}/upload`, {
      method: 'POST',
      headers: { cookie: s.cookie, 'x-csrf-token': s.csrf, 'x-file-name': 'streamed.csv' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(r.status).toBe(413);
    expect(await names(inbox())).not.toContain('streamed.csv');
  });

  it('puts an accepted file into the inbox with its uploader, and never replaces a waiting file', async () => {
    const s = await session('uploader');
    const r = await upload('März payouts.csv', CSV, s);
    expect(r.status).toBe(201);
    const answer = (await r.json()) as { sha256: string; message: string };
    expect(answer.message).toContain('uploaded by uploader');
    expect(await names(inbox())).toContain('März payouts.csv');
    const inode = await inodeOf(join(inbox(), 'März payouts.csv'));
    expect(await consoleUploaderOf(db, { fileName: 'März payouts.csv', sha256: answer.sha256, inode, receivedAt: Date.now() })).toBe(
      'uploader',
    );
    expect(
      await consoleUploaderOf(db, { fileName: 'März payouts.csv', sha256: 'f'.repeat(64), inode, receivedAt: Date.now() }),
    ).toBeUndefined();
    const again = await upload('März payouts.csv', `${CSV}INV-10,2.00\n`, s);
    expect(again.status).toBe(409);
    expect(await names(join(dir, 'state', 'console-upload'))).toEqual([]);
  });

  it('names no uploader for a file it could not put into the inbox', async () => {
    // Waiting in the inbox, dropped over SFTP by someone else: the same name and bytes uploaded here are refused.
    await writeFile(join(inbox(), 'sftp.csv'), CSV);
    const r = await upload('sftp.csv', CSV, await session('uploader'));
    expect(r.status).toBe(409);
    const sha256 = createHash('sha256').update(CSV).digest('hex');
    // Otherwise the SFTP file's batch would show this user as its uploader (who then could not approve it,
    // while the one who did upload it could).
    const inode = await inodeOf(join(inbox(), 'sftp.csv'));
    expect(await consoleUploaderOf(db, { fileName: 'sftp.csv', sha256, inode, receivedAt: Date.now() })).toBeUndefined();
  });
});

describe('console: downloads and pages', () => {
  it('serves the batch’s listed files only: no link, no other batch, no path', async () => {
    const { cookie } = await session('admin');
    const ok = await get(RESULT_XLSX, cookie);
    expect(ok.headers.get('content-type')).toContain('spreadsheetml');
    expect(ok.headers.get('content-disposition')).toContain('attachment; filename="B-MAIN_payouts.csv.result.xlsx"');
    const page = await (await get('/batches/B-MAIN', cookie)).text();
    expect(page).not.toContain('link.csv');
    for (const name of [
      'B-MAIN_payouts.csv.link.csv',
      'B-OTHER_else.csv.result.csv',
      '../secret.txt',
      '..%2Fsecret.txt',
      '%2e%2e%2fsecret.txt',
    ]) {
      expect((await get(`/batches/B-MAIN/files/${name.includes('%') ? name : encodeURIComponent(name)}`, cookie)).status, name).toBe(404);
    }
  });

  it('shows accounts masked to the last four, never in full, and finds rows by reference', async () => {
    const { cookie } = await session('viewer');
    const page = await (await get('/batches/B-MAIN', cookie)).text();
    expect(page).toContain('********7890');
    expect(page).not.toContain(ACCOUNT);
    expect(page).toContain('300.75 PHP');
    // Totals per status and currency: three READY PHP rows, summed exactly.
    expect(page.replace(/\s+/g, '')).toContain('<td>READY</td><td>PHP</td><tdclass="num">3</td><tdclass="num">301.75</td>');
    const found = await (await get('/batches/B-MAIN?q=INV', cookie)).text();
    expect(found).toContain('2 row(s) matching');
    expect(found).not.toContain('OTHER-3');
    expect(await (await get('/batches/B-MAIN?q=%25', cookie)).text()).toContain('0 row(s) matching');
  });

  it('pages a 1,000-batch history newest first, and filters by state and date', async () => {
    const { cookie } = await session('viewer');
    const first = await (await get('/batches', cookie)).text();
    expect(first).toContain('Batches 1-50 of 1000');
    expect([...first.matchAll(/data-batch="/g)]).toHaveLength(50);
    expect(first.indexOf('data-batch="B-MAIN"')).toBeLessThan(first.indexOf('data-batch="B-0000"'));
    const last = await (await get('/batches?page=20', cookie)).text();
    expect(last).toContain('Batches 951-1000 of 1000');
    expect(last).toContain('data-batch="B-0998"');
    expect(last).not.toContain('rel="next"');
    expect(await (await get('/batches?state=ACTIVE', cookie)).text()).toContain('Batches 1-1 of 1');
    expect(await (await get('/batches?from=2000-01-01&to=2000-01-02', cookie)).text()).toContain('Batches 0-0 of 0');
    const rows = await (await get('/batches/rows?state=ACTIVE', cookie)).text();
    expect(rows).toContain('data-batch="B-MAIN"');
    expect(rows).not.toContain('<html');
  });
});

describe('console: a user named by a trusted reverse proxy', () => {
  const asProxy = (path: string, user: string, init: RequestInit = {}): Promise<Response> =>
    fetch(proxiedBase + path, {
      ...init,
      headers: { 'remote-user': user, ...(init.headers as Record<string, string>) },
      redirect: 'manual',
    });

  it('is believed from a configured proxy address only, for a known user, with the role stored for them', async () => {
    const page = await asProxy('/batches', 'sso-approver');
    expect(page.status).toBe(200);
    const text = await page.text();
    expect(text).toContain('sso-approver (approver)');
    expect(text).not.toContain('upload-file');
    expect((await asProxy('/batches', 'nobody')).status).toBe(303);
    // The console that trusts no proxy ignores the header.
    expect((await fetch(`${base}/batches`, { headers: { 'remote-user': 'admin' }, redirect: 'manual' })).status).toBe(303);
  });

  it('needs the CSRF token of the page for every change, like a session', async () => {
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(await (await asProxy('/batches', 'admin')).text())?.[1] as string;
    const before = await names(inbox());
    const send = (token: string): Promise<Response> =>
      asProxy('/upload', 'admin', { method: 'POST', headers: { 'x-csrf-token': token, 'x-file-name': 'proxied.csv' }, body: CSV });
    expect((await send('0'.repeat(64))).status).toBe(403);
    expect(await names(inbox())).toEqual(before);
    expect((await send(csrf)).status).toBe(201);
    expect(await names(inbox())).toContain('proxied.csv');
  });
});

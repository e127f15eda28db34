/**
 * The sign-in lock-out over real HTTP from two client addresses (127.0.0.2 guessing, 127.0.0.3 the user):
 * failures are counted per name and address, so a guesser cannot lock a user out of their own address nor
 * reset their own count by the user's sign-ins, and an unknown name is answered as a known one.
 */
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addUser, listUsers, unlockUser } from '../../src/console/index.js';
import { startTestConsole, type TestConsole } from '../support/console.js';

const PASSWORD = 'a long enough password';
const MAX_FAILURES = 3;
const GUESSER = '127.0.0.2';
const USER = '127.0.0.3';

let t: TestConsole;

beforeAll(async () => {
  t = await startTestConsole('payoutd-console-lockout-', () => ({ lockout: { maxFailures: MAX_FAILURES, lockMs: 3_600_000 } }));
}, 60_000);

afterAll(() => t?.close());

/** One HTTP exchange from `from`: its status, the session cookie if one was set, and the page. */
function exchange(from: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; cookies: string[]; page: string }>((resolve, reject) => {
    const url = new URL(path, t.base);
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', localAddress: from, headers }, (res) => {
      let page = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (page += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, cookies: res.headers['set-cookie'] ?? [], page }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Signs in from `from`: 'signed in', 'wrong' or 'locked', as the page tells it. */
async function signIn(from: string, name: string, password: string): Promise<string> {
  const form = await exchange(from, '/sign-in');
  const cookie = (form.cookies[0] ?? '').split(';')[0] as string;
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.page)?.[1] ?? '';
  const r = await exchange(
    from,
    '/sign-in',
    { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    new URLSearchParams({ csrf, name, password, next: '/batches' }).toString(),
  );
  if (r.cookies.some((c) => c.startsWith('payoutd_session=') && !c.includes('Max-Age=0'))) return 'signed in';
  if (r.page.includes('locked out')) return 'locked';
  if (r.page.includes('Wrong user name or password')) return 'wrong';
  return `${r.status}`;
}

const guesses = (from: string, name: string, n: number): Promise<string[]> =>
  Promise.all(Array.from({ length: n }, (_, i) => signIn(from, name, `wrong guess ${i}`)));

describe('console lock-out per name and client address', () => {
  it('a guesser locks the name out only from their own address; the approver still signs in from theirs', async () => {
    await addUser(t.db, 'ana', 'approver', PASSWORD, Date.now());
    const answers = await guesses(GUESSER, 'ana', 10);
    expect(answers.filter((a) => a === 'wrong')).toHaveLength(MAX_FAILURES);
    expect(answers.filter((a) => a === 'locked')).toHaveLength(10 - MAX_FAILURES);
    expect(await signIn(GUESSER, 'ana', PASSWORD)).toBe('locked');
    expect(await signIn(USER, 'ana', PASSWORD)).toBe('signed in');

    // The operator sees the lock and where it is from, and lifts it.
    const [ana] = (await listUsers(t.db, Date.now())).filter((u) => u.name === 'ana');
    expect(ana?.lockedUntil).toBeGreaterThan(Date.now());
    expect(ana?.lockedFrom).toEqual([GUESSER]);
    await unlockUser(t.db, 'ana');
    expect(await signIn(GUESSER, 'ana', PASSWORD)).toBe('signed in');
  });

  it('an unknown name is answered as a known one: wrong, then locked after the same number of guesses', async () => {
    await addUser(t.db, 'bo', 'approver', PASSWORD, Date.now());
    const known = [...(await guesses(GUESSER, 'bo', MAX_FAILURES + 2))].sort();
    const unknown = [...(await guesses(GUESSER, 'nobody-here', MAX_FAILURES + 2))].sort();
    expect(unknown).toEqual(known);
    expect(known.filter((a) => a === 'locked')).toHaveLength(2);
  });

  it("the user's sign-ins from another address do not reset a guesser's count", async () => {
    await addUser(t.db, 'cy', 'approver', PASSWORD, Date.now());
    const checked: string[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < MAX_FAILURES - 1; i++) checked.push(await signIn(GUESSER, 'cy', `wrong guess ${round}.${i}`));
      expect(await signIn(USER, 'cy', PASSWORD)).toBe('signed in');
    }
    expect(checked.filter((a) => a === 'wrong')).toHaveLength(MAX_FAILURES);
  });

  it('a name is stored as too short a part of its hash to tell which it was (a password typed there)', async () => {
    const typed = 'a password typed as the name';
    expect(await signIn(GUESSER, typed, typed)).toBe('wrong');
    const sha256 = createHash('sha256').update(typed).digest('hex');
    const keys = ((await t.db('console_sign_in_failures').select('name_hash')) as { name_hash: string }[]).map((r) => r.name_hash);
    expect(keys).not.toContain(sha256);
    expect(keys.every((k) => k.length <= 3)).toBe(true);
  });

  it('a user added under a name locked out before starts with no failures', async () => {
    expect(await guesses(GUESSER, 'dee', MAX_FAILURES)).toEqual(Array(MAX_FAILURES).fill('wrong'));
    expect(await signIn(GUESSER, 'dee', PASSWORD)).toBe('locked');
    await addUser(t.db, 'dee', 'approver', PASSWORD, Date.now());
    expect(await signIn(GUESSER, 'dee', PASSWORD)).toBe('signed in');
  });
});

/**
 * Console sign-in over real HTTP on a real SQLite file, with the log caught:
 * a refused sign-in logs the name only of a user that exists (an unknown
 * name may be a password typed into the wrong box), wrong passwords sent
 * all at once are checked no more often than the lock-out allows, and right
 * passwords among those checked sign in.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { addUser } from '../../src/console/index.js';
import type { Database } from '../../src/store/index.js';
import { pairOf } from '../store/sign-in-lockout.js';
import { startTestConsole, type TestConsole } from '../support/console.js';

const PASSWORD = 'a long enough password';
const MAX_FAILURES = 5;

let t: TestConsole;
let db: Database;
let base = '';
let lines: string[] = [];

beforeAll(async () => {
  const sink = new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString('utf8')), done()) });
  t = await startTestConsole('payoutd-console-sign-in-', () => ({
    logger: pino({ level: 'info' }, sink),
    lockout: { maxFailures: MAX_FAILURES, lockMs: 3_600_000 },
  }));
  ({ db, base } = t);
}, 60_000);

afterAll(() => t?.close());

beforeEach(() => {
  lines = [];
});

/** The sign-in form's double-submitted token: its cookie and its form value. */
async function signInForm(): Promise<{ cookie: string; csrf: string }> {
  const form = await fetch(`${base}/sign-in`, { redirect: 'manual' });
  const cookie = (form.headers.get('set-cookie') ?? '').split(';')[0] as string;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  return { cookie, csrf };
}

async function signIn(name: string, password: string, form?: { cookie: string; csrf: string }): Promise<Response> {
  const f = form ?? (await signInForm());
  return fetch(`${base}/sign-in`, {
    method: 'POST',
    headers: { cookie: f.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ csrf: f.csrf, name, password, next: '/batches' }),
    redirect: 'manual',
  });
}

const logged = (): Record<string, unknown>[] => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

describe('console sign-in: the log', () => {
  it('never logs a name no user has (it may be a password), and names a user that exists', async () => {
    await addUser(db, 'li', 'viewer', PASSWORD, Date.now());
    const typed = await signIn('S3cret-Passw0rd!', '');
    expect(typed.status).toBe(401);
    expect(await typed.text()).toContain('Wrong user name or password');
    expect(lines.join('')).not.toContain('S3cret');
    expect(logged()).toMatchObject([{ msg: 'console: sign-in refused', why: 'unknown-user' }]);
    expect(logged()[0]).not.toHaveProperty('user');

    lines = [];
    expect((await signIn('li', 'not the password')).status).toBe(401);
    expect(logged()).toMatchObject([{ msg: 'console: sign-in refused', user: 'li', why: 'bad-credentials' }]);
  });
});

const hasSession = (r: Response): boolean =>
  r.headers.getSetCookie().some((c) => c.startsWith('payoutd_session=') && !c.includes('Max-Age=0'));

/** What a refused sign-in's page says: a wrong password, or a lock-out. */
async function answerOf(r: Response): Promise<string> {
  const page = await r.text();
  if (hasSession(r)) return 'signed in';
  if (page.includes('locked out')) return 'locked';
  if (page.includes('Wrong user name or password')) return 'wrong';
  return `${r.status}`;
}

describe('console sign-in: guesses sent all at once', () => {
  it(`checks no more than ${MAX_FAILURES} of them, and the right password afterwards is locked out`, async () => {
    await addUser(db, 'maria', 'approver', PASSWORD, Date.now());
    const forms = await Promise.all(Array.from({ length: 40 }, () => signInForm()));
    const answers = await Promise.all(forms.map(async (f, i) => answerOf(await signIn('maria', `wrong guess ${i}`, f))));
    expect(answers.filter((a) => a === 'wrong')).toHaveLength(MAX_FAILURES);
    expect(answers.filter((a) => a === 'locked')).toHaveLength(40 - MAX_FAILURES);

    const right = await signIn('maria', PASSWORD);
    expect(await answerOf(right)).toBe('locked');
    expect((await pairOf(db, 'maria', '127.0.0.1')).lockedUntil).toBeGreaterThan(Date.now());
  });

  it('a burst with the right password in it signs in when the right one was checked, and is locked out otherwise', async () => {
    await addUser(db, 'jose', 'approver', PASSWORD, Date.now());
    const forms = await Promise.all(Array.from({ length: 31 }, () => signInForm()));
    const answers = await Promise.all(
      forms.map(async (f, i) => answerOf(await signIn('jose', i === 30 ? PASSWORD : `wrong guess ${i}`, f))),
    );
    const wrong = answers.filter((a) => a === 'wrong').length;
    if (answers[30] === 'signed in') {
      // Its success cleared the count when no other attempt had locked the name yet; guesses counted after
      // it start a new one (a burst that holds the password has it already).
      expect(wrong).toBeLessThanOrEqual(2 * MAX_FAILURES);
    } else {
      // Not among the attempts checked: refused like every guess past the limit, with the same text.
      expect(answers[30]).toBe('locked');
      expect(wrong).toBe(MAX_FAILURES);
      expect((await pairOf(db, 'jose', '127.0.0.1')).lockedUntil).toBeGreaterThan(Date.now());
    }
    expect(answers.filter((a) => a !== 'wrong' && a !== 'locked' && a !== 'signed in')).toEqual([]);
  });

  it(`signs in each of ${MAX_FAILURES} right passwords sent at once, and one sent with fewer wrong guesses`, async () => {
    await addUser(db, 'kai', 'approver', PASSWORD, Date.now());
    const forms = await Promise.all(Array.from({ length: MAX_FAILURES }, () => signInForm()));
    const rights = await Promise.all(forms.map(async (f) => answerOf(await signIn('kai', PASSWORD, f))));
    expect(rights).toEqual(Array.from({ length: MAX_FAILURES }, () => 'signed in'));
    expect(await pairOf(db, 'kai', '127.0.0.1')).toMatchObject({ failedAttempts: 0, lockedUntil: null });

    await addUser(db, 'lea', 'approver', PASSWORD, Date.now());
    const more = await Promise.all(Array.from({ length: MAX_FAILURES }, () => signInForm()));
    const mixed = await Promise.all(
      more.map(async (f, i) => answerOf(await signIn('lea', i === MAX_FAILURES - 1 ? PASSWORD : `wrong guess ${i}`, f))),
    );
    expect(mixed).toEqual([...Array.from({ length: MAX_FAILURES - 1 }, () => 'wrong'), 'signed in']);
  });
});

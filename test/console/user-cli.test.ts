/**
 * `payoutd user` as an administrator runs it (the compiled CLI on a config
 * file, the password piped in): add, list, a new password and role, unlock,
 * remove; a short password, an unknown role or a missing name are refused
 * with a message and change nothing. No password ever appears in the output
 * or in the database in clear.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyPassword } from '../../src/console/index.js';
import { closeDatabase, openDatabase } from '../../src/store/db.js';
import { getConsoleUser } from '../../src/store/index.js';
import { BIN, childEnv } from '../e2e/harness.js';

let dir = '';
let config = '';

function user(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [BIN, 'user', ...args, '--config', config],
      { cwd: dir, env: childEnv() },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end(input);
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-user-cli-'));
  config = join(dir, 'payoutd.yaml');
  await writeFile(config, `paths: { inbox: ${dir}/inbox, outbox: ${dir}/outbox, stateDir: ${dir}/state, create: true }\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('payoutd user', () => {
  it('adds, lists, changes and removes users; refuses mistakes with a message', async () => {
    // The first user before the daemon ever ran: the state database is made, and where is said.
    expect(await user(['add', 'maria', '--role', 'uploader'], 'first secret pw\n')).toMatchObject({
      code: 0,
      stdout: `state database made at ${join(dir, 'state', 'payoutd.sqlite')}\nuser maria added as uploader\n`,
    });
    expect((await user(['add', 'li', '--role', 'approver', '--proxy-only'])).code).toBe(0);
    const short = await user(['add', 'bob', '--role', 'viewer'], 'short\n');
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain('PASSWORD_TOO_SHORT: the password must have at least 10 characters');
    const noPassword = await user(['add', 'bob', '--role', 'viewer'], '');
    expect(noPassword.stderr).toContain('no password on standard input');
    expect((await user(['add', 'bob', '--role', 'root'], 'long enough pw\n')).stderr).toContain(
      'Choices: "viewer", "uploader", "approver", "admin"',
    );
    expect((await user(['add', 'maria', '--role', 'viewer'], 'long enough pw\n')).stderr).toContain('USER_EXISTS');
    expect((await user(['role', 'nobody', '--role', 'viewer'])).stderr).toContain('NO_SUCH_USER: no user nobody');

    expect((await user(['passwd', 'maria'], 'second secret pw\n')).stdout).toContain('password changed');
    expect((await user(['role', 'maria', '--role', 'admin'])).stdout).toContain('maria is now admin');
    expect((await user(['unlock', 'maria'])).code).toBe(0);
    const list = JSON.parse((await user(['list', '--json'])).stdout) as unknown[];
    expect(list).toEqual([
      { name: 'li', role: 'approver', hasPassword: false, lockedUntil: null, lockedFrom: [] },
      { name: 'maria', role: 'admin', hasPassword: true, lockedUntil: null, lockedFrom: [] },
    ]);
    const table = (await user(['list'])).stdout;
    expect(table).toMatch(/li\s+approver\s+proxy only/);
    const database = await readFile(join(dir, 'state', 'payoutd.sqlite'));
    for (const secret of ['first secret pw', 'second secret pw']) {
      expect(table).not.toContain(secret);
      expect(database.includes(Buffer.from(secret))).toBe(false);
    }
    expect((await user(['remove', 'li'])).stdout).toContain('user li removed');
    expect(JSON.parse((await user(['list', '--json'])).stdout)).toHaveLength(1);
  }, 60_000);

  it('keeps the spaces around a piped password: the password set is the one that signs in', async () => {
    expect((await user(['add', 'ana', '--role', 'viewer'], '  spaced secret pw  \n')).code).toBe(0);
    const db = openDatabase({
      client: 'sqlite',
      filename: join(dir, 'state', 'payoutd.sqlite'),
      poolMax: 1,
      busyTimeoutMs: 5000,
      synchronous: 'NORMAL',
    });
    try {
      const hash = (await getConsoleUser(db, 'ana'))?.passwordHash ?? '';
      expect(await verifyPassword('  spaced secret pw  ', hash)).toBe(true);
      expect(await verifyPassword('spaced secret pw', hash)).toBe(false);
    } finally {
      await closeDatabase(db);
    }
  }, 60_000);
});

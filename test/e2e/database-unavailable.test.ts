/**
 * A state database that cannot be reached or opened is said as such, in one line on stderr, by the real
 * `payoutd` process: the cause (connection refused, not a database, a folder, permission), the database
 * without the URL's password, no knex stack; never "lacks migration(s) … run payoutd migrate", which sent
 * an operator to migrate a database that was never the problem.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv } from './harness.js';

let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-db-unavailable-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `payoutd <command>` on a config with this `database` section. */
async function payoutd(command: string, database: string): Promise<{ code: number; stderr: string }> {
  const config = join(dir, `${command}-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(config, `paths: { stateDir: ${dir} }\ndatabase: ${database}\n`);
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, command, '--config', config], { cwd: dir, env: childEnv() }, (err, _out, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stderr }),
    );
  });
}

function expectOneLine(stderr: string, cause: RegExp): void {
  const lines = stderr.trimEnd().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^payoutd: DATABASE_UNAVAILABLE: the state database /);
  expect(lines[0]).toMatch(cause);
  expect(stderr).not.toMatch(/lacks migration|payoutd migrate/);
}

describe('a state database that cannot be used', () => {
  for (const command of ['status', 'migrate']) {
    it(`${command}: a PostgreSQL server that refuses the connection; the URL's password is not shown`, async () => {
      const r = await payoutd(command, '{ client: pg, url: "postgres://payoutd:s3cret-pw@127.0.0.1:1/payoutd" }');
      expectOneLine(r.stderr, /postgres:\/\/127\.0\.0\.1:1\/payoutd cannot be reached: connect ECONNREFUSED/);
      expect(r.stderr).not.toContain('s3cret-pw');
      expect(r.code).toBe(1);
    });

    it(`${command}: a file that is not a SQLite database`, async () => {
      const file = join(dir, `not-a-database-${command}.sqlite`);
      await writeFile(file, 'a spreadsheet saved under the name of the state database\n'.repeat(40));
      const r = await payoutd(command, `{ filename: ${file} }`);
      expectOneLine(r.stderr, /cannot be opened: file is not a database/);
    });

    it(`${command}: a folder where the file should be`, async () => {
      const folder = join(dir, `folder-${command}.sqlite`);
      await mkdir(folder);
      const r = await payoutd(command, `{ filename: ${folder} }`);
      expectOneLine(r.stderr, /cannot be opened: it is a folder, not a file/);
    });
  }

  // root reads every file: the permission is not denied to it.
  it.skipIf(process.getuid?.() === 0)('status: a file this user may not read', async () => {
    const file = join(dir, 'unreadable.sqlite');
    expect((await payoutd('migrate', `{ filename: ${file} }`)).code).toBe(0);
    await chmod(file, 0o000);
    const r = await payoutd('status', `{ filename: ${file} }`);
    expectOneLine(r.stderr, /cannot be opened: permission denied to this user/);
  });
});

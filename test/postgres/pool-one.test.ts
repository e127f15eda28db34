/**
 * database.poolMax 1 on PostgreSQL: the migration runs on the connection that holds its advisory lock, so
 * `payoutd migrate` (and every command and start that migrates first) needs no second connection; it used
 * to wait knex's 60 s for one and fail "Timeout acquiring a connection".
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { migrate } from '../../src/cli/commands/status.js';
import { manageUsers } from '../../src/cli/commands/users.js';
import { loadConfig, type ResolvedConfig } from '../../src/config/index.js';
import { pgQuery, pgReachable, useTestSchema } from './pg.js';

describe.skipIf(!pgReachable)('PostgreSQL with database.poolMax 1', () => {
  const schema = useTestSchema();
  let dir = '';
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function config(): Promise<ResolvedConfig> {
    dir ||= await mkdtemp(join(tmpdir(), 'payoutd-pg-pool-one-'));
    return loadConfig({ env: {}, cwd: dir }, { database: { client: 'pg', url: schema.url, poolMax: 1 }, paths: { stateDir: dir } });
  }

  it('payoutd migrate creates the schema, then finds it current; a command that migrates first works', async () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    try {
      await migrate(await config());
      await migrate(await config());
      await manageUsers(await config(), { action: 'add', name: 'ana', role: 'viewer', proxyOnly: true, json: false });
    } finally {
      spy.mockRestore();
    }
    expect(printed[0]).toMatch(/^applied: 0001_initial, /);
    expect(printed[1]).toBe('database schema is up to date\n');
    expect(await pgQuery(schema.url, 'select name, role from console_users')).toEqual([{ name: 'ana', role: 'viewer' }]);
  }, 20_000);
});

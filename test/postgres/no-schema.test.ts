/**
 * PostgreSQL: a search_path on a schema without payoutd's tables (an empty one, or one that does not exist)
 * is refused by every command but `migrate`, `run` and `user add` as NO_DATABASE, exit 78, creating no table;
 * `report --since` used to make the tables there and write a reconciliation of "0 payouts", exit 0. A schema
 * with a migration this build does not know is refused as SCHEMA_NEWER, exit 78, by the commands that
 * migrate too (knex's "migration directory is corrupt", exit 1, before).
 */
import { describe, expect, it } from 'vitest';
import { startE2e } from '../e2e/harness.js';
import { startInstances } from './instances.js';
import { PG_URL, pgQuery, pgReachable, useTestSchema, withSearchPath } from './pg.js';

/** Each test runs a dozen payoutd processes, one after another. */
const TEST_TIMEOUT_MS = 240_000;

const REFUSING = [
  ['report', '--since', '2026-11-01', '--out', 'reconciliation.csv'],
  ['status'],
  ['retry-file', '--batch', 'B1'],
  ['prune', '--days', '30'],
  ['cancel', '--batch', 'B1', '--reason', 'mistake'],
  ['user', 'list'],
];

/** The tables of `schema`. */
async function tablesOf(schema: string): Promise<string[]> {
  const rows = await pgQuery<{ table_name: string }>(PG_URL, 'select table_name from information_schema.tables where table_schema = $1', [
    schema,
  ]);
  return rows.map((r) => r.table_name);
}

describe.skipIf(!pgReachable)('postgres: a schema without payoutd tables, or of a newer build', () => {
  const schema = useTestSchema();

  it(
    'an empty schema, or one search_path names that does not exist: NO_DATABASE, exit 78, no table made',
    async () => {
      const e2e = await startE2e();
      const instances = await startInstances(e2e, schema);
      const config = await instances.configure('empty');
      const absent = `${schema.name}_absent`;
      const absentConfig = await instances.configure('absent', { database: { url: withSearchPath(PG_URL, absent) } });
      // The server as messages show it: no user, password or query.
      const url = new URL(PG_URL);
      const server = `${url.protocol}//${url.host}${url.pathname}`;
      const tail = '; the daemon makes it when it first starts, or payoutd migrate; nothing was written';
      for (const args of REFUSING) {
        const empty = await instances.cli('empty', args);
        expect({ args, code: empty.code, stdout: empty.stdout, stderr: empty.stderr.trimEnd() }).toEqual({
          args,
          code: 78,
          stdout: '',
          stderr: `payoutd: NO_DATABASE: no state database at ${server}, schema ${schema.name} (configuration ${config}: check its database.url)${tail}`,
        });
        const none = await instances.cli('absent', args);
        expect({ args, code: none.code, stdout: none.stdout, stderr: none.stderr.trimEnd() }).toEqual({
          args,
          code: 78,
          stdout: '',
          stderr:
            `payoutd: NO_DATABASE: no state database at ${server}: its search_path names no schema that exists ` +
            `(configuration ${absentConfig}: check its database.url)${tail}`,
        });
      }
      expect(await tablesOf(schema.name)).toEqual([]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a schema a newer build migrated: SCHEMA_NEWER, exit 78, from the commands that migrate and from run',
    async () => {
      const e2e = await startE2e();
      const instances = await startInstances(e2e, schema);
      await instances.configure('a');
      expect((await instances.cli('a', ['migrate'])).code).toBe(0);
      await pgQuery(schema.url, `insert into payoutd_migrations (name, batch, migration_time) values ('0099_future', 99, now())`);
      for (const args of [...REFUSING, ['migrate'], ['user', 'add', 'ana', '--role', 'viewer', '--proxy-only'], ['run']]) {
        const r = await instances.cli('a', args);
        expect({ args, code: r.code, stderr: r.stderr.trimEnd() }).toEqual({
          args,
          code: 78,
          stderr:
            'payoutd: SCHEMA_NEWER: the state database has migration(s) 0099_future, which this build of payoutd does not know: run the build that wrote it',
        });
      }
    },
    TEST_TIMEOUT_MS,
  );
});

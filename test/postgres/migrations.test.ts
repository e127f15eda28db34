/**
 * PostgreSQL 1: `payoutd migrate` (the compiled CLI, database.client pg)
 * creates the schema, a second run finds it current, and the tables,
 * columns, their types and nullability, and the named indexes are the same
 * as the SQLite schema the same migrations make; the columns that hold what a
 * file, the payout service or the configuration gives have no length on
 * PostgreSQL (SQLite ignores the one they are declared with).
 */
import { join } from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver.js';
import { describe, expect, it } from 'vitest';
import { startE2e } from '../e2e/harness.js';
import { startInstances } from './instances.js';
import { PG_URL, pgQuery, pgReachable, useTestSchema, withSearchPath } from './pg.js';

interface ColumnShape {
  /** 'integer', 'text' or 'timestamp': the type family (money columns must be text on both). */
  type: string;
  /** varchar length, null for unbounded types. */
  length: number | null;
  notNull: boolean;
}

type SchemaShape = Record<string, Record<string, ColumnShape>>;

/** Columns (`table.column`) of values nothing bounds before they are stored: unbounded text on PostgreSQL, whatever SQLite declares. */
const UNBOUNDED: readonly string[] = [
  'batches.file_name',
  'batches.stored_path',
  'batches.control_path',
  'batches.lease_owner',
  'batches.uploaded_by',
  'batch_errors.column_name',
  'payouts.merchant_reference_id',
  'payouts.payout_currency',
  'payouts.payout_amount',
  'payouts.deduction_currency',
  'payouts.payout_id',
  'payouts.service_status',
  'payouts.rate',
  'payouts.deduction_amount',
  'payouts.total_fee',
  'payouts.fee_currency',
  'payouts.create_time',
  'payouts.complete_time',
  'payouts.reason_code',
  'payouts.lease_owner',
  'payout_history.outcome',
  'webhook_events.event_id',
  'webhook_events.payout_id',
  'webhook_events.merchant_reference_id',
  'webhook_events.status',
  'file_claims.file_key',
  'file_claims.instance_id',
  'service_health.instance_id',
  'service_health.last_error_code',
  'batch_approvals.approver',
  'batch_approvals.agent',
  'batch_approvals.instance_id',
  'batch_events.lease_owner',
  'console_users.name',
  'console_sessions.user_name',
  'console_uploads.file_name',
  'console_uploads.uploader',
];

/** `shape` with the UNBOUNDED columns' length taken away: the SQLite schema as PostgreSQL should have it. */
function withoutBounds(shape: SchemaShape): SchemaShape {
  return Object.fromEntries(
    Object.entries(shape).map(([table, columns]) => [
      table,
      Object.fromEntries(
        Object.entries(columns).map(([column, c]) => [column, UNBOUNDED.includes(`${table}.${column}`) ? { ...c, length: null } : c]),
      ),
    ]),
  );
}

function typeFamily(declared: string): string {
  const t = declared.toLowerCase();
  if (t.includes('int')) return 'integer';
  if (t.includes('char') || t.includes('text')) return 'text';
  // knex's own migration_time: SQLite says datetime, PostgreSQL timestamptz.
  if (t.includes('timestamp') || t === 'datetime') return 'timestamp';
  return t;
}

async function postgresShape(url: string, schema: string): Promise<{ columns: SchemaShape; order: Record<string, string[]> }> {
  const rows = await pgQuery<{
    table_name: string;
    column_name: string;
    data_type: string;
    character_maximum_length: number | null;
    is_nullable: string;
  }>(
    url,
    `select table_name, column_name, data_type, character_maximum_length, is_nullable
       from information_schema.columns where table_schema = $1 order by table_name, ordinal_position`,
    [schema],
  );
  const columns: SchemaShape = {};
  const order: Record<string, string[]> = {};
  for (const r of rows) {
    (columns[r.table_name] ??= {})[r.column_name] = {
      type: typeFamily(r.data_type),
      length: r.character_maximum_length,
      notNull: r.is_nullable === 'NO',
    };
    (order[r.table_name] ??= []).push(r.column_name);
  }
  return { columns, order };
}

function sqliteShape(file: string): { columns: SchemaShape; order: Record<string, string[]>; indexes: string[] } {
  const db = openSqlite(file, { readonly: true });
  try {
    const tables = db.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`).pluck().all() as string[];
    const columns: SchemaShape = {};
    const order: Record<string, string[]> = {};
    for (const t of tables) {
      const info = db.pragma(`table_info(${t})`) as { name: string; type: string; notnull: number; pk: number }[];
      for (const c of info) {
        const length = /\((\d+)\)/.exec(c.type)?.[1];
        (columns[t] ??= {})[c.name] = {
          type: typeFamily(c.type),
          length: length === undefined ? null : Number.parseInt(length, 10),
          // SQLite lets a non-integer PRIMARY KEY hold NULL unless declared NOT NULL; PostgreSQL never does. The daemon never writes one.
          notNull: c.notnull === 1 || c.pk > 0,
        };
        (order[t] ??= []).push(c.name);
      }
    }
    const indexes = db
      .prepare(`select name from sqlite_master where type = 'index' and name not like 'sqlite_autoindex_%'`)
      .pluck()
      .all() as string[];
    return { columns, order, indexes: indexes.sort() };
  } finally {
    db.close();
  }
}

describe.skipIf(!pgReachable)('postgres: migrations', () => {
  const schema = useTestSchema();

  it('payoutd migrate makes on PostgreSQL the same tables and columns as on SQLite', async () => {
    const e2e = await startE2e();
    const instances = await startInstances(e2e, schema);
    await instances.configure('pg');
    await instances.configure('sqlite', { database: { client: 'sqlite' } });

    const first = await instances.cli('pg', ['migrate']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(
      'applied: 0001_initial, 0002_instances, 0003_claim_order, 0004_set_once_indexes, 0005_no_payout_id_index, 0006_holder_predicate_without_in',
    );
    const again = await instances.cli('pg', ['migrate']);
    expect([again.code, again.stdout.trim()]).toEqual([0, 'database schema is up to date']);

    const lite = await instances.cli('sqlite', ['migrate']);
    expect(lite.code, lite.stderr).toBe(0);

    const onPg = await postgresShape(schema.url, schema.name);
    const onLite = sqliteShape(join(instances.stateDir('sqlite'), 'payoutd.sqlite'));

    expect(Object.keys(onPg.columns).sort()).toEqual(
      [
        'batch_approvals',
        'batch_errors',
        'batch_event_deliveries',
        'batch_events',
        'batches',
        'console_sessions',
        'console_sign_in_failures',
        'console_uploads',
        'console_users',
        'file_claims',
        'payout_history',
        'payouts',
        'payoutd_migrations',
        'payoutd_migrations_lock',
        'report_ends',
        'service_health',
        'service_identity',
        'webhook_events',
      ].sort(),
    );
    expect(Object.keys(onPg.columns).sort()).toEqual(Object.keys(onLite.columns).sort());
    expect(onPg.order).toEqual(onLite.order);
    expect(onPg.columns).toEqual(withoutBounds(onLite.columns));
    // Each is a column SQLite declares with a length: none of the list is misspelt.
    for (const name of UNBOUNDED) {
      const [table, column] = name.split('.') as [string, string];
      expect(onLite.columns[table]?.[column]?.length, name).toBeGreaterThan(0);
    }
    // Money is decimal text on both engines, never a numeric type.
    for (const col of ['payout_amount', 'deduction_amount', 'total_fee', 'rate'])
      expect(onPg.columns.payouts?.[col]?.type, col).toBe('text');

    // The named indexes, among them the partial unique index behind "paid at most once".
    const pgIndexes = (
      await pgQuery<{ indexname: string }>(schema.url, `select indexname from pg_indexes where schemaname = $1`, [schema.name])
    )
      .map((r) => r.indexname)
      .filter((n) => !n.endsWith('_pkey'))
      .sort();
    expect(pgIndexes).toEqual(onLite.indexes);
    expect(pgIndexes).toContain('payouts_reference_holder');
    const holder = await pgQuery<{ indexdef: string }>(
      schema.url,
      `select indexdef from pg_indexes where schemaname = $1 and indexname = 'payouts_reference_holder'`,
      [schema.name],
    );
    expect(holder[0]?.indexdef).toMatch(/^CREATE UNIQUE INDEX .* WHERE/);
  });

  it('a search_path naming no schema that exists: migrate and run exit 78 naming it and the statement that makes it', async () => {
    const e2e = await startE2e();
    const instances = await startInstances(e2e, schema);
    const absent = `${schema.name}_absent`;
    await instances.configure('absent', { database: { url: withSearchPath(PG_URL, absent) } });
    const expected = new RegExp(
      `^payoutd: SCHEMA_MISSING: database\\.url: search_path names no schema that exists \\(${absent}\\).*CREATE SCHEMA ${absent} AUTHORIZATION postgres`,
    );
    const migrate = await instances.cli('absent', ['migrate']);
    expect([migrate.code, migrate.stdout]).toEqual([78, '']);
    expect(migrate.stderr.trim()).toMatch(expected);
    expect(migrate.stderr.trim().split('\n')).toHaveLength(1);
    const run = await instances.cli('absent', ['run']);
    expect(run.code).toBe(78);
    expect(run.stderr).toMatch(/SCHEMA_MISSING/);
    expect(await pgQuery(PG_URL, 'select 1 from pg_namespace where nspname = $1', [absent])).toEqual([]);
  });
});

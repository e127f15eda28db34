/**
 * PostgreSQL for the tests of several payoutd instances on one database:
 * where the server is (PAYOUTD_TEST_PG_URL, default the local trust-auth
 * server), whether it answers (probed once per test file, the reason printed
 * when it does not, so a skip is never silent), and one schema per test file
 * that every process of the file reaches through the URL option
 * `options=-c search_path=<schema>`. The schema is dropped after the file,
 * unless a test failed: then it is kept, named, as evidence.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { closeDatabase, migrateToLatest, openDatabase, type Database } from '../../src/store/db.js';

/** The server the tests use; any database the user may create schemas in. */
export const PG_URL = process.env.PAYOUTD_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The URL as it may be printed: the password (a secret) replaced. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable URL)';
  }
}

/** Null when the server answers a query within `timeoutMs`, else why not. */
export async function probePostgres(url: string, timeoutMs = 1000): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  // A refused or reset connection is reported by the rejected connect below; this only keeps it from being "unhandled".
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return null;
  } catch (err) {
    const e = err as { code?: string; message?: string };
    return `${e.code ?? 'error'}: ${String(e.message ?? err).slice(0, 200)}`;
  } finally {
    await client.end().catch(() => undefined); // already closed after a failed connect
  }
}

const reason = await probePostgres(PG_URL);

/** Whether PostgreSQL answered; test files use `describe.skipIf(!pgReachable)`. */
export const pgReachable = reason === null;

if (reason !== null) {
  console.warn(
    `postgres tests skipped: no PostgreSQL at ${redactUrl(PG_URL)} (${reason}); start one or set PAYOUTD_TEST_PG_URL (docs/high-availability.md)`,
  );
}

/** `url` with its search_path set to `schema` for every connection made from it (pg passes `options` to the server). */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.delete('options');
  const sep = u.search ? '&' : '?';
  return `${u.toString()}${sep}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/** Runs one statement (or a few) on the server with a short-lived client; returns the rows. */
export async function pgQuery<T = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}

export interface PgSchema {
  /** The schema's name, e.g. `payoutd_t_1a2b3c4d`. */
  readonly name: string;
  /** PG_URL pointing at the schema: the `database.url` of the instances. */
  readonly url: string;
}

/**
 * One schema for the calling test file, made before its tests and dropped
 * after them (kept when a test failed). Call inside `describe`.
 */
export function useTestSchema(): PgSchema {
  const name = `payoutd_t_${randomBytes(4).toString('hex')}`;
  const schema: PgSchema = { name, url: withSearchPath(PG_URL, name) };
  let failed = false;
  beforeAll(async () => {
    await pgQuery(PG_URL, `create schema ${name}`);
  });
  afterEach((ctx) => {
    // An `it.fails` test (a known bug) fails on purpose: no evidence to keep.
    if (ctx.task.result?.state === 'fail' && !ctx.task.fails) failed = true;
  });
  afterAll(async () => {
    if (failed) {
      console.error(`postgres: a test failed; schema ${name} is kept in ${redactUrl(PG_URL)} (drop schema ${name} cascade)`);
      return;
    }
    await pgQuery(PG_URL, `drop schema if exists ${name} cascade`);
  });
  return schema;
}

/**
 * A connection to the file's schema with none of payoutd's tables in it (a test before left them): for the
 * checks that take the schema through the migrations themselves.
 */
export async function openEmptySchema(schema: PgSchema): Promise<Database> {
  const db = openDatabase({ client: 'pg', filename: '', url: schema.url, poolMax: 2, busyTimeoutMs: 5000, synchronous: 'FULL' });
  await db.raw(
    'drop table if exists batch_event_deliveries, report_ends, service_identity, console_sessions, console_sign_in_failures, console_uploads, console_users, batch_approvals, batch_events, service_health, webhook_events, payout_history, payouts, batch_errors, file_claims, batches, payoutd_migrations, payoutd_migrations_lock cascade',
  );
  return db;
}

/** Opens the file's schema emptied (openEmptySchema) and taken to the latest migration: a pipeline's `database`. */
export function latestSchema(schema: PgSchema): () => Promise<Database> {
  return async () => {
    const db = await openEmptySchema(schema);
    await migrateToLatest(db);
    return db;
  };
}

/**
 * For each test of the calling `describe` (call it there): a connection to the file's schema emptied of
 * payoutd's tables (openEmptySchema), taken to the latest migration when `latest`, destroyed after the
 * test. Read `.db` inside the tests.
 */
export function useEmptySchema(schema: PgSchema, o: { latest: boolean }): { readonly db: Database } {
  let db: Database | null = null;
  beforeEach(async () => {
    db = await openEmptySchema(schema);
    if (o.latest) await migrateToLatest(db);
  });
  afterEach(async () => {
    if (db !== null) await closeDatabase(db);
    db = null;
  });
  return {
    get db(): Database {
      if (db === null) throw new Error('useEmptySchema: read .db inside a test');
      return db;
    },
  };
}

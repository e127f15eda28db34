/**
 * Opening and closing the state database: one knex instance per process (a second one on the same SQLite
 * file ends in SQLITE_BUSY), connection pragmas set as it opens, and the migrations.
 */
import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import knexFactory, { type knex, type Knex } from 'knex';
import { createRequire } from 'node:module';
import { migrationSource } from './migrations.js';
import { ConfigError, PayoutdError } from '../domain/errors.js';
import { shownUrl } from '../domain/url-path.js';
import { openSqlite, type SqliteConnection } from './sqlite-driver.js';

export type Database = Knex;

export interface DatabaseOptions {
  client: 'sqlite' | 'pg';
  filename: string;
  url?: string;
  poolMax: number;
  busyTimeoutMs: number;
  /** SQLite `synchronous`: FULL survives power loss, NORMAL only process crashes. */
  synchronous: 'FULL' | 'NORMAL';
  /** Read-only (status and report commands): never writes, not even the migration lock. */
  readOnly?: boolean;
}

// A new SQLite file's page size (an existing file keeps its own): fewer pages for a large intake, while each
// small transaction of the paying path still writes whole pages.
export const NEW_DATABASE_PAGE_BYTES = 16 * 1024;

let pgTypesSet = false;

// PostgreSQL returns int8 as text; ours are ms timestamps and counters, never money. pg is loaded only
// when a PostgreSQL database is opened.
function setPgTypes(): void {
  if (pgTypesSet) return;
  const pg = createRequire(import.meta.url)('pg') as typeof import('pg');
  pg.types.setTypeParser(20, (v: string) => Number.parseInt(v, 10));
  pgTypesSet = true;
}

/** knex's table of the migrations applied. */
const MIGRATIONS_TABLE = 'payoutd_migrations';

/** How long a query waits for the one SQLite connection (knex's own default). */
const ACQUIRE_TIMEOUT_MS = 60_000;

/** What each database openDatabase opened is called in a message: its file, or its server without credentials. */
const databaseNames = new WeakMap<Database, string>();

// knex logs each failed connection with its stack before the query fails with the same error, which the
// command then says in one line.
const knexLog: Knex.Config['log'] = {
  warn: (message: string) => {
    if (!message.startsWith('Acquire connection error')) console.warn(`knex: ${message}`);
  },
};

/** The pool of each SQLite database openDatabase opened, for closeDatabase. */
const sqlitePools = new WeakMap<Database, knex.KnexPool<SqliteConnection>>();

const COMMON_CONFIG: Knex.Config = {
  migrations: { migrationSource, tableName: MIGRATIONS_TABLE },
  log: knexLog,
  // A failed query's message names its statement with `?` for each value, never the values (account numbers).
  compileSqlOnError: false,
};

export function openDatabase(o: DatabaseOptions): Database {
  if (o.client === 'pg') {
    if (!o.url) throw new Error('database.url is required for client pg');
    setPgTypes();
    const pg = knexFactory({
      client: 'pg',
      connection: o.url,
      pool: { min: 0, max: o.poolMax },
      ...COMMON_CONFIG,
    });
    databaseNames.set(pg, shownUrl(o.url, 'database.url'));
    return pg;
  }
  if (!o.readOnly) mkdirSync(dirname(o.filename), { recursive: true });
  // knex's documented outside pool, so that the connection comes from the better-sqlite3 this Node runs
  // (sqlite-driver.ts); knex does not close such a pool, closeDatabase does.
  const pool = new knexFactory.KnexPool<SqliteConnection>({
    min: 1,
    max: 1,
    acquireTimeoutMillis: ACQUIRE_TIMEOUT_MS,
    // A file that cannot be opened fails the query that waits for it, at once (knex's own pool does the same).
    propagateCreateError: true,
    create: async () => openSqliteConnection(o),
    destroy: (conn) => conn.close(),
  });
  const db = knexFactory({
    client: 'better-sqlite3',
    connectionPool: pool,
    useNullAsDefault: true,
    ...COMMON_CONFIG,
  });
  sqlitePools.set(db, pool);
  databaseNames.set(db, o.filename);
  return db;
}

function openSqliteConnection(o: DatabaseOptions): SqliteConnection {
  let conn: SqliteConnection;
  try {
    conn = openSqlite(o.filename, { readonly: o.readOnly ?? false });
    // Reads the file's header: a file that is not a database fails here, also for a read-only command.
    conn.pragma('schema_version');
  } catch (err) {
    throw unopenableFile(err, o.filename);
  }
  try {
    conn.pragma(`busy_timeout = ${Math.trunc(o.busyTimeoutMs)}`);
    if (!o.readOnly) {
      // Before WAL mode, which writes a new file's first page (and so fixes its page size).
      conn.pragma(`page_size = ${NEW_DATABASE_PAGE_BYTES}`);
      conn.pragma('journal_mode = WAL');
      conn.pragma('foreign_keys = ON');
      conn.pragma(`synchronous = ${o.synchronous}`);
    }
    return conn;
  } catch (err) {
    conn.close();
    throw err;
  }
}

/** A SQLite file that cannot be opened, said in one line with what to check. */
function unopenableFile(err: unknown, filename: string): unknown {
  const code = String((err as { code?: unknown }).code);
  if (code.startsWith('SQLITE_BUSY')) return err;
  const why = fileProblem(filename) ?? (err as Error).message;
  return new DatabaseUnavailableError(
    'DATABASE_UNAVAILABLE',
    `the state database ${filename} cannot be opened: ${why} (check database.filename and paths.stateDir)`,
    { cause: err },
  );
}

/** Why SQLite could not open a file, as the file system says. */
function fileProblem(filename: string): string | null {
  try {
    if (statSync(filename).isDirectory()) return 'it is a folder, not a file';
    accessSync(filename, constants.R_OK);
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM') return 'permission denied to this user';
    return code === 'ENOENT' ? 'no such file or folder' : null;
  }
}

// knex opens a SQLite transaction with a plain BEGIN, which takes the write lock only at the first write. A
// transaction that reads first fails at its write, at once and without waiting busy_timeout ("database is
// locked", SQLITE_BUSY_SNAPSHOT), when another process committed in between: `payoutd approve` beside the
// daemon, either way round. A first statement that writes nothing but takes the lock makes them take turns.
export const TAKE_WRITE_LOCK = 'update batches set id = id where 0';

/**
 * A transaction of the store: on SQLite it holds the write lock from its first statement. One inside another
 * (a savepoint) runs under the lock its outer transaction took.
 */
export function writeTransaction<T>(
  db: Database,
  work: (trx: Knex.Transaction) => Promise<T>,
  config?: Knex.TransactionConfig,
): Promise<T> {
  if (isPostgres(db) || db.isTransaction === true) return db.transaction(work, config);
  return db.transaction(async (trx) => {
    try {
      await trx.raw(TAKE_WRITE_LOCK);
    } catch (err) {
      if (!String((err as { code?: unknown }).code).startsWith('SQLITE_BUSY')) throw err;
      throw new DatabaseBusyError(
        'DATABASE_BUSY',
        'the state database stayed locked by another process (the daemon or a payoutd command) for longer than ' +
          'database.busyTimeoutMs; nothing was written: try again',
        { cause: err },
      );
    }
    return work(trx);
  }, config);
}

export class DatabaseBusyError extends PayoutdError {
  override readonly name = 'DatabaseBusyError';
}

/** Closes a database openDatabase opened. Not knex's destroy alone, which leaves a SQLite pool open. */
export async function closeDatabase(db: Database): Promise<void> {
  await db.destroy();
  await sqlitePools.get(db)?.destroy();
}

/** The names of the migrations this build knows, in order. */
async function knownMigrations(): Promise<string[]> {
  return (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
}

/** The names of the migrations the database has applied (none before its first migration). Reads only. */
async function appliedMigrations(db: Database): Promise<string[]> {
  await reachDatabase(db);
  if (!(await db.schema.hasTable(MIGRATIONS_TABLE))) return [];
  return (await db(MIGRATIONS_TABLE).pluck('name')) as string[];
}

/** The migrations this build knows that the database lacks, and those it has that this build does not know. Reads only. */
async function schemaGap(db: Database): Promise<{ missing: string[]; newer: string[] }> {
  const [known, applied] = await Promise.all([knownMigrations(), appliedMigrations(db)]);
  return { missing: known.filter((n) => !applied.includes(n)), newer: applied.filter((n) => !known.includes(n)) };
}

/** Applies the pending migrations; returns their names (none: nothing was locked or written). */
export async function migrateToLatest(db: Database): Promise<string[]> {
  // Read first: an up-to-date database, every command's usual case, takes no lock, so a command that only
  // reads is not held up by a daemon in a long write. (knex's own lock is the first statement of its
  // transaction, an update, so on SQLite it waits busy_timeout for a writer.)
  const gap = await schemaGap(db);
  // Before knex, which would say "the migration directory is corrupt" and so invite a reinstall of this build.
  if (gap.newer.length > 0) throw schemaNewer(gap.newer);
  if (gap.missing.length === 0) return [];
  if (!isPostgres(db)) {
    const [, done] = (await db.migrate.latest()) as [number, string[]];
    return done;
  }
  await assertSchemaSelected(db);
  // Instances started together on an empty database would race to create knex's own tables: an
  // advisory lock makes them take turns. The migration runs in the lock's transaction, on its connection,
  // so that it needs no second one (database.poolMax 1).
  return db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtext(current_schema() || ?))', ['.payoutd_migrations']);
    const [, done] = (await trx.migrate.latest()) as [number, string[]];
    return done;
  });
}

/**
 * PostgreSQL creates in the first schema of search_path that exists and the role may use; with none, the
 * migration would fail on "no schema has been selected to create in" (3F000). Say which schema to make.
 */
async function assertSchemaSelected(db: Database): Promise<void> {
  const result = (await db.raw(
    `select current_schema() as "schema", current_setting('search_path') as "path", current_user as "role"`,
  )) as {
    rows: { schema: string | null; path: string; role: string }[];
  };
  const row = result.rows[0];
  if (!row || row.schema !== null) return;
  const named = row.path
    .split(',')
    .map((s) => s.trim().replace(/^"(.*)"$/, '$1'))
    .filter((s) => s !== '' && s !== '$user');
  const schema = named[0] ?? row.role;
  throw new ConfigError(
    'SCHEMA_MISSING',
    `database.url: search_path names no schema that exists (${row.path}), or none that role ${row.role} may use: ` +
      `create it once as the database's owner (CREATE SCHEMA ${schema} AUTHORIZATION ${row.role}), or correct search_path, then run payoutd migrate`,
  );
}

/** Throws unless every migration this build knows has been applied, and no other (read-only check). */
export async function assertSchemaCurrent(db: Database): Promise<void> {
  const { missing, newer } = await schemaGap(db);
  if (newer.length > 0) throw schemaNewer(newer);
  if (missing.length > 0) {
    throw new SchemaError(
      'SCHEMA_NOT_CURRENT',
      `the state database lacks migration(s) ${missing.join(', ')}: start the daemon or run \`payoutd migrate\` first`,
    );
  }
}

/** A newer build migrated it (a rollback of the package, say): this build's reads and writes may be wrong on it. */
function schemaNewer(newer: readonly string[]): SchemaError {
  return new SchemaError(
    'SCHEMA_NEWER',
    `the state database has migration(s) ${newer.join(', ')}, which this build of payoutd does not know: run the build that wrote it`,
  );
}

/**
 * Whether payoutd's schema was ever made where this database looks (a migration applied), and on PostgreSQL
 * which schema that is (null: search_path names none that exists). Reads only.
 */
export async function schemaFound(db: Database): Promise<{ found: boolean; schema?: string | null }> {
  const found = (await appliedMigrations(db)).length > 0;
  if (!isPostgres(db)) return { found };
  const result = (await db.raw('select current_schema() as "schema"')) as { rows: { schema: string | null }[] };
  return { found, schema: result.rows[0]?.schema ?? null };
}

export class SchemaError extends PayoutdError {
  override readonly name = 'SchemaError';
}

/** The least a database answers. */
const PING = 'select 1';

/** Rejects when the database cannot answer (the readiness probe). */
export async function pingDatabase(db: Database): Promise<void> {
  await db.raw(PING);
}

/**
 * A command's first query: a database that cannot be reached or opened fails it with the cause in one line
 * (connection refused, authentication, not a database, permission), never as a schema to migrate.
 */
async function reachDatabase(db: Database): Promise<void> {
  try {
    await pingDatabase(db);
  } catch (err) {
    if (err instanceof PayoutdError) throw err;
    const e = err as { name?: string; message?: string };
    // knex puts the statement before the driver's message of a failed query.
    const said = String(e.message ?? err).replace(`${PING} - `, '');
    const why = e.name === 'KnexTimeoutError' ? 'no connection within 60 s: the server does not answer' : said;
    throw new DatabaseUnavailableError(
      'DATABASE_UNAVAILABLE',
      `the state database ${databaseNames.get(db) ?? ''} cannot be reached: ${why} (check database.url)`,
      { cause: err },
    );
  }
}

/** The state database cannot be opened or reached (the command changed nothing). */
export class DatabaseUnavailableError extends PayoutdError {
  override readonly name = 'DatabaseUnavailableError';
}

export function isPostgres(db: Database): boolean {
  return db.client.config.client === 'pg';
}

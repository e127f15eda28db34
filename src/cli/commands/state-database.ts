/**
 * How the commands reach the state database. Only `migrate`, `run` and `user add` make one; every other
 * command refuses a database that is not there (NO_DATABASE, exit 78), since one made for it would be empty:
 * a configuration not named (`-c` forgotten, PAYOUTD_CONFIG dropped by sudo), a mistyped database.filename,
 * or a search_path on another schema would give a reconciliation saying nothing was paid. A schema of a newer
 * build is refused by every command alike (SCHEMA_NEWER, exit 78).
 */
import { existsSync } from 'node:fs';
import type { ResolvedConfig } from '../../config/index.js';
import { ConfigError } from '../../domain/errors.js';
import { shownUrl } from '../../domain/url-path.js';
import { assertSchemaCurrent, closeDatabase, migrateToLatest, openStore, schemaFound, type Database } from '../../store/index.js';

/** The configured database, refused unless payoutd's schema is in it; never made, nor written to when absent. */
export async function openExistingStore(config: ResolvedConfig, readOnly = false): Promise<Database> {
  if (config.database.client === 'sqlite' && !existsSync(config.databaseFile)) throw noDatabase(config, config.databaseFile);
  // Looked at read-only first: a file that is not payoutd's (an empty one, another program's) is left as it
  // was, not even switched to WAL. PostgreSQL has no read-only open: the same connections serve.
  const db = openStore(config, true);
  let found: Awaited<ReturnType<typeof schemaFound>>;
  try {
    found = await schemaFound(db);
  } catch (err) {
    await closeDatabase(db);
    throw err;
  }
  if (!found.found) {
    await closeDatabase(db);
    const file = config.database.client === 'sqlite' ? ": the file is there, with none of payoutd's tables" : '';
    throw noDatabase(config, `${placeOf(config, found.schema)}${file}`);
  }
  if (readOnly || config.database.client === 'pg') return db;
  await closeDatabase(db);
  return openStore(config);
}

/** Read-only access for status and reports: a running daemon is never disturbed. */
export async function withReadOnlyStore<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>): Promise<T> {
  return withStore(await openExistingStore(config, true), assertSchemaCurrent, f);
}

/** A database there, at this build's schema (commands that decide on a batch: cancel, release, approve). */
export async function withCurrentStore<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>): Promise<T> {
  return withStore(await openExistingStore(config), assertSchemaCurrent, f);
}

/** A database there, brought up to date first if an older build made it (a report's records, retention, users). */
export async function withMigratedStore<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>): Promise<T> {
  return withStore(await openExistingStore(config), migrateToLatest, f);
}

/**
 * `user add` before the daemon first ran (docs/console.md): the database is made when there is none, and the
 * command says where, so that one made in the wrong place is seen.
 */
export async function withStoreMade<T>(config: ResolvedConfig, f: (db: Database) => Promise<T>, made: (where: string) => void): Promise<T> {
  const db = openStore(config);
  return withStore(
    db,
    async () => {
      const before = await schemaFound(db);
      await migrateToLatest(db);
      if (!before.found) made(placeOf(config, before.schema));
    },
    f,
  );
}

async function withStore<T>(db: Database, ready: (db: Database) => Promise<unknown>, f: (db: Database) => Promise<T>): Promise<T> {
  try {
    await ready(db);
    return await f(db);
  } finally {
    await closeDatabase(db);
  }
}

/** The database a message names: the SQLite file, or the PostgreSQL server and schema (without credentials). */
function placeOf(config: ResolvedConfig, schema: string | null | undefined): string {
  if (config.database.client === 'sqlite') return config.databaseFile;
  const server = shownUrl(config.database.url ?? '', 'database.url');
  return schema ? `${server}, schema ${schema}` : `${server}: its search_path names no schema that exists`;
}

function noDatabase(config: ResolvedConfig, place: string): ConfigError {
  const option = config.database.client === 'sqlite' ? 'database.filename' : 'database.url';
  const read =
    config.source === null
      ? "no configuration file was named with --config or PAYOUTD_CONFIG, so these are the built-in defaults: name the daemon's with --config"
      : `configuration ${config.source}: check its ${option}`;
  return new ConfigError(
    'NO_DATABASE',
    `no state database at ${place} (${read}); the daemon makes it when it first starts, or payoutd migrate; nothing was written`,
  );
}

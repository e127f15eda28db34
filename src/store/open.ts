/**
 * Opening the state database a configuration names. It lives beside the
 * database code, not in the daemon's runtime, so the commands that only read
 * or change the database (status, report, retry-file, release, cancel,
 * migrate) load the store and nothing of the daemon, the API client, the
 * sandbox, metrics or the webhook receiver.
 */
import { openDatabase, type Database, type DatabaseOptions } from './db.js';

/**
 * What the store reads of the configuration (a ResolvedConfig has it): the store depends on the domain alone,
 * not on the configuration module, which itself knows the ingest rules.
 */
export interface StoreSettings {
  databaseFile: string;
  database: Pick<DatabaseOptions, 'client' | 'url' | 'poolMax' | 'busyTimeoutMs' | 'synchronous'>;
}

/** The configured database; `readOnly` for commands that must never write (status, reports). */
export function openStore(config: StoreSettings, readOnly = false): Database {
  return openDatabase({
    readOnly,
    client: config.database.client,
    filename: config.databaseFile,
    url: config.database.url,
    poolMax: config.database.poolMax,
    busyTimeoutMs: config.database.busyTimeoutMs,
    synchronous: config.database.synchronous,
  });
}

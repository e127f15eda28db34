/** Opening the state database a configuration names, without loading the daemon (status, report and other commands). */
import { openDatabase, type Database, type DatabaseOptions } from './db.js';

/** What the store reads of the configuration: the store depends on the domain alone. */
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

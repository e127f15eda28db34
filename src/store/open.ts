/**
 * Opening the state database a configuration names. It lives beside the
 * database code, not in the daemon's runtime, so the commands that only read
 * or change the database (status, report, retry-file, release, cancel,
 * migrate) load the store and nothing of the daemon, the API client, the
 * sandbox, metrics or the webhook receiver.
 */
import type { ResolvedConfig } from '../config/index.js';
import { openDatabase, type Database } from './db.js';

/** The configured database; `readOnly` for commands that must never write (status, reports). */
export function openStore(config: ResolvedConfig, readOnly = false): Database {
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

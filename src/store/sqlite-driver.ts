/** The SQLite driver for the running Node: every SQLite connection of the project opens its file here. */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export type SqliteConnection = BetterSqlite3.Database;
export type SqliteOpenOptions = BetterSqlite3.Options;

// better-sqlite3 12 aborts the process on Node 24.19+ when V8 collects a Statement outside a context (ObjectWrap's
// cleanup hooks, nodejs/node#65446 and #63642); 13 moved to Node-API but needs Node 22, hence 12 on Node 20 only.
const DRIVER_PACKAGE = Number(process.versions.node.split('.')[0]) >= 22 ? 'better-sqlite3' : 'better-sqlite3-node20';

let driver: typeof BetterSqlite3 | undefined;

/** Opens the SQLite file `filename` (better-sqlite3's own options: readonly, fileMustExist, timeout). */
export function openSqlite(filename: string, options?: SqliteOpenOptions): SqliteConnection {
  driver ??= createRequire(import.meta.url)(DRIVER_PACKAGE) as typeof BetterSqlite3;
  return new driver(filename, options);
}

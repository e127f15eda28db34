/**
 * A console for the tests over real HTTP: listening on 127.0.0.1 on a free
 * port, with real inbox, outbox and state folders in a temp folder of its
 * own and a migrated SQLite database there. Silent, with no approvals and
 * a 5-failure lock-out, unless a test says otherwise.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ConsoleServer, noApprovals } from '../../src/console/index.js';
import type { ConsoleOptions } from '../../src/console/server.js';
import { outboxName } from '../../src/daemon/outbox.js';
import { closeDatabase, type Database } from '../../src/store/index.js';
import { openTestDatabase } from './database.js';

export interface TestConsole {
  dir: string;
  db: Database;
  options: ConsoleOptions;
  server: ConsoleServer;
  /** The console's URL, without a trailing slash. */
  base: string;
  /** Stops the server, closes the database and removes the folder. */
  close(): Promise<void>;
}

/** `overrides` is given the database, for options built on it (approvals through it, say). */
export async function startTestConsole(
  prefix: string,
  overrides: (db: Database) => Partial<ConsoleOptions> = () => ({}),
): Promise<TestConsole> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  for (const d of ['inbox', 'outbox', 'state']) await mkdir(join(dir, d));
  const db = await openTestDatabase(join(dir, 'state'));
  const options: ConsoleOptions = {
    host: '127.0.0.1',
    port: 0,
    db,
    logger: pino({ level: 'silent' }),
    now: () => Date.now(),
    inbox: join(dir, 'inbox'),
    outbox: join(dir, 'outbox'),
    stateDir: join(dir, 'state'),
    inboxIgnore: [],
    outboxNameOf: outboxName,
    approvals: noApprovals,
    trustedProxies: [],
    userHeader: 'Remote-User',
    sessionMs: 3_600_000,
    secureCookie: false,
    lockout: { maxFailures: 5, lockMs: 60_000 },
    maxUploadBytes: 1 << 20,
    refreshMs: 3000,
    pageSize: 50,
    ...overrides(db),
  };
  const server = new ConsoleServer(options);
  const base = await server.listen();
  return {
    dir,
    db,
    options,
    server,
    base,
    async close() {
      await server.close();
      await closeDatabase(db);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

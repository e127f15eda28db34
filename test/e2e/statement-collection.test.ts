/**
 * E2E (the SQLite driver on the running Node): a process that runs many
 * queries through the compiled store, then lets V8 collect the statements
 * they prepared, exits 0. better-sqlite3 12 built against Node 24.19+
 * headers aborts such a process (`Assertion failed: (env) != nullptr` in
 * `RemoveEnvironmentCleanupHook`, from `Statement::~Statement`) when a
 * collection happens outside any JavaScript context, as the demo did; the
 * store must pick a driver that does not (src/store/sqlite-driver.ts). The
 * child proves a collection happened: statements it prepared itself are
 * reported collected by a FinalizationRegistry.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ROOT, childEnv } from './harness.js';

/** The child: knex queries as the daemon runs them, then its own statements, then collections from JS and from a V8 task. */
const CHILD = `
const [dbUrl, driverUrl, file] = process.argv.slice(1);
const { openDatabase, migrateToLatest, closeDatabase } = await import(dbUrl);
const { openSqlite } = await import(driverUrl);
const db = openDatabase({ client: 'sqlite', filename: file, poolMax: 1, busyTimeoutMs: 5000, synchronous: 'NORMAL' });
await migrateToLatest(db);
for (let i = 0; i < 2000; i++) await db('payoutd_migrations').where('id', '>', i).select('name');
let collected = 0;
const registry = new FinalizationRegistry(() => collected++);
const raw = openSqlite(file, { readonly: true });
for (let i = 0; i < 200; i++) registry.register(raw.prepare('select ' + i + ' as n'), i);
for (let round = 0; round < 50 && collected === 0; round++) {
  globalThis.gc();
  // A major collection run as a V8 task, outside any context: where the abort happened.
  globalThis.gc({ type: 'major', execution: 'async' });
  await new Promise((resolve) => setTimeout(resolve, 20));
}
raw.close();
await closeDatabase(db);
console.log(JSON.stringify({ collected }));
`;

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-collect-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the SQLite driver on this Node', () => {
  it('survives the collection of the statements many queries prepared', async () => {
    const args = [
      '--expose-gc',
      '--input-type=module',
      '--eval',
      CHILD,
      pathToFileURL(join(ROOT, 'dist', 'store', 'db.js')).href,
      pathToFileURL(join(ROOT, 'dist', 'store', 'sqlite-driver.js')).href,
      join(dir, 'state.sqlite'),
    ];
    const outcome = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, args, { env: childEnv(), timeout: 50_000 }, (_err, stdout, stderr) =>
        resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr }),
      );
    });
    expect(outcome.stderr).not.toContain('Assertion failed');
    expect({ code: outcome.code, signal: outcome.signal }).toEqual({ code: 0, signal: null });
    const { collected } = JSON.parse(outcome.stdout) as { collected: number };
    expect(collected).toBeGreaterThan(0);
  });
});

/**
 * A state database that is not there, or of a newer build, met by the real `payoutd` process. Only `migrate`,
 * `run` and `user add` make a database; every other command refuses an absent one as `status` does
 * (NO_DATABASE, exit 78, the same line) and leaves the folder as it was. `report --since` used to make an empty
 * database where a forgotten `-c` or a mistyped database.filename pointed, and write a reconciliation of
 * "0 payouts", exit 0: a file saying nothing was paid. A schema with a migration this build does not know is
 * refused by every command as SCHEMA_NEWER, exit 78; the commands that migrate used to pass it to knex, whose
 * "migration directory is corrupt" (exit 1) invited a reinstall, and made systemd restart `run` forever.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeDatabase, openDatabase } from '../../src/store/db.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openTestDatabase, TEST_DATABASE_FILE } from '../support/database.js';
import { BIN, childEnv } from './harness.js';

let root = '';

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'payoutd-no-database-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function payoutd(cwd: string, args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { cwd, env: childEnv() }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

/** Every file and folder under `dir` with its size (a folder's as 0): what a command made or changed. */
async function contents(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const listed = await Promise.all(
    entries.map(async (e) => {
      const path = join(e.parentPath, e.name);
      return `${relative(dir, path)} ${e.isDirectory() ? 0 : (await stat(path)).size}`;
    }),
  );
  return listed.sort();
}

const NEWER = '0099_future';

type Kind = 'no configuration' | 'a mistyped database.filename' | 'an empty file' | 'a newer schema';
const ALL: readonly Kind[] = ['no configuration', 'a mistyped database.filename', 'an empty file', 'a newer schema'];

interface Setup {
  dir: string;
  /** `--config FILE`, or nothing (the built-in defaults, as with `-c` forgotten). */
  config: string[];
  /** The one line the command must print on stderr. */
  said: string;
}

let made = 0;

/** `dir/payoutd.yaml` naming `file` as the state database, and folders that exist (paths.create is off with a file). */
async function configure(dir: string, file: string): Promise<string> {
  for (const folder of ['inbox', 'outbox']) await mkdir(join(dir, folder));
  const config = join(dir, 'payoutd.yaml');
  await writeFile(
    config,
    `paths: { stateDir: ${dir}, inbox: ${join(dir, 'inbox')}, outbox: ${join(dir, 'outbox')} }\n` +
      `database: { filename: ${file} }\nretention: { days: 30 }\n`,
  );
  return config;
}

/** A folder of its own holding what `kind` names, with a configuration whose folders exist (paths.create is off with a file). */
async function setUp(kind: Kind): Promise<Setup> {
  const dir = join(root, `${++made}`);
  await mkdir(dir);
  if (kind === 'no configuration') {
    const file = join(dir, 'var', 'state', 'payoutd.sqlite');
    return {
      dir,
      config: [],
      said:
        `payoutd: NO_DATABASE: no state database at ${file} (no configuration file was named with --config or PAYOUTD_CONFIG, ` +
        "so these are the built-in defaults: name the daemon's with --config); the daemon makes it when it first starts, " +
        'or payoutd migrate; nothing was written',
    };
  }
  const file = join(dir, kind === 'a mistyped database.filename' ? 'state.sqlit' : TEST_DATABASE_FILE);
  const config = await configure(dir, file);
  const noDatabase = (what: string): string =>
    `payoutd: NO_DATABASE: no state database at ${what} (configuration ${config}: check its database.filename); ` +
    'the daemon makes it when it first starts, or payoutd migrate; nothing was written';
  if (kind === 'an empty file') {
    await writeFile(file, '');
    return { dir, config: ['--config', config], said: noDatabase(`${file}: the file is there, with none of payoutd's tables`) };
  }
  // The database the daemon uses, beside the name the configuration mistyped; or one a newer build migrated.
  const db = await openTestDatabase(dir);
  if (kind === 'a newer schema') await db('payoutd_migrations').insert({ name: NEWER, batch: 99, migration_time: new Date() });
  await closeDatabase(db);
  if (kind === 'a mistyped database.filename') return { dir, config: ['--config', config], said: noDatabase(file) };
  return {
    dir,
    config: ['--config', config],
    said: `payoutd: SCHEMA_NEWER: the state database has migration(s) ${NEWER}, which this build of payoutd does not know: run the build that wrote it`,
  };
}

/** The migrations the database in `dir` holds (read-only). */
async function migrationsIn(dir: string): Promise<string[]> {
  const db = openDatabase({
    client: 'sqlite',
    filename: join(dir, TEST_DATABASE_FILE),
    poolMax: 1,
    busyTimeoutMs: 5000,
    synchronous: 'NORMAL',
    readOnly: true,
  });
  try {
    return (await db('payoutd_migrations').orderBy('id').pluck('name')) as string[];
  } finally {
    await closeDatabase(db);
  }
}

const COMMANDS: [string, readonly Kind[]][] = [
  ['status', ALL],
  ['report --batch B1', ALL],
  ['report --since 2026-11-01 --out reconciliation.csv', ALL],
  ['retry-file --batch B1', ALL],
  ['prune --days 30', ALL],
  ['cancel --batch B1 --reason mistake', ALL],
  ['release --batch B1', ALL],
  ['approve --batch B1', ALL],
  ['reject --batch B1 --reason mistake', ALL],
  ['user list', ALL],
  ['user remove ana', ALL],
  // These make a database when there is none (as they should); a newer one they refuse.
  ['user add ana --role viewer --proxy-only', ['a newer schema']],
  ['migrate', ['a newer schema']],
  ['run', ['a newer schema']],
];

describe.each(COMMANDS)('payoutd %s', (command, kinds) => {
  it.each(kinds)('%s: refused with exit 78, the one line status says; nothing made or written', async (kind) => {
    const setup = await setUp(kind);
    const before = await contents(setup.dir);
    const r = await payoutd(setup.dir, [...command.split(' '), ...setup.config]);
    expect({ code: r.code, stderr: r.stderr.trimEnd(), stdout: r.stdout }).toEqual({ code: 78, stderr: setup.said, stdout: '' });
    if (kind === 'a newer schema') expect(await migrationsIn(setup.dir)).toEqual([...MIGRATIONS.map((m) => m.name), NEWER]);
    else expect(await contents(setup.dir)).toEqual(before);
  });
});

describe('the commands that make a database', () => {
  it('user add makes one when there is none, and says where', async () => {
    const setup = await setUp('no configuration');
    const r = await payoutd(setup.dir, ['user', 'add', 'ana', '--role', 'viewer', '--proxy-only']);
    const file = join(setup.dir, 'var', 'state', 'payoutd.sqlite');
    expect(r).toEqual({
      code: 0,
      stderr: '',
      stdout: `state database made at ${file}\nuser ana added as viewer (signs in through the reverse proxy only)\n`,
    });
    // Made once: the next user is added to it without a word about it.
    const next = await payoutd(setup.dir, ['user', 'add', 'li', '--role', 'viewer', '--proxy-only']);
    expect(next.stdout).toBe('user li added as viewer (signs in through the reverse proxy only)\n');
  });
});

describe('a database of an older build', () => {
  it('report --since still brings it up to date first, then writes the report', async () => {
    const dir = join(root, 'older');
    await mkdir(dir);
    const config = await configure(dir, join(dir, TEST_DATABASE_FILE));
    const older = openDatabase({
      client: 'sqlite',
      filename: join(dir, TEST_DATABASE_FILE),
      poolMax: 1,
      busyTimeoutMs: 5000,
      synchronous: 'NORMAL',
    });
    for (let i = 0; i < MIGRATIONS.length - 1; i++) await older.migrate.up();
    await closeDatabase(older);
    const r = await payoutd(dir, ['report', '--since', '2026-11-01', '--out', 'r.csv', '--config', config]);
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(r.stdout).toContain(`report: ${join(dir, 'r.csv')}`);
    expect(await migrationsIn(dir)).toEqual(MIGRATIONS.map((m) => m.name));
  });
});

/**
 * E2E (start-up cost): `payoutd` imports each command's module in its
 * handler, so `--version` loads no command at all and `status` / `migrate`
 * load the store and not the daemon, the API client, the sandbox, metrics
 * (prom-client), the webhook receiver, the report writers or exceljs (a
 * third of a second of CPU by itself). Checked by what the process loads,
 * never by how long it takes: the child runs the built CLI under a module
 * loader hook that appends the URL of every module it loads to a file.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, childEnv } from './harness.js';

const run = promisify(execFile);

/** Registered with --import: every module load (ESM, and the entry of each CommonJS package imported from ESM) is appended to $RECORD_MODULES. */
const RECORDER = `
import { register } from 'node:module';
const hooks = \`
import { appendFileSync } from 'node:fs';
export async function load(url, context, nextLoad) {
  appendFileSync(process.env.RECORD_MODULES, url + '\\\\n');
  return nextLoad(url, context);
}\`;
register('data:text/javascript,' + encodeURIComponent(hooks));
`;

/** Modules a read-only command must not load; each is loaded by `payoutd run` or an .xlsx report. */
const HEAVY: Record<string, RegExp> = {
  exceljs: /\/node_modules\/exceljs\//,
  'prom-client': /\/node_modules\/prom-client\//,
  // The test's config is SQLite: the PostgreSQL driver has no business loading.
  pg: /\/node_modules\/pg\//,
  daemon: /\/dist\/daemon\//,
  'API client': /\/dist\/api\//,
  sandbox: /\/dist\/sandbox\//,
  metrics: /\/dist\/metrics\//,
  webhook: /\/dist\/webhook\//,
  // status names outbox files and says what retention removed, from report's small naming and wording modules.
  'report writers': /\/dist\/report\/(?!(format|errors|types|retention-notes)\.js$)/,
};

let dir: string;
let recorder: string;
let configPath: string;
let runs = 0;

/** Runs the built CLI with the recorder; resolves with its stdout and the module URLs it loaded. */
async function loadedBy(args: string[]): Promise<{ stdout: string; modules: string[] }> {
  const record = join(dir, `modules-${++runs}.txt`);
  const { stdout } = await run(process.execPath, ['--import', pathToFileURL(recorder).href, BIN, ...args], {
    cwd: dir,
    env: { ...childEnv(), RECORD_MODULES: record },
  });
  return { stdout, modules: (await readFile(record, 'utf8')).split('\n').filter(Boolean) };
}

function heavyIn(modules: string[]): string[] {
  return Object.entries(HEAVY)
    .filter(([, pattern]) => modules.some((url) => pattern.test(url)))
    .map(([name]) => name);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'payoutd-startup-'));
  recorder = join(dir, 'record-modules.mjs');
  await writeFile(recorder, RECORDER);
  configPath = join(dir, 'payoutd.yaml');
  const paths = { inbox: join(dir, 'inbox'), outbox: join(dir, 'outbox'), stateDir: join(dir, 'state') };
  for (const p of Object.values(paths)) await mkdir(p, { recursive: true });
  await writeFile(configPath, `paths: ${JSON.stringify(paths)}\n`);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('e2e: what each command loads at start', () => {
  it('--version loads yargs and no command, config or store', async () => {
    const { stdout, modules } = await loadedBy(['--version']);
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    // The recorder works: it saw the CLI's own entry and yargs.
    expect(modules.some((url) => url.endsWith('/dist/cli/main.js'))).toBe(true);
    expect(modules.some((url) => url.includes('/node_modules/yargs/'))).toBe(true);
    expect(modules.filter((url) => /\/dist\/(cli\/commands|config|store)\//.test(url))).toEqual([]);
    expect(heavyIn(modules)).toEqual([]);
  });

  it('migrate and status load the store, not the daemon, metrics, the sandbox or exceljs', async () => {
    const migrated = await loadedBy(['migrate', '--config', configPath]);
    expect(migrated.stdout).toContain('applied:');
    expect(heavyIn(migrated.modules)).toEqual([]);

    const { stdout, modules } = await loadedBy(['status', '--json', '--config', configPath]);
    expect(JSON.parse(stdout)).toEqual([]);
    // The recorder sees our modules and CommonJS packages' entries (knex is one, as exceljs and prom-client are).
    expect(modules.some((url) => url.endsWith('/dist/cli/commands/status.js'))).toBe(true);
    expect(modules.some((url) => url.endsWith('/dist/store/open.js'))).toBe(true);
    expect(modules.some((url) => /\/node_modules\/knex\//.test(url))).toBe(true);
    expect(heavyIn(modules)).toEqual([]);
  });
});

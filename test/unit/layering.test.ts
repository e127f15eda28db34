/**
 * The folder layout is the architecture: these checks keep the rules a
 * reader relies on. Dependencies between folders point one way (no cycle);
 * the domain imports nothing of the project's IO folders and the store only
 * the domain; every hold is decided in src/holds, which uses the store, the
 * domain, the inbox and the API client but nothing that calls it (the intake,
 * the submitter, the daemon); and only the store speaks SQL: the rest of the code reaches the
 * database through `src/store/index.ts`, never through a store module or a
 * driver. Read from the source text (type imports included), so a new file is
 * checked the day it is added.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');

/** The SQLite driver's packages: better-sqlite3, and its older major for Node 20. */
const SQLITE_DRIVERS = ['better-sqlite3', 'better-sqlite3-node20'];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier a file imports, statically or dynamically. */
function importsOf(text: string): string[] {
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)'([^']+)'/g)].map((m) => m[1] as string);
}

/** Each source file, named relative to src/, with its text and imports. */
function read(path: string): { name: string; text: string; imports: string[] } {
  const text = readFileSync(path, 'utf8');
  return { name: relative(SRC, path), text, imports: importsOf(text) };
}

const files = sourceFiles(SRC).map(read);
/** The tests' files (named `../test/...`), for the rules that hold for them too. */
const testFiles = sourceFiles(join(SRC, '..', 'test')).map(read);

/** The file of src/ (as `files` names it) a relative import lands in; null for a library or node: module. */
function moduleOf(fromFile: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  return relative(SRC, join(SRC, dirname(fromFile), specifier)).replace(/\.js$/, '.ts');
}

/** The folder of src/ a relative import lands in (null for a library or node: module). */
function folderOf(fromFile: string, specifier: string): string | null {
  return moduleOf(fromFile, specifier)?.split(sep)[0] ?? null;
}

/** Which folders each folder imports from (itself excluded). */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const f of files) {
    const from = f.name.split(sep)[0] as string;
    const edges = graph.get(from) ?? new Set<string>();
    for (const i of f.imports) {
      const to = folderOf(f.name, i);
      if (to !== null && to !== from) edges.add(to);
    }
    graph.set(from, edges);
  }
  return graph;
}

/** One cycle of the graph as a path (first folder repeated at the end), or null. */
function cycleIn(graph: Map<string, Set<string>>): string[] | null {
  const done = new Set<string>();
  const onPath: string[] = [];
  const visit = (n: string): string[] | null => {
    const at = onPath.indexOf(n);
    if (at >= 0) return [...onPath.slice(at), n];
    if (done.has(n)) return null;
    onPath.push(n);
    for (const m of graph.get(n) ?? []) {
      const found = visit(m);
      if (found) return found;
    }
    onPath.pop();
    done.add(n);
    return null;
  };
  for (const n of graph.keys()) {
    const found = visit(n);
    if (found) return found;
  }
  return null;
}

/** A knex query, raw statement or transaction started on a database handle. */
const SQL_CALL = /\b(?:db|trx|knex)\s*\(\s*'|\.(?:raw|transaction)\s*\(/;

describe('layering', () => {
  it('finds the sources and their imports (the checks below would pass on nothing otherwise)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.find((f) => f.name === join('daemon', 'daemon.ts'))?.imports).toContain('../store/index.js');
  });

  it('dependencies between folders point one way: no folder reaches itself through others', () => {
    expect(
      cycleIn(
        new Map([
          ['a', new Set(['b'])],
          ['b', new Set(['c'])],
          ['c', new Set(['a'])],
        ]),
      ),
    ).toEqual(['a', 'b', 'c', 'a']);
    const graph = folderGraph();
    expect(graph.get('daemon')).toContain('store');
    expect(cycleIn(graph)).toBeNull();
  });

  it('the store imports only itself, the domain and libraries', () => {
    expect([...(folderGraph().get('store') ?? [])]).toEqual(['domain']);
  });

  it('holds use only the domain, the store, the inbox and the API client: never the intake, the submitter or the daemon', () => {
    const allowed = (module: string): boolean =>
      ['domain', 'store', 'api', 'holds'].includes(module.split(sep)[0] as string) || module.startsWith(join('ingest', 'inbox') + sep);
    const holds = files.filter((f) => f.name.startsWith(`holds${sep}`));
    expect(holds.map((f) => f.name)).toContain(join('holds', 'index.ts'));
    const offending = holds.flatMap((f) =>
      f.imports
        .map((i) => [i, moduleOf(f.name, i)] as const)
        .filter(([, m]) => m !== null && !allowed(m))
        .map(([i]) => `${f.name} -> ${i}`),
    );
    expect(offending).toEqual([]);
  });

  it('a batch is held only by src/holds (the store carries the hold out)', () => {
    const offending = files
      .filter((f) => !f.name.startsWith(`holds${sep}`) && !f.name.startsWith(`store${sep}`) && /\bholdBatch\s*\(/.test(f.text))
      .map((f) => f.name);
    expect(offending).toEqual([]);
  });

  it('the domain imports only itself and libraries, never an IO folder of the project', () => {
    const offending = files
      .filter((f) => f.name.startsWith(`domain/`))
      .flatMap((f) => f.imports.filter((i) => i.startsWith('.') && !i.startsWith('./')).map((i) => `${f.name} -> ${i}`));
    expect(offending).toEqual([]);
  });

  it('outside src/store, the database is reached through store/index.js only, and no file imports a SQL driver', () => {
    const offending = files
      .filter((f) => !f.name.startsWith('store/'))
      .flatMap((f) =>
        f.imports
          .filter((i) => /(^|\/)store\/(?!index\.js$)/.test(i) || ['knex', 'pg', ...SQLITE_DRIVERS].includes(i))
          .map((i) => `${f.name} -> ${i}`),
      );
    expect(offending).toEqual([]);
  });

  it('only store/sqlite-driver.ts loads better-sqlite3 (which one depends on the Node running)', () => {
    const offending = [...files, ...testFiles]
      .filter((f) => f.name !== join('store', 'sqlite-driver.ts') && f.imports.some((i) => SQLITE_DRIVERS.includes(i)))
      .map((f) => f.name);
    expect(offending).toEqual([]);
  });

  it('databases are closed by closeDatabase: knex destroy leaves a SQLite database open', () => {
    const offending = [...files, ...testFiles]
      .filter((f) => f.name !== join('store', 'db.ts') && /\bdbs?\??\.destroy\(/.test(f.text))
      .map((f) => f.name);
    expect(offending).toEqual([]);
  });

  it('outside src/store, no file builds a query, a raw statement or a transaction', () => {
    expect(SQL_CALL.test("const n = await db('payouts').count();")).toBe(true);
    expect(SQL_CALL.test("await this.sources.db.raw('select 1');")).toBe(true);
    const offending = files.filter((f) => !f.name.startsWith('store/') && SQL_CALL.test(f.text)).map((f) => f.name);
    expect(offending).toEqual([]);
  });
});

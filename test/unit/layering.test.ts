/**
 * The folder layout is the architecture: these checks keep the two rules a
 * reader relies on. The domain imports nothing of the project's IO folders,
 * and only the store speaks SQL: the rest of the code reaches the database
 * through `src/store/index.ts`, never through a store module or a driver.
 * Read from the source text, so a new file is checked the day it is added.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** Every module specifier a file imports, statically or dynamically. */
function importsOf(text: string): string[] {
  return [...text.matchAll(/(?:from\s+|import\s*\(\s*)'([^']+)'/g)].map((m) => m[1] as string);
}

const files = sourceFiles(SRC).map((path) => {
  const text = readFileSync(path, 'utf8');
  return { name: relative(SRC, path), text, imports: importsOf(text) };
});

/** A knex query, raw statement or transaction started on a database handle. */
const SQL_CALL = /\b(?:db|trx|knex)\s*\(\s*'|\.(?:raw|transaction)\s*\(/;

describe('layering', () => {
  it('finds the sources and their imports (the checks below would pass on nothing otherwise)', () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.find((f) => f.name === join('daemon', 'daemon.ts'))?.imports).toContain('../store/index.js');
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
          .filter((i) => /(^|\/)store\/(?!index\.js$)/.test(i) || ['knex', 'better-sqlite3', 'pg'].includes(i))
          .map((i) => `${f.name} -> ${i}`),
      );
    expect(offending).toEqual([]);
  });

  it('outside src/store, no file builds a query, a raw statement or a transaction', () => {
    expect(SQL_CALL.test("const n = await db('payouts').count();")).toBe(true);
    expect(SQL_CALL.test("await this.sources.db.raw('select 1');")).toBe(true);
    const offending = files.filter((f) => !f.name.startsWith('store/') && SQL_CALL.test(f.text)).map((f) => f.name);
    expect(offending).toEqual([]);
  });
});

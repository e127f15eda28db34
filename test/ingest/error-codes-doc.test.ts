/**
 * docs/csv-format.md has a row for every error code the intake can give
 * (its table "Every error code"), so the table finance reads stays true: the
 * codes are those of the error lists and every code literal in the intake's
 * source (src/ingest, and the acceptance of rows in src/store, with its check of leading zeros).
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FILE_ERROR_CODES, ROW_ERROR_CODES } from '../../src/ingest/rules/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(path)));
    else if (entry.name.endsWith('.ts')) out.push(path);
  }
  return out;
}

/** Code literals as the source gives them to errors, rows and batches. */
const CODE_LITERALS = [
  /\b(?:code|reason_code|rejectCode|reasonCode)\s*:\s*'([A-Z][A-Z0-9_]+)'/g,
  /\breject\w*\([^()]*?,\s*'([A-Z][A-Z0-9_]+)'/g,
  /\bcode\s*=\s*[^;]*?\?\s*'([A-Z][A-Z0-9_]+)'\s*:\s*'([A-Z][A-Z0-9_]+)'/g,
];

async function codesInSource(): Promise<Set<string>> {
  const files = [
    ...(await sourceFiles(join(ROOT, 'src/ingest'))),
    join(ROOT, 'src/store/acceptance.ts'),
    join(ROOT, 'src/store/reference-zeros.ts'),
  ];
  const codes = new Set<string>([...FILE_ERROR_CODES, ...ROW_ERROR_CODES]);
  for (const file of files) {
    const text = await readFile(file, 'utf8');
    for (const pattern of CODE_LITERALS) {
      for (const m of text.matchAll(pattern)) for (const code of m.slice(1)) if (code) codes.add(code);
    }
  }
  // zlib's own error codes are read, never given.
  for (const code of [...codes]) if (code.startsWith('Z_')) codes.delete(code);
  return codes;
}

async function codesInTable(): Promise<Set<string>> {
  const doc = await readFile(join(ROOT, 'docs/csv-format.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### Every error code'));
  const rows = section.split('\n').filter((l) => l.startsWith('| `'));
  return new Set(rows.flatMap((l) => [...(l.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1] as string)));
}

describe('docs/csv-format.md error table', () => {
  it('has a row for every error code the intake gives, each with a message and a fix', async () => {
    const source = await codesInSource();
    const table = await codesInTable();
    expect(source.size).toBeGreaterThan(50);
    expect([...source].filter((c) => !table.has(c)).sort(), 'codes missing from the table').toEqual([]);
    expect([...table].filter((c) => !source.has(c)).sort(), 'codes in the table that the source does not give').toEqual([]);
    const doc = await readFile(join(ROOT, 'docs/csv-format.md'), 'utf8');
    for (const line of doc
      .slice(doc.indexOf('### Every error code'))
      .split('\n')
      .filter((l) => l.startsWith('| `'))) {
      const cells = line.split(' | ');
      expect(cells, line).toHaveLength(4);
      for (const cell of cells) expect(cell.replace(/\|/g, '').trim().length, line).toBeGreaterThan(2);
    }
  });
});

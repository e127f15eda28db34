/**
 * csvText and csvLines write records without a cell to quote themselves and
 * hand the others to csv-stringify: the file must be byte for byte what
 * csv-stringify alone writes with the outbox options, for any mix of
 * records. Checked against csv-stringify on generated records whose cells
 * mix every character that matters to quoting or to the spreadsheet prefix.
 */
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { csvLines, csvText } from '../../src/report/csv.js';
import { spreadsheetSafeCell } from '../../src/report/cells.js';

/** The options the outbox files were written with before the fast path: the reference. */
const REFERENCE_OPTIONS = { record_delimiter: '\r\n', quoted_match: /[\r\n]/ };

/** Pieces a cell is made of: plain text, numbers, the quoting characters, formula triggers, non-ASCII. */
const PIECES = [
  'a',
  'Ana Cruz',
  '100.50',
  '-5',
  '0',
  ',',
  '"',
  '\r',
  '\n',
  '\r\n',
  '=',
  '+',
  '@',
  '-',
  "'",
  '\t',
  ' ',
  'é',
  '😀',
  '\uFEFF',
  ';',
];

/** A small deterministic generator (mulberry32), so a failure names a reproducible case. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function records(seed: number, count: number): string[][] {
  const next = random(seed);
  const pick = (n: number): number => Math.floor(next() * n);
  const cell = (): string => {
    // Most cells plain, as in a result file; some built of the pieces that matter.
    if (next() < 0.7) return ['PAID', '2', 'INV-1', '', '56.25', 'USDT'][pick(6)] ?? '';
    return Array.from({ length: 1 + pick(4) }, () => PIECES[pick(PIECES.length)]).join('');
  };
  return Array.from({ length: count }, () => Array.from({ length: 1 + pick(15) }, cell));
}

describe('csv text against csv-stringify', () => {
  it('csvText: the same bytes as csv-stringify of the spreadsheet-safe cells', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const recs = records(seed, 1 + (seed % 40));
      expect(csvText(recs), `seed ${seed}`).toBe(
        stringify(
          recs.map((r) => r.map(spreadsheetSafeCell)),
          REFERENCE_OPTIONS,
        ),
      );
    }
  });

  it('csvLines: the same bytes as csv-stringify of the cells as given', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const recs = records(seed, 1 + (seed % 40));
      expect(csvLines(recs), `seed ${seed}`).toBe(stringify(recs, REFERENCE_OPTIONS));
    }
  });

  it('edge records: none, an empty one, one empty cell, runs of quoted records between plain ones', () => {
    const cases: string[][][] = [
      [],
      [[]],
      [['']],
      [[''], ['']],
      [['a'], ['b,c'], ['d"e'], ['f'], ['g\nh'], ['i']],
      [['x\r'], ['\ny'], ['plain', 'row']],
    ];
    for (const recs of cases) {
      expect(csvText(recs), JSON.stringify(recs)).toBe(
        stringify(
          recs.map((r) => r.map(spreadsheetSafeCell)),
          REFERENCE_OPTIONS,
        ),
      );
      expect(csvLines(recs), JSON.stringify(recs)).toBe(stringify(recs, REFERENCE_OPTIONS));
    }
  });
});

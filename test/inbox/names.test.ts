import { describe, expect, it } from 'vitest';
import {
  STORED_NAME,
  compileIgnore,
  isIgnoredName,
  newClaimId,
  outboxSafeName,
  parseStoredName,
  safeName,
  storedName,
} from '../../src/ingest/inbox/names.js';

describe('ignored names', () => {
  it.each([
    '.hidden.csv',
    '.in.batch.csv',
    'batch.csv.part',
    'batch.csv.filepart',
    'batch.csv.FILEPART',
    'batch.tmp',
    'batch.csv.partial',
    'batch.csv.crdownload',
    'batch.csv.done',
    'batch.csv.ctl',
  ])('%s is never a candidate', (name) => {
    expect(isIgnoredName(name)).toBe(true);
  });

  it.each([
    'batch.csv',
    'batch.CSV',
    'done',
    'batch.csv.CTL',
    'particle.csv',
    '-x.csv',
    '..batch.csv',
    '...',
    'a\nb.csv',
    'bell\u0007.csv',
  ])('%j is a candidate', (name) => {
    expect(isIgnoredName(name)).toBe(false);
  });

  it('adds configured globs and regexps (a /g regexp matches every time)', () => {
    const extra = compileIgnore(['*.bak', 'README?', /^~/g]);
    expect(['a.bak', 'README1', '~lock', '~lock'].map((n) => isIgnoredName(n, extra))).toEqual([true, true, true, true]);
    expect(['a.bak.csv', 'README', 'x~', 'a+b.csv'].map((n) => isIgnoredName(n, extra))).toEqual([false, false, false, false]);
    expect(isIgnoredName('a(1).csv', compileIgnore(['a(1).csv']))).toBe(true);
  });
});

describe('safeName', () => {
  it.each([
    ['batch.csv', 'batch.csv'],
    ['batch with spaces.csv', 'batch_with_spaces.csv'],
    ['paie-été-€-日本.csv', 'paie-été-_-日本.csv'],
    ['-rf --help.csv', 'rf_--help.csv'],
    ['../../etc/passwd', 'etc_passwd'],
    ['..\\..\\x.csv', 'x.csv'],
    ['.hidden', 'hidden'],
    ['a\u0000b\u001fc\u007f.csv', 'a_b_c_.csv'],
    ['evil\u202Egnp.csv', 'evil_gnp.csv'],
    ['$(rm -rf).csv', 'rm_-rf_.csv'],
    ['...', 'file'],
    ['', 'file'],
    ['e\u0301.csv', 'é.csv'],
  ])('%j -> %j', (input, expected) => {
    expect(safeName(input)).toBe(expected);
  });

  it('caps the length in bytes, on a character boundary, keeping the extension', () => {
    const long = `${'日'.repeat(100)}.csv`;
    const safe = safeName(long);
    expect(Buffer.byteLength(safe)).toBeLessThanOrEqual(120);
    expect(safe.endsWith('.csv')).toBe(true);
    expect(safe).toBe(`${'日'.repeat(38)}.csv`);
    expect(safeName('a'.repeat(300))).toBe('a'.repeat(120));
  });
});

describe('claim ids', () => {
  it('sort by time and make unique stored names', () => {
    const id = newClaimId(Date.UTC(2026, 0, 2, 3, 4, 5, 678), new Uint8Array([1, 2, 3, 4, 5, 255]));
    expect(id).toBe('20260102T030405Z-0102030405ff');
    expect(storedName(id, '-a b.csv')).toBe('20260102T030405Z-0102030405ff__a_b.csv');
    expect(STORED_NAME.test(storedName(id, 'x'))).toBe(true);
    expect(newClaimId(0)).not.toBe(newClaimId(0));
  });
});

describe('parseStoredName', () => {
  it('takes apart what storedName made', () => {
    const id = newClaimId(Date.UTC(2026, 0, 2, 3, 4, 5), new Uint8Array([1, 2, 3, 4, 5, 255]));
    expect(parseStoredName(storedName(id, 'pay run__2.csv'))).toEqual({ claimId: id, storedAs: 'pay_run__2.csv' });
    expect(parseStoredName(storedName(id, '..\n'))).toEqual({ claimId: id, storedAs: 'file' });
    expect(parseStoredName(`${id}__a.csv.ctl`)).toEqual({ claimId: id, storedAs: 'a.csv.ctl' });
  });

  it.each([
    'batch.csv',
    `20260102T030405Z-0102030405ff__`,
    '20260102T030405Z-0102030405f__a.csv',
    'x20260102T030405Z-0102030405ff__a.csv',
    '20260102T030405Z-0102030405FF__a.csv',
    '20260102T030405Z-0102030405ff_a.csv',
  ])('%j is not a stored name', (name) => {
    expect(parseStoredName(name)).toBeNull();
  });
});

describe('outboxSafeName', () => {
  it.each([
    ['batch.csv', 'batch.csv'],
    ['pay run 1.csv', 'pay run 1.csv'],
    ['paie-été-日本.csv', 'paie-été-日本.csv'],
    ['..two-dots.csv', 'two-dots.csv'],
    ['--rf.csv', 'rf.csv'],
    ['.-.x', 'x'],
    ['line\nbreak.csv', 'line_break.csv'],
    ['cr\r\ntab\t.csv', 'cr__tab_.csv'],
    ['nul\u0000bell\u0007del\u007f.csv', 'nul_bell_del_.csv'],
    ['evil\u202Egnp.csv', 'evil_gnp.csv'],
    ['sep\u2028para\u2029.csv', 'sep_para_.csv'],
    ['../../etc/passwd', '_.._etc_passwd'],
    ['a\\b.csv', 'a_b.csv'],
    ['...', 'batch'],
    ['', 'batch'],
  ])('%j -> %j', (input, expected) => {
    expect(outboxSafeName(input)).toBe(expected);
  });

  it('never yields a name with control characters, separators or a leading dot or dash, and caps its length', () => {
    const worst = `\n.-${'\u0001/'.repeat(50)}${'日'.repeat(100)}.csv`;
    const safe = outboxSafeName(worst);
    expect(safe).not.toMatch(/^[.-]|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}/\\]/u);
    expect(Buffer.byteLength(safe)).toBeLessThanOrEqual(120);
    expect(safe.endsWith('.csv')).toBe(true);
  });
});

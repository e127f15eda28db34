import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  outboxFileName,
  ReportError,
  csvChunks,
  csvText,
  fileRejectionRecord,
  reasonText,
  resultRecord,
  unescapeSpreadsheetCell,
  type RowOutcome,
} from '../../src/report/index.js';

const parseCsv = (text: string): string[][] => parse(text, { bom: true, relax_column_count: false });

const outcome: RowOutcome = {
  line: 2,
  merchantReferenceId: 'INV-1',
  payoutCurrency: 'PHP',
  payoutAmount: '1500.50',
  deductionCurrency: 'USDT',
  beneficiaryAccountName: 'Juan',
  beneficiaryAccountNumber: '000123',
  status: 'REJECTED',
  payoutId: null,
  rate: null,
  deductionAmount: null,
  totalFee: null,
  feeCurrency: null,
  completeTime: null,
  reason: '2002 INVALID_PARAMETER',
};

describe('csv text', () => {
  it('quotes cells with delimiters, quotes, LF and a lone CR, and reads back exactly', () => {
    const cells = ['a,b', 'say "hi"', 'line1\nline2', 'cr\ronly', 'crlf\r\nx', '=1,2', '000123', '-5'];
    const text = csvText([cells]);
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text).toContain('"a,b"');
    expect(text).toContain('"say ""hi"""');
    expect(text).toContain('"cr\ronly"');
    expect(text).toContain(`"'=1,2"`);
    expect(text).toContain(',000123,-5\r\n');
    const [row] = parseCsv(text);
    expect(row?.map(unescapeSpreadsheetCell)).toEqual(cells);
  });

  it('writes a BOM first only when asked', async () => {
    const collect = async (bom: boolean): Promise<string> => {
      let out = '';
      for await (const c of csvChunks(['h1', 'h2'], [['a', 'b']], { bom })) out += c;
      return out;
    };
    expect(await collect(true)).toBe('\uFEFFh1,h2\r\na,b\r\n');
    expect(await collect(false)).toBe('h1,h2\r\na,b\r\n');
  });
});

describe('records', () => {
  it('writes nulls as empty cells and keeps amounts and account numbers as given', () => {
    expect(resultRecord(outcome)).toEqual([
      '2',
      'INV-1',
      'REJECTED',
      '',
      'PHP',
      '1500.50',
      'USDT',
      '',
      '',
      '',
      '',
      'Juan',
      '000123',
      '',
      '2002 INVALID_PARAMETER',
    ]);
  });

  it('refuses an unknown status at run time', () => {
    const bad = { ...outcome, status: 'LOST' } as unknown as RowOutcome;
    expect(() => resultRecord(bad)).toThrow(ReportError);
  });

  it('writes a file-level rejection with no line and no reference', () => {
    const id = { batchId: 'b1', fileName: 'f.csv', sha256: 'x', receivedAt: '2026-01-01T00:00:00Z' };
    expect(fileRejectionRecord(id, 'bad header')).toEqual(['b1', 'f.csv', '', '', 'REJECTED', 'bad header']);
  });

  it('derives outbox names only from plain base names', () => {
    expect(outboxFileName('batch-1.csv', 'ack')).toBe('batch-1.csv.ack.csv');
    expect(outboxFileName('batch-1.csv', 'result')).toBe('batch-1.csv.result.csv');
    for (const bad of [
      '../x.csv',
      'a/b.csv',
      'a\\b.csv',
      '.hidden.csv',
      '',
      '-rf.csv',
      'a\nb.csv',
      'a\rb.csv',
      'bell\u0007.csv',
      'a\u2028b.csv',
    ]) {
      expect(() => outboxFileName(bad, 'ack')).toThrow(expect.objectContaining({ code: 'REPORT_BAD_FILE_NAME' }));
    }
  });
});

describe('reasonText (every file that shows a reason)', () => {
  it('puts the code before the words, once', () => {
    expect(reasonText('CANCELLED', 'beneficiary account closed')).toBe('CANCELLED: beneficiary account closed');
    expect(reasonText('INVALID_AMOUNT', 'INVALID_AMOUNT [amount]: not a number')).toBe('INVALID_AMOUNT [amount]: not a number');
    expect(reasonText('2002', null)).toBe('2002');
    expect(reasonText(null, 'words only')).toBe('words only');
    expect(reasonText(null, null)).toBeNull();
  });
});

import { createReadStream } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import {
  ACK_COLUMNS,
  RESULT_COLUMNS,
  SUMMARY_COLUMNS,
  isTempName,
  writeAckFile,
  writeAckRowsAhead,
  ackCurrencyTotals,
  outboxFileName,
  writeInterimReport,
  writeRejectionAckFile,
  writeResultFiles,
  type BatchIdentity,
  type RowOutcome,
} from '../../src/report/index.js';
import { listDir, useTempDirs } from './tmp.js';

const tempDir = useTempDirs();
const identity: BatchIdentity = {
  batchId: 'B-7',
  fileName: 'payouts-2026-01-02.csv',
  sha256: 'ab'.repeat(32),
  receivedAt: '2026-01-02T08:00:00Z',
};
const readCsv = async (path: string): Promise<string[][]> => parse(await readFile(path, 'utf8'), { bom: true });

function outcome(line: number, over: Partial<RowOutcome> = {}): RowOutcome {
  return {
    line,
    merchantReferenceId: `INV-${line}`,
    payoutCurrency: 'PHP',
    payoutAmount: '100.50',
    deductionCurrency: 'USDT',
    beneficiaryAccountName: 'Juan dela Cruz',
    beneficiaryAccountNumber: '000123',
    status: 'PAID',
    payoutId: `P-${line}`,
    rate: '56.12',
    deductionAmount: '1.79',
    totalFee: '0.05',
    feeCurrency: 'USDT',
    completeTime: '2026-01-02T09:00:00Z',
    reason: null,
    ...over,
  };
}

describe('ack file', () => {
  it('writes one verdict per row with the batch identity, BOM first by default', async () => {
    const dir = await tempDir();
    const path = await writeAckFile(dir, identity, [
      { line: 2, merchantReferenceId: 'INV-2', verdict: 'ACCEPTED', reason: null, payoutCurrency: 'PHP', payoutAmount: '1500.5' },
      {
        line: 3,
        merchantReferenceId: '=cmd|calc',
        verdict: 'REJECTED',
        reason: 'INVALID_AMOUNT: "1,5" is not a plain decimal',
        payoutCurrency: 'PHP',
        payoutAmount: '1,5',
      },
      { line: 4, merchantReferenceId: 'INV-4', verdict: 'ACCEPTED', reason: null, payoutCurrency: 'JPY', payoutAmount: '1000' },
    ]);
    expect(path).toBe(join(dir, 'payouts-2026-01-02.csv.ack.csv'));
    const raw = await readFile(path);
    expect(raw.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    // First, per currency, the rows and their total (with the currency's decimals) and the batch's verdict.
    const verdict = 'Batch PARTLY_ACCEPTED: the accepted rows will be paid; the rejected rows are not paid (see each row)';
    expect(await readCsv(path)).toEqual([
      [...ACK_COLUMNS],
      ['B-7', 'payouts-2026-01-02.csv', '', '', 'TOTAL', `JPY: 1 row, 1000 (accepted 1 row, 1000; rejected 0 rows, 0). ${verdict}`],
      [
        'B-7',
        'payouts-2026-01-02.csv',
        '',
        '',
        'TOTAL',
        `PHP: 2 rows, 1500.50 (accepted 1 row, 1500.50; rejected 1 row, 0.00; 1 row without a readable amount, not in the sums). ${verdict}`,
      ],
      ['B-7', 'payouts-2026-01-02.csv', '2', 'INV-2', 'ACCEPTED', ''],
      ['B-7', 'payouts-2026-01-02.csv', '3', "'=cmd|calc", 'REJECTED', 'INVALID_AMOUNT: "1,5" is not a plain decimal'],
      ['B-7', 'payouts-2026-01-02.csv', '4', 'INV-4', 'ACCEPTED', ''],
    ]);
  });

  it('writes a file-level rejection as a row with no line, verdict REJECTED and the reason, after the totals line', async () => {
    const dir = await tempDir();
    const path = await writeRejectionAckFile(dir, identity, 'CONTROL_TOTAL_MISMATCH: trailer says 3 rows, file has 2', { bom: false });
    const text = await readFile(path, 'utf8');
    expect(text).toBe(
      'batch_id,file,line,merchant_reference_id,verdict,reason\r\n' +
        'B-7,payouts-2026-01-02.csv,,,TOTAL,no rows read. Batch REJECTED: nothing in this file is paid\r\n' +
        'B-7,payouts-2026-01-02.csv,,,REJECTED,"CONTROL_TOTAL_MISMATCH: trailer says 3 rows, file has 2"\r\n',
    );
    expect(await listDir(dir)).toEqual(['payouts-2026-01-02.csv.ack.csv']);
  });

  it('says per hold what lifts it: approvers for AWAITING_APPROVAL, an operator for FILE_CHANGED', async () => {
    const dir = await tempDir();
    const rows = [
      { line: 2, merchantReferenceId: 'INV-2', verdict: 'ACCEPTED' as const, reason: null, payoutCurrency: 'PHP', payoutAmount: '1500.5' },
    ];
    const totalOf = async (fileHold: string, fileHoldCode: 'AWAITING_APPROVAL' | 'FILE_CHANGED'): Promise<string | undefined> => {
      const path = await writeAckFile(dir, identity, rows, { bom: false, fileHold, fileHoldCode });
      return (await readCsv(path))[1]?.[5];
    };
    const awaiting = await totalOf('AWAITING_APPROVAL: AWAITING APPROVAL above 1000 PHP', 'AWAITING_APPROVAL');
    expect(awaiting).toBe(
      'PHP: 1 row, 1500.50 (accepted 1 row, 1500.50; rejected 0 rows, 0.00). Batch HELD: no row is paid until the batch is approved ' +
        'by its approvers, other than its uploader (an approval file or `payoutd approve`; see the HELD line)',
    );
    expect(awaiting).not.toContain('release');
    const changed = await totalOf('FILE_CHANGED: size changed from 10 to 20 bytes after the claim', 'FILE_CHANGED');
    expect(changed).toMatch(/Batch HELD: no row not yet sent is paid until an operator releases the batch$/);
  });

  it('refuses rows out of line order and leaves no file', async () => {
    const dir = await tempDir();
    const rows = [
      { line: 3, merchantReferenceId: 'a', verdict: 'ACCEPTED' as const, reason: null },
      { line: 2, merchantReferenceId: 'b', verdict: 'ACCEPTED' as const, reason: null },
    ];
    await expect(writeAckFile(dir, identity, rows)).rejects.toMatchObject({ code: 'REPORT_ROW_ORDER' });
    expect(await listDir(dir)).toEqual([]);
    // Handed over in pages (as the daemon reads them), the order is checked across pages too.
    await expect(writeAckFile(dir, identity, { pages: pagesOf(rows, 1) })).rejects.toMatchObject({ code: 'REPORT_ROW_ORDER' });
    expect(await listDir(dir)).toEqual([]);
    // Written ahead, the same check, and the work file is not left behind.
    await expect(writeAckRowsAhead(dir, identity, { pages: pagesOf(rows, 1) })).rejects.toMatchObject({ code: 'REPORT_ROW_ORDER' });
    expect(await listDir(dir)).toEqual([]);
  });

  it('writes the same bytes from pages as from rows, a file-level rejection first, across chunk boundaries', async () => {
    // 2,500 rows: more than a chunk of 1,000 records, in pages that do not line up with the chunks.
    const rows = Array.from({ length: 2500 }, (_, i) => ({
      line: i + 2,
      merchantReferenceId: i % 7 === 0 ? `=R,${i}` : `R-${i}`,
      verdict: i % 3 === 0 ? ('REJECTED' as const) : ('ACCEPTED' as const),
      reason: i % 3 === 0 ? `INVALID_AMOUNT: "1,${i}"\nsecond line` : null,
    }));
    const fileRejection = 'INVALID_ROWS: 834 invalid row(s); onInvalidRows is reject-file';
    const fromRows = await readFile(await writeAckFile(await tempDir(), identity, rows, { fileRejection }));
    // Pages come with their totals, added up beforehand.
    const totals = ackCurrencyTotals(rows, {}) ?? [];
    for (const pageSize of [1, 333, 5000]) {
      const fromPages = await readFile(
        await writeAckFile(await tempDir(), identity, { pages: pagesOf(rows, pageSize) }, { fileRejection, totals }),
      );
      expect(fromPages.equals(fromRows), `pages of ${pageSize}`).toBe(true);
      // Written ahead (a hidden work file beside the ack) and copied in after the totals: the same bytes, no file left.
      const dir = await tempDir();
      const ahead = await writeAckRowsAhead(dir, identity, { pages: pagesOf(rows, pageSize) });
      expect(isTempName(basename(ahead.path))).toBe(true);
      const fromAhead = await readFile(await writeAckFile(dir, identity, { ahead }, { fileRejection, totals }));
      await ahead.discard();
      expect(fromAhead.equals(fromRows), `written ahead in pages of ${pageSize}`).toBe(true);
      expect(await listDir(dir)).toEqual([basename(outboxFileName(identity.fileName, 'ack'))]);
    }
    const text = fromRows.toString('utf8');
    expect(text.split('\r\n')[1]).toMatch(
      /^B-7,payouts-2026-01-02.csv,,,TOTAL,"no currency: 2500 rows, 0 .*Batch REJECTED: nothing in this file is paid"$/,
    );
    expect(text.split('\r\n')[2]).toBe(`B-7,payouts-2026-01-02.csv,,,REJECTED,${fileRejection}`);
  });
});

async function* pagesOf<T>(rows: readonly T[], size: number): AsyncGenerator<T[]> {
  for (let i = 0; i < rows.length; i += size) yield rows.slice(i, i + size);
}

describe('result and summary files', () => {
  it('writes every column, escapes formulas, keeps numbers and leading zeros, quotes delimiters and newlines', async () => {
    const dir = await tempDir();
    const rows = [
      outcome(2),
      outcome(3, {
        merchantReferenceId: '+1',
        beneficiaryAccountName: 'Doe, "JJ"\nJr',
        payoutAmount: '-5',
        beneficiaryAccountNumber: '@x',
      }),
      outcome(5, {
        status: 'CANCELLED',
        beneficiaryAccountNumber: '1230000',
        completeTime: '2026-01-02T10:00:00Z',
        reason: '=SUM(A1) beneficiary bank rejected',
      }),
      outcome(6, {
        status: 'REJECTED',
        payoutId: null,
        rate: null,
        deductionAmount: null,
        totalFee: null,
        feeCurrency: null,
        completeTime: null,
        reason: '2002 INVALID_PARAMETER',
      }),
      outcome(7, {
        status: 'DUPLICATE',
        payoutId: null,
        rate: null,
        deductionAmount: null,
        totalFee: null,
        feeCurrency: null,
        completeTime: null,
        reason: 'duplicate of batch B-3 line 9',
      }),
    ];
    const { resultPath, summaryPath, summary } = await writeResultFiles(dir, identity, rows);
    expect(await listDir(dir)).toEqual(['payouts-2026-01-02.csv.result.csv', 'payouts-2026-01-02.csv.summary.csv']);

    const raw = await readFile(resultPath, 'utf8');
    expect(raw).toContain(',000123,'); // text exactly, zeros intact
    expect(raw).toContain('"Doe, ""JJ""\nJr"');
    const result = await readCsv(resultPath);
    expect(result[0]).toEqual([...RESULT_COLUMNS]);
    expect(result[1]).toEqual([
      '2',
      'INV-2',
      'PAID',
      'P-2',
      'PHP',
      '100.50',
      'USDT',
      '1.79',
      '56.12',
      '0.05',
      'USDT',
      'Juan dela Cruz',
      '000123',
      '2026-01-02T09:00:00Z',
      '',
    ]);
    expect(result[2]?.slice(0, 6)).toEqual(['3', "'+1", 'PAID', 'P-3', 'PHP', '-5']);
    expect(result[2]?.slice(11, 13)).toEqual(['Doe, "JJ"\nJr', "'@x"]);
    expect(result[3]?.[14]).toBe("'=SUM(A1) beneficiary bank rejected");
    expect(result[4]?.slice(2, 4)).toEqual(['REJECTED', '']);
    expect(result.map((r) => r[0])).toEqual(['line', '2', '3', '5', '6', '7']);

    expect(summary.statusCounts).toEqual({ PAID: 2, CANCELLED: 1, REJECTED: 1, DUPLICATE: 1 });
    const summaryCsv = await readCsv(summaryPath);
    expect(summaryCsv).toEqual([
      [...SUMMARY_COLUMNS],
      ['PAID', 'payout_amount', 'PHP', '2', '95.5', '0'],
      ['PAID', 'deduction_amount', 'USDT', '2', '3.58', '0'],
      ['PAID', 'total_fee', 'USDT', '2', '0.1', '0'],
      ['PAID', 'rows', '', '2', '', ''],
      ['CANCELLED', 'payout_amount', 'PHP', '1', '100.5', '0'],
      ['CANCELLED', 'deduction_amount', 'USDT', '1', '1.79', '0'],
      ['CANCELLED', 'total_fee', 'USDT', '1', '0.05', '0'],
      ['CANCELLED', 'rows', '', '1', '', ''],
      ['REJECTED', 'payout_amount', 'PHP', '1', '100.5', '0'],
      ['REJECTED', 'rows', '', '1', '', ''],
      ['DUPLICATE', 'payout_amount', 'PHP', '1', '100.5', '0'],
      ['DUPLICATE', 'rows', '', '1', '', ''],
      ['ALL', 'rows', '', '5', '', ''],
    ]);
  });

  it('writes no BOM when outbox.bom is off', async () => {
    const dir = await tempDir();
    const { resultPath, summaryPath } = await writeResultFiles(dir, identity, [outcome(2)], { bom: false });
    expect((await readFile(resultPath, 'utf8')).startsWith('line,merchant_reference_id,')).toBe(true);
    expect((await readFile(summaryPath, 'utf8')).startsWith('status,measure,')).toBe(true);
  });

  it('refuses a PENDING row: neither result nor summary exists, no temp file', async () => {
    const dir = await tempDir();
    const rows = [outcome(2), outcome(3, { status: 'PENDING', completeTime: null })];
    await expect(writeResultFiles(dir, identity, rows)).rejects.toMatchObject({ code: 'REPORT_NOT_TERMINAL' });
    expect(await readdir(dir)).toEqual([]);
  });

  it('writes an interim report with PENDING rows at the path the caller chose', async () => {
    const dir = await tempDir();
    const path = join(dir, 'B-7-interim.csv');
    const { summary } = await writeInterimReport(path, [outcome(2), outcome(3, { status: 'PENDING', completeTime: null })]);
    const rows = await readCsv(path);
    expect(rows.map((r) => r[2])).toEqual(['status', 'PAID', 'PENDING']);
    expect(summary.statusCounts).toEqual({ PAID: 1, PENDING: 1 });
    expect(await listDir(dir)).toEqual(['B-7-interim.csv']);
  });

  it('streams 200,000 rows: bytes reach the temp file before the source is exhausted', async () => {
    const dir = await tempDir();
    const n = 200_000;
    let tempBytesMidway = -1;
    async function* rows(): AsyncGenerator<RowOutcome> {
      for (let line = 1; line <= n; line++) {
        if (line === n / 2) {
          const temp = (await readdir(dir)).find(isTempName);
          tempBytesMidway = temp ? (await stat(join(dir, temp))).size : 0;
        }
        yield outcome(line, { payoutAmount: `${line}.01` });
      }
    }
    const { resultPath, summary } = await writeResultFiles(dir, identity, rows(), { bom: false });
    expect(tempBytesMidway).toBeGreaterThan(1_000_000);

    let newlines = 0;
    for await (const chunk of createReadStream(resultPath)) {
      for (const byte of chunk as Buffer) if (byte === 0x0a) newlines++;
    }
    expect(newlines).toBe(n + 1);
    expect(summary.rowCount).toBe(n);
    // sum of line + 0.01 for line 1..n = n(n+1)/2 + n/100
    const payout = summary.rows.find((r) => r.measure === 'payout_amount');
    expect(payout?.amount).toBe('20000102000');
    expect(summary.rows.find((r) => r.measure === 'deduction_amount')?.amount).toBe('358000');
  });
});

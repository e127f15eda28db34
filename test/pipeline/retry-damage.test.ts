/**
 * A retry row whose account number is its original's with the leading
 * zeros gone (a retry file opened in a spreadsheet and saved as CSV) is
 * refused, saying so, and never paid; the same row with the account as
 * written in the original is accepted. The originals are read from the
 * real SQLite database the intake writes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { closePipelines, csvRow, HEADER, startPipeline } from './harness.js';

afterEach(closePipelines);

const ACCOUNT = '0012345670000';

describe('pipeline: a retry row that lost its leading zeros', () => {
  it('is refused with the reason in words, and the intact retry row is accepted', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const first = await p.receive('first.csv', `${[HEADER, csvRow('LZ-1', { 'beneficiary.accountNumber': ACCOUNT })].join('\n')}\n`);
    expect(first.state).toBe('ACTIVE');
    // The original is paid out and cancelled: its retry rows are the only ones that may pay it now.
    await p.submit();
    p.sandbox.settle({ merchantReferenceId: 'LZ-1' }, 'CANCELLED');
    p.clock.advance(p.submitterOptions.firstPollDelayMs);
    await p.poll();
    expect((await p.row('LZ-1')).state).toBe('CANCELLED');

    const retry = await p.receive(
      'retry.csv',
      `${[
        HEADER,
        csvRow('LZ-1-R1', { 'beneficiary.accountNumber': ACCOUNT.replace(/^0+/, '') }),
        csvRow('LZ-1-R2', { 'beneficiary.accountNumber': ACCOUNT }),
        csvRow('LZ-2-R1', { 'beneficiary.accountNumber': '12345670000' }),
        // Wrong for another reason too: both are said at once, not the second after the first is mended.
        csvRow('LZ-1-R3', { 'beneficiary.accountNumber': ACCOUNT.replace(/^0+/, ''), payoutAmount: 'ten' }),
      ].join('\n')}\n`,
    );
    const rows = await p.rows(retry.id);
    expect(rows.map((r) => [r.merchantReferenceId, r.state, r.reasonCode])).toEqual([
      ['LZ-1-R1', 'INVALID', 'LEADING_ZEROS_LOST'],
      ['LZ-1-R2', 'READY', null],
      // No original in the database: nothing to compare with.
      ['LZ-2-R1', 'READY', null],
      ['LZ-1-R3', 'INVALID', expect.stringMatching(/^AMOUNT_/)],
    ]);
    expect(rows[3]?.reason).toContain(
      '; LEADING_ZEROS_LOST [column K "beneficiary.accountNumber"]: the account number has lost its leading zeros',
    );
    expect(rows[3]?.payoutAmount).toBe('ten');
    expect([retry.validCount, retry.invalidCount]).toEqual([2, 2]);
    expect(rows[0]?.reason).toBe(
      'LEADING_ZEROS_LOST [column K "beneficiary.accountNumber"]: the account number has lost its leading zeros: it is the account number of LZ-1, which this retry row repeats, without its 2 leading zero(s); a spreadsheet probably dropped them when the file was opened and saved as CSV; open the .xlsx retry file instead, or format the column as Text and type the account number again',
    );
    // Refused rows keep the amount as written.
    expect(rows[0]?.payoutAmount).toBe('100.50');
  });
});

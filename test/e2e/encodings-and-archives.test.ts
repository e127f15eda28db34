/**
 * Files finance saves from spreadsheets, dropped into the real `payoutd
 * run` with `batch.format.encoding: auto`: a Windows-1252 CSV is paid with
 * its accents intact and its ack says how it was read, also when it is
 * refused whole; a UTF-16 one (Excel's
 * "Unicode Text") and a `.csv.gz` are paid; a macro-enabled workbook is
 * refused with what to do instead. Without `auto`, a UTF-16 file is refused
 * saying what it is.
 */
import { gzipSync } from 'node:zlib';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv, type BatchRow } from './batch-files.js';
import { startE2e } from './harness.js';

function named(prefix: string): BatchRow[] {
  return makeRows(prefix, 2).map((r) => ({ ...r, accountName: 'José Müller' }));
}

function utf16le(text: string): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
}

describe('e2e: encodings and archives', () => {
  it('pays Windows-1252, UTF-16 and .csv.gz batches with encoding auto, and refuses .xlsm saying why', async () => {
    const e2e = await startE2e({ config: { batch: { format: { encoding: 'auto' } } } });
    await e2e.startDaemon();
    await e2e.drop('latin.csv', Buffer.from(toCsv(named('W1252')), 'latin1'));
    // Refused whole (a header renamed in the spreadsheet): its ack still says how it was read.
    const renamed = toCsv(named('W1252H')).replace('merchantReferenceId', 'Référence');
    await e2e.drop('latin-header.csv', Buffer.from(renamed, 'latin1'));
    // As Excel saves "Unicode Text": UTF-16 with tabs between the fields.
    await e2e.drop('unicode.txt', utf16le(toCsv(named('U16')).replaceAll(',', '\t')));
    await e2e.drop('big.csv.gz', gzipSync(Buffer.from(toCsv(named('GZ')))));
    const workbook = new ExcelJS.Workbook();
    workbook.addWorksheet('Payouts').getCell('A1').value = 'merchantReferenceId';
    await e2e.drop('macros.xlsm', Buffer.from(await workbook.xlsx.writeBuffer()));

    const latin = await e2e.waitForBatch('latin.csv', ['COMPLETE'], 30_000);
    const ack = await e2e.waitForOutbox(latin, 'ack');
    expect(ack.rows[0]).toMatchObject({
      line: '',
      verdict: 'NOTE',
      reason: 'the file was read as windows-1252 text (batch.format.encoding: auto)',
    });
    expect(ack.rows.filter((r) => r['verdict'] === 'ACCEPTED')).toHaveLength(2);
    const refused = await e2e.waitForBatch('latin-header.csv', ['REJECTED'], 30_000);
    expect(refused.rejectReason).toContain('Référence');
    const refusal = await e2e.waitForOutbox(refused, 'ack');
    expect(refusal.rows.map((r) => [r['verdict'], r['reason']])).toEqual([
      ['REJECTED', refused.rejectReason],
      ['NOTE', 'the file was read as windows-1252 text (batch.format.encoding: auto)'],
    ]);
    const unicode = await e2e.waitForBatch('unicode.txt', ['COMPLETE'], 30_000);
    expect((await e2e.waitForOutbox(unicode, 'ack')).rows[0]?.['reason']).toContain('read as utf-16le text');
    await e2e.waitForBatch('big.csv.gz', ['COMPLETE'], 30_000);

    const paid = e2e.ledger().filter((p) => /^(W1252|W1252H|U16|GZ)-/.test(p.merchantReferenceId));
    expect(paid).toHaveLength(6);
    const result = await e2e.waitForOutbox(latin, 'result');
    expect(result.rows.map((r) => r['beneficiary_account_name'])).toEqual(['José Müller', 'José Müller']);

    const xlsm = await e2e.waitForBatch('macros.xlsm', ['REJECTED'], 30_000);
    expect(xlsm.rejectReason).toContain('a macro-enabled workbook (.xlsm) is not read');
  }, 120_000);

  it('refuses a UTF-16 file under the default strict UTF-8, saying what it is', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    await e2e.drop('unicode.csv', utf16le(toCsv(named('U16S'))));
    const batch = await e2e.waitForBatch('unicode.csv', ['REJECTED'], 30_000);
    expect(batch.rejectReason).toContain('the file is UTF-16 text');
    expect(batch.rejectReason).toContain('batch.format.encoding: auto');
    expect(e2e.ledger()).toEqual([]);
  }, 60_000);
});

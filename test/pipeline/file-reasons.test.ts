/**
 * A file refused whole says, for each problem, its code and where finance finds it: the line, the column letter
 * and header as written, and the file itself when the problem is in another one (the sidecar `<name>.ctl`). The
 * stored errors keep the column's position and the file, so `payoutd status` names them too.
 */
import { writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { listBatchEvents } from '../../src/store/batch-events.js';
import { closePipelines, csvRow, HEADER, HEADER_FIELDS, linesContaining, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: the reason a file is refused for', () => {
  it('names the column of an empty header cell by its letter, with the code', async () => {
    const p = await startPipeline();
    const header = HEADER.replace('sender.country,', 'sender.country,,');
    const batch = await p.receive('empty-col.csv', `${header}\n${csvRow('E-1').replace(',PH,', ',PH,,')}\n`);
    const reason =
      'HEADER_UNKNOWN [line 1, column H]: this column has no header (merged header cells?); name every column, unmerging merged cells';
    expect([batch.rejectCode, batch.rejectReason]).toEqual(['INVALID_FILE', reason]);
    expect(p.effects).toEqual([{ kind: 'file-rejection', batchId: batch.id, reason }]);
    expect(await listBatchErrors(p.db, batch.id)).toEqual([
      { file: 'empty-col.csv', line: 1, column: '', columnIndex: 7, field: null, code: 'HEADER_UNKNOWN', message: expect.any(String) },
    ]);
  });

  it('names where the second of two columns for one field is, besides the first', async () => {
    const p = await startPipeline();
    const batch = await p.receive('dup-col.csv', `${HEADER},payoutAmount\n${csvRow('D-1')},5\n`);
    expect(batch.rejectReason).toBe(
      'HEADER_DUPLICATE [line 1, column M "payoutAmount"]: this header is payoutAmount again, already the header of column D "payoutAmount"; keep one of the two columns',
    );
    expect(await listBatchErrors(p.db, batch.id)).toMatchObject([
      { file: 'dup-col.csv', line: 1, column: 'payoutAmount', columnIndex: 12 },
    ]);
  });

  it('names the sidecar file for a problem on a line of it, not the batch file', async () => {
    const p = await startPipeline();
    const claimed = await p.claim('pay.csv', `${HEADER}\n${csvRow('C-1')}\n${csvRow('C-2')}\n`);
    const controlPath = `${claimed.storedPath}.ctl`;
    await writeFile(controlPath, '#CONTROL,rows,2\n#CONTROL,total,PHP,201,00\n');
    const batch = await p.intake.receive({ ...claimed, controlPath });
    expect(batch.rejectReason).toBe(
      'CONTROL_INVALID [pay.csv.ctl, line 2]: control line must be #CONTROL,rows,<count> or #CONTROL,total,<currency>,<amount>; its fields are read at each "," and ";", so a number in it must have no comma: write it plain, e.g. 1500.50',
    );
    expect(await listBatchErrors(p.db, batch.id)).toMatchObject([{ file: 'pay.csv.ctl', line: 2, column: null, columnIndex: null }]);
  });

  it('lists every problem, each with its own code and place', async () => {
    const p = await startPipeline();
    const header = HEADER.replace('merchantReferenceId', 'Reference').replace('sender.country,', 'sender.country,,');
    const batch = await p.receive('two.csv', `${header}\n${csvRow('T-1').replace(',PH,', ',PH,,')}\n`);
    expect(batch.rejectReason?.split('; HEADER_')).toEqual([
      expect.stringMatching(
        /^HEADER_UNKNOWN \[line 1, column A "Reference"\]: "Reference" is not a column payoutd knows; did you mean merchantReferenceId\?/,
      ),
      expect.stringMatching(/^UNKNOWN \[line 1, column H\]: this column has no header/),
      expect.stringMatching(/^MISSING \[line 1\]: the required column merchantReferenceId is missing from the header row/),
    ]);
  });

  it("says a file without its header row has none, quoting none of its first line (a payee's data)", async () => {
    const p = await startPipeline();
    const batch = await p.receive('nohdr.csv', `${csvRow('N-1')}\n${csvRow('N-2')}\n`);
    const reason = `HEADER_MISSING [line 1]: line 1 looks like data: the file has no header row; the first line must be the header: ${HEADER_FIELDS.join(', ')}`;
    expect([batch.rejectCode, batch.rejectReason]).toEqual(['INVALID_FILE', reason]);
    // The reason is what the log line, the webhook and the mail of the refusal say.
    const rejected = (await listBatchEvents(p.db, batch.id)).find((e) => e.type === 'rejected');
    expect(rejected?.data).toMatchObject({ code: 'INVALID_FILE', reason });
    for (const secret of ['1234567890', 'P1234567A', 'Santos']) {
      expect(linesContaining(p.logLines, secret)).toEqual([]);
    }
  });

  it('masks an unknown header that holds many digits, as an account number is masked, and names a long one whole', async () => {
    const p = await startPipeline();
    const long = 'x'.repeat(500);
    const header = HEADER.replace('beneficiary.accountNumber', '1234567890').replace('sender.idValue', long);
    const batch = await p.receive('digits.csv', `${header}\n${csvRow('M-1')}\n`);
    const reason = batch.rejectReason ?? '';
    expect(reason).toContain('HEADER_UNKNOWN [line 1, column K "******7890"]: "******7890" is not a column payoutd knows');
    expect(reason).toContain(`HEADER_UNKNOWN [line 1, column I "${long}"]`);
    expect(reason).not.toContain('1234567890');
  });

  it("shows finance's own header text with a year or a month in it, and masks an IBAN or a spaced account number", async () => {
    const p = await startPipeline();
    const header = HEADER.replace('beneficiary.accountNumber', 'Invoice 2026-11')
      .replace('sender.idValue', 'payoutAmount (2026)')
      .replace('sender.idType', 'GB29NWBK60161331926819')
      .replace('sender.lastName', '0917 555 1234');
    const batch = await p.receive('own-headers.csv', `${header}\n${csvRow('M-2')}\n`);
    const reason = batch.rejectReason ?? '';
    expect(reason).toContain('HEADER_UNKNOWN [line 1, column K "Invoice 2026-11"]: "Invoice 2026-11" is not a column payoutd knows');
    expect(reason).toContain('HEADER_UNKNOWN [line 1, column I "payoutAmount (2026)"]');
    expect(reason).toContain('HEADER_UNKNOWN [line 1, column H "********6819"]');
    expect(reason).toContain('HEADER_UNKNOWN [line 1, column F "********1234"]');
    for (const secret of ['GB29NWBK', '0917 555']) expect(reason).not.toContain(secret);
  });
});

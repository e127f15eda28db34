/**
 * An upload cut short is never paid. A file that ends inside a row (its last
 * row short of fields) is refused whole as an incomplete upload, in those
 * words; a file that ends right after a field, with no line break, may hold
 * a cut value that still validates and is refused whole too, unless matching
 * control totals vouch for it. Whatever the invalid-rows policy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { VALID_ROW } from '../support/rows.js';
import { closePipelines, csvRow, HEADER, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

const ROWS = ['CUT-1', 'CUT-2', 'CUT-3'].map((ref) => csvRow(ref));
const UNTERMINATED = 'the file does not end with a line break: the upload may be incomplete; upload it again';

/** Every create the intake's rows could cause: the submitter runs, and nothing reaches the service. */
async function expectNothingPaid(p: Pipeline): Promise<void> {
  await p.submit();
  expect(p.createRequests()).toBe(0);
}

describe('pipeline: a cut upload', () => {
  for (const policy of ['reject-file', 'skip-rows'] as const) {
    it(`without a final line break is refused whole, and nothing is paid (${policy})`, async () => {
      const p = await startPipeline({ onInvalidRows: policy });
      const batch = await p.receive('cut.csv', [HEADER, ...ROWS].join('\n'));
      expect([batch.state, batch.rejectCode, batch.rejectReason]).toEqual([
        'REJECTED',
        'INVALID_FILE',
        `FILE_UNTERMINATED [line 4]: ${UNTERMINATED}`,
      ]);
      expect(p.effects).toEqual([{ kind: 'file-rejection', batchId: batch.id, reason: `FILE_UNTERMINATED [line 4]: ${UNTERMINATED}` }]);
      expect(await p.rows(batch.id)).toEqual([]);
      await expectNothingPaid(p);
    });

    it(`ending inside its last row is refused whole as incomplete, and nothing is paid (${policy})`, async () => {
      const p = await startPipeline({ onInvalidRows: policy });
      const short = (ROWS[2] as string).split(',').slice(0, 7).join(',');
      const batch = await p.receive('short.csv', `${[HEADER, ROWS[0], ROWS[1], short].join('\n')}\n`);
      const reason =
        "FILE_INCOMPLETE [line 4]: the upload looks incomplete (the file ends inside row 3): its last row, on line 4, has 7 of the header's 12 fields; upload the whole file again";
      expect([batch.state, batch.rejectCode, batch.rejectReason]).toEqual(['REJECTED', 'INVALID_FILE', reason]);
      expect(p.effects).toEqual([{ kind: 'file-rejection', batchId: batch.id, reason }]);
      await expectNothingPaid(p);
    });
  }

  it('cut inside its last field, an amount written last that still validates: nothing is paid', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const columns = [...FIELD_PATHS.filter((f) => f !== 'payoutAmount'), 'payoutAmount' as const];
    const line = (ref: string, amount: string): string =>
      columns.map((f) => ({ ...VALID_ROW, merchantReferenceId: ref, payoutAmount: amount })[f]).join(',');
    // 1500.50 cut to 150.
    const batch = await p.receive('amount-last.csv', [columns.join(','), line('AMT-1', '1500.50'), line('AMT-2', '150')].join('\n'));
    expect([batch.state, batch.rejectReason]).toEqual(['REJECTED', `FILE_UNTERMINATED [line 3]: ${UNTERMINATED}`]);
    await expectNothingPaid(p);
  });

  it('without a final line break but with matching control totals is whole: accepted and paid', async () => {
    const p = await startPipeline();
    const trailer = ['#CONTROL,rows,3', '#CONTROL,total,PHP,301.50'];
    const batch = await p.receive('vouched.csv', [HEADER, ...ROWS, ...trailer].join('\n'));
    expect([batch.state, batch.validCount]).toEqual(['ACTIVE', 3]);
    await p.submit();
    expect(p.createRequests()).toBe(3);
  });

  it('without a final line break and with control totals that do not match: refused, both problems named', async () => {
    const p = await startPipeline();
    const batch = await p.receive('mismatch.csv', [HEADER, ...ROWS, '#CONTROL,rows,3', '#CONTROL,total,PHP,30'].join('\n'));
    expect(batch.state).toBe('REJECTED');
    expect(batch.rejectReason).toContain('control trailer (line 6) expects PHP total 30, found 301.5');
    expect(batch.rejectReason).toContain(UNTERMINATED);
    await expectNothingPaid(p);
  });

  it('is not what a trailer written with the other separator is: its last line is read as the trailer, and paid', async () => {
    const p = await startPipeline();
    const batch = await p.receive('semi-trailer.csv', `${[HEADER, ...ROWS, '#CONTROL;rows;3', '#CONTROL;total;PHP;301.50'].join('\n')}\n`);
    expect([batch.state, batch.rejectReason, batch.validCount]).toEqual(['ACTIVE', null, 3]);
    await p.submit();
    expect(p.createRequests()).toBe(3);
  });
});

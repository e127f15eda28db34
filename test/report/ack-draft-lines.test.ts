/**
 * AckDraftLines writes an acknowledgement's lines one row at a time, taking a
 * short way for rows with nothing to quote: every line must be the bytes the
 * outbox writes for the same row (csvText of ackRecord), whatever needs
 * quoting or a spreadsheet's prefix, in the batch's cells or the row's.
 */
import { describe, expect, it } from 'vitest';
import { csvText } from '../../src/report/csv.js';
import { ackRecord } from '../../src/report/format.js';
import { AckDraftLines } from '../../src/report/index.js';
import type { AckRow } from '../../src/report/types.js';

const identities = [
  { batchId: 'B20261126-090000-ab12cd', fileName: 'payouts.csv' },
  { batchId: 'B20261126-090000-ab12cd', fileName: 'payouts, "v2".csv' },
  { batchId: 'B20261126-090000-ab12cd', fileName: '=payouts.csv' },
  { batchId: 'B20261126-090000-ab12cd', fileName: '-12.5' },
];

const references = [
  'INV-1',
  '-INV-1',
  '=SUM(A1)',
  '@x',
  "'quoted",
  'a,b',
  'say "hi"',
  'line\nbreak',
  'cr\rhere',
  '',
  'Müller ✓ 😀',
  '12.5',
  '-12.5',
];
const reasons = [null, 'REQUIRED [x]: x is required', 'AMOUNT_INVALID: "1,5" is not an amount', '=1+1', '-5 is negative', 'two\r\nlines'];

describe('an acknowledgement line drafted alone', () => {
  it('is the line the outbox writes for the same row', () => {
    let checked = 0;
    for (const identity of identities) {
      const lines = new AckDraftLines(identity);
      for (const merchantReferenceId of references) {
        for (const reason of reasons) {
          const row: AckRow = { line: 7 + checked, merchantReferenceId, verdict: reason === null ? 'ACCEPTED' : 'REJECTED', reason };
          expect(lines.line(row.line, row.merchantReferenceId, row.verdict, row.reason), JSON.stringify([identity, row])).toBe(
            csvText([ackRecord(identity, row)]),
          );
          checked++;
        }
      }
    }
    expect(checked).toBe(identities.length * references.length * reasons.length);
  });
});

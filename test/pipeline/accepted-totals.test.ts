/**
 * The amounts a batch is announced and listed with are those of its accepted rows, the rows sent: a
 * refused row's amount (a typo, decimals the currency does not allow, a reference pasted twice) is not
 * the batch's. The file's own totals, refused rows included, are kept apart under their own name.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { listBatchEvents } from '../../src/store/index.js';
import { closePipelines, csvFile, csvRow, startPipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: the totals of an accepted batch', () => {
  it('batch.accepted and the batch record state the accepted rows; fileTotals every row of the file', async () => {
    const rows = [
      csvRow('T-1', { payoutAmount: '1500.50' }),
      csvRow('T-2', { payoutAmount: '00000000001000000000.001' }),
      csvRow('T-3', { payoutAmount: '0.001' }),
      csvRow('T-4', { payoutAmount: '200' }),
      // Valid as read, refused at acceptance: the reference is on two lines.
      csvRow('T-5', { payoutAmount: '7' }),
      csvRow('T-5', { payoutAmount: '9' }),
      csvRow('T-6', { payoutAmount: '50', payoutCurrency: 'USD', 'beneficiary.bankCode': '021000021' }),
    ];
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batch = await p.receive('typo.csv', csvFile(rows));
    expect([batch.state, batch.validCount, batch.invalidCount]).toEqual(['ACTIVE', 3, 4]);
    const accepted = (await listBatchEvents(p.db, batch.id)).find((e) => e.type === 'accepted');
    expect(accepted?.data).toMatchObject({
      validCount: 3,
      invalidCount: 4,
      totals: { PHP: '1700.5', USD: '50' },
      fileTotals: { PHP: '1000001716.502', USD: '50' },
    });
    expect(JSON.parse(batch.acceptedTotalsJson as string)).toEqual({ PHP: '1700.5', USD: '50' });
    expect(JSON.parse(batch.totalsJson as string)).toEqual({ PHP: '1000001716.502', USD: '50' });
  });
});

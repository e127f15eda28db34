/**
 * A retry row whose account number is its original's with the leading
 * zeros gone (a retry file opened in a spreadsheet and saved as CSV) is
 * refused, saying so, and never paid; the same row with the account as
 * written in the original is accepted. The originals are read from the
 * real SQLite database the intake writes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pruneBatchDetails } from '../../src/store/retention.js';
import { closePipelines, csvRow, HEADER, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

const ACCOUNT = '0012345670000';

/** A batch of one row with ACCOUNT, paid out and cancelled: retry rows are the only ones that may pay it now. */
async function cancelledOriginal(p: Pipeline, reference: string): Promise<string> {
  const first = await p.receive(
    `${reference}.csv`,
    `${[HEADER, csvRow(reference, { 'beneficiary.accountNumber': ACCOUNT })].join('\n')}\n`,
  );
  await p.submit();
  p.sandbox.settle({ merchantReferenceId: reference }, 'CANCELLED');
  p.clock.advance(p.submitterOptions.firstPollDelayMs);
  await p.poll();
  expect((await p.row(reference)).state).toBe('CANCELLED');
  return first.id;
}

async function retryStates(
  p: Pipeline,
  name: string,
  accounts: Record<string, string>,
): Promise<[string, string, string | null, string | null][]> {
  const lines = Object.entries(accounts).map(([reference, account]) => csvRow(reference, { 'beneficiary.accountNumber': account }));
  const retry = await p.receive(name, `${[HEADER, ...lines].join('\n')}\n`);
  return (await p.rows(retry.id)).map((r) => [r.merchantReferenceId, r.state, r.reasonCode, r.reason]);
}

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

  it('is still refused once retention removed the request of its original, which keeps no account number', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batchId = await cancelledOriginal(p, 'LZ-5');
    expect(await pruneBatchDetails(p.db, batchId, p.clock.now())).toBe(true);
    const stored = (await p.db('payouts').where({ merchant_reference_id: 'LZ-5' }).first()) as Record<string, unknown>;
    expect(stored.request_values).toBeNull();
    expect(JSON.stringify(stored)).not.toContain(ACCOUNT.replace(/^0+/, ''));

    const rows = await retryStates(p, 'retry.csv', { 'LZ-5-R1': ACCOUNT.replace(/^0+/, '') });
    expect(rows.map((r) => r.slice(0, 3))).toEqual([['LZ-5-R1', 'INVALID', 'LEADING_ZEROS_LOST']]);
    expect(rows[0]?.[3]).toContain('it is the account number of LZ-5, which this retry row repeats, without its 2 leading zero(s)');
    // Another account without leading zeros is not taken for this one.
    const other = await retryStates(p, 'retry-2.csv', { 'LZ-5-R2': '98765430000' });
    expect(other.map((r) => r.slice(0, 3))).toEqual([['LZ-5-R2', 'READY', null]]);
  });

  it('is refused, saying what to do, when an older payoutd removed the request of its original keeping nothing', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batchId = await cancelledOriginal(p, 'LZ-6');
    // What retention did before it kept the leading zeros: the request gone, nothing in its place.
    await p.db('payouts').where({ batch_id: batchId }).update({ request_values: null });
    // Pruned before prune_started_at was recorded (migration 0029): pruned_at alone says so.
    await p.db('batches').where({ id: batchId }).update({ prune_started_at: null, pruned_at: p.clock.now() });

    const rows = await retryStates(p, 'retry-old.csv', { 'LZ-6-R1': ACCOUNT.replace(/^0+/, '') });
    expect(rows.map((r) => r.slice(0, 3))).toEqual([['LZ-6-R1', 'INVALID', 'LEADING_ZEROS_UNCHECKED']]);
    expect(rows[0]?.[3]).toBe(
      `LEADING_ZEROS_UNCHECKED [column K "beneficiary.accountNumber"]: the account number cannot be checked for lost leading zeros: the details of LZ-6, which this retry row repeats, were removed by retention (batch ${batchId}, "LZ-6.csv") by a payoutd that kept nothing to compare with, and a spreadsheet drops leading zeros from a retry file saved as CSV, which would pay another account; compare the account number with the file as first sent: if it had leading zeros, type them back (the column formatted as Text) and drop the file again; if it had none, send the row under a reference of its own, not ending in -R<n>`,
    );
    // Typed with its zeros: nothing a spreadsheet dropped.
    const typed = await retryStates(p, 'retry-typed.csv', { 'LZ-6-R2': ACCOUNT });
    expect(typed.map((r) => r.slice(0, 3))).toEqual([['LZ-6-R2', 'READY', null]]);
  });
});

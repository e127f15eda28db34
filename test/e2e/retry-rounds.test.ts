/**
 * A cancellation retried through two retry files, against the real `payoutd run` and sandbox (the default
 * onInvalidRows, reject-file): the daemon's retry file comes back from a spreadsheet without the account's
 * leading zeros and is refused; the operator makes the retry file again with `payoutd retry-file`; finance then
 * drops the first one corrected and the operator the one made again. The cancellation is paid once: the file
 * made again carries the reference refused (no row ever sent it), so the second file dropped is a duplicate.
 * A retry under another round of the same payout, as an older build made it, is refused at its acceptance
 * with RETRY_DUPLICATE, its ack and result saying where that payout was paid and that nothing is to be done.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e, waitFor } from './harness.js';

/** The account of T-0002 (makeRows: cancelled by the sandbox), as a spreadsheet saves it, and as finance corrects it. */
const CANCELLED_ACCOUNT = '0000020000';
const ZEROS_LOST = '20000';
const CORRECTED = '0000021111';

describe('e2e: one cancellation, two retry files', () => {
  it('pays the cancelled row once when a refused retry file is made again and both are dropped', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    await e2e.drop('pay.csv', toCsv(makeRows('T', 2, { cancelEvery: 2 })));
    const first = await e2e.waitForBatch('pay.csv', ['COMPLETE'], 60_000);
    const retryName = `${first.id}_pay.csv.retry.csv`;
    await waitFor(async () => (await e2e.outboxNames()).includes(retryName), 'the retry file', 20_000);
    const retry = await readFile(join(e2e.outbox, retryName), 'utf8');
    expect(retry).toContain(`T-0002-R1,`);
    expect(retry).toContain(`,${CANCELLED_ACCOUNT},`);

    // Saved by a spreadsheet: refused, nothing of it paid.
    await e2e.drop('retry-from-excel.csv', retry.replace(CANCELLED_ACCOUNT, ZEROS_LOST));
    const refused = await e2e.waitForBatch('retry-from-excel.csv', ['REJECTED', 'ACTIVE', 'COMPLETE'], 60_000);
    expect(refused.state).toBe('REJECTED');
    expect((await e2e.waitForOutbox(refused, 'ack')).text).toContain('LEADING_ZEROS_LOST');

    // Made again: the reference refused is given out again, not a next round.
    const freshPath = join(e2e.dir, 'fresh.csv');
    const made = await e2e.cli(['retry-file', '--batch', first.id, '--out', freshPath]);
    expect(made.code, made.stderr).toBe(0);
    const fresh = await readFile(freshPath, 'utf8');
    expect(fresh).toContain('T-0002-R1,');

    await e2e.drop('retry-fixed.csv', retry.replace(CANCELLED_ACCOUNT, CORRECTED));
    await e2e.drop('fresh-fixed.csv', fresh.replace(CANCELLED_ACCOUNT, CORRECTED));
    const done = ['COMPLETE', 'REJECTED', 'DUPLICATE'] as const;
    const fixed = await e2e.waitForBatch('retry-fixed.csv', [...done], 60_000);
    const again = await e2e.waitForBatch('fresh-fixed.csv', [...done], 60_000);
    // The second to come is refused: the same bytes (DUPLICATE), or the same reference (REJECTED).
    const states = [fixed.state, again.state];
    expect(states.filter((s) => s === 'COMPLETE')).toHaveLength(1);
    expect(states.filter((s) => s !== 'COMPLETE')).toEqual([expect.stringMatching(/^(DUPLICATE|REJECTED)$/)]);

    // An older build's second retry file, under round 2 of the same payout: refused, with where it was paid.
    await e2e.drop('older-retry.csv', fresh.replace('T-0002-R1', 'T-0002-R2').replace(CANCELLED_ACCOUNT, CORRECTED));
    const older = await e2e.waitForBatch('older-retry.csv', [...done, 'ACTIVE'], 60_000);
    expect(older.state).toBe('REJECTED');
    const paidBy = fixed.state === 'COMPLETE' ? fixed : again;
    const reason = new RegExp(
      `^RETRY_DUPLICATE \\[column A "merchantReferenceId"\\]: the reference T-0002-R2 retries T-0002, which line 2 of "${paidBy.fileName}" \\(batch ${paidBy.id}, received [^)]+\\) already paid as T-0002-R1 \\(PAID\\); this row is not paid: nothing to do, that payout was made; if this row is another payout, not a retry, give it a reference not ending in -R2$`,
    );
    const ack = await e2e.waitForOutbox(older, 'ack');
    const ackRow = ack.rows.find((r) => r['merchant_reference_id'] === 'T-0002-R2');
    expect(ackRow?.['verdict']).toBe('REJECTED');
    expect(ackRow?.['reason']).toMatch(reason);
    const result = await e2e.waitForOutbox(older, 'result');
    const resultRow = result.rows.find((r) => r['merchant_reference_id'] === 'T-0002-R2');
    expect(resultRow?.['status']).toBe('DUPLICATE');
    expect(resultRow?.['reason']).toMatch(reason);

    // The sandbox's ledger: T-0002 cancelled, paid once under one retry reference.
    const t2 = e2e
      .ledger()
      .filter((p) => p.merchantReferenceId.startsWith('T-0002'))
      .map((p) => [p.merchantReferenceId, p.status, p.accountNumber]);
    expect(t2.sort()).toEqual([
      ['T-0002', 'CANCELLED', CANCELLED_ACCOUNT],
      ['T-0002-R1', 'PAID', CORRECTED],
    ]);
  }, 400_000);
});

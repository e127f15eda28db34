/**
 * E2E: a row whose reference a row of an earlier batch holds is told how that row stands (paid, being paid,
 * cancelled) and what to do about it: nothing for a paid payout, wait for one being paid, and for a cancelled
 * one its retry reference and the retry file carrying it, never a new reference beside that file (both would
 * be paid).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { phpRow, toCsv, type BatchRow } from './batch-files.js';
import { ledgerByReference, startE2e, type BatchStatus, type E2e } from './harness.js';

const row = phpRow;

/** The ack's reason of each row of the batch, by reference. */
async function ackReasons(e2e: E2e, batch: BatchStatus): Promise<Map<string, string>> {
  const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
  return new Map(ack.rows.map((r) => [r['merchant_reference_id'] ?? '', r['reason'] ?? '']));
}

/** Waits until payoutd has recorded the batch's rows in these counts (the poller follows the sandbox). */
function waitForCounts(e2e: E2e, fileName: string, counts: Record<string, number>): Promise<BatchStatus> {
  return e2e.waitForBatches(
    (bs) =>
      bs.find((b) => b.fileName === fileName && Object.entries(counts).every(([s, n]) => (b.counts as Record<string, number>)[s] === n)),
    `${fileName} with ${JSON.stringify(counts)}`,
    30_000,
  );
}

describe('e2e: a reference an earlier batch holds, with the same content', () => {
  it('says how that row stands: paid (nothing to do), being paid (wait), cancelled (its retry reference)', async () => {
    const e2e = await startE2e({ config: { batch: { onInvalidRows: 'skip-rows' } } });
    await e2e.startDaemon();
    const rows = [row('B-PAID', '10.00', '1234567890'), row('B-CANC', '11.00', '1234560000'), row('B-PEND', '12.00', '1234569999')];
    await e2e.drop('b1.csv', toCsv(rows));
    const b1 = await waitForCounts(e2e, 'b1.csv', { PAID: 1, CANCELLED: 1, PENDING: 1 });

    await e2e.drop('b2.csv', toCsv([...rows, row('B-NEW', '13.00', '1234567893')]));
    const b2 = await e2e.waitForBatch('b2.csv', ['ACTIVE', 'COMPLETE'], 30_000);
    const reasons = await ackReasons(e2e, b2);
    const place = (line: number): string => `line ${line} of "b1.csv" (batch ${b1.id}, received `;

    const paid = reasons.get('B-PAID') ?? '';
    expect(paid).toMatch(/^DUPLICATE_REFERENCE \[column A "merchantReferenceId"\]: the reference B-PAID was already submitted by /);
    expect(paid).toContain(place(2));
    expect(paid).toContain('with the same content, and that row is PAID; this row is not paid: nothing to do, it is paid');

    const pending = reasons.get('B-PEND') ?? '';
    expect(pending).toContain(place(4));
    expect(pending).toContain(
      `that row is being paid (PENDING); this row is not paid: wait for that row's outcome (payoutd status --batch ${b1.id}), and send this row again only if that row ends unpaid`,
    );

    // b1 is not finished (B-PEND is held PENDING): its retry file comes once it is.
    const cancelled = reasons.get('B-CANC') ?? '';
    expect(cancelled).toContain(place(3));
    expect(cancelled).toContain(
      `that row is cancelled (CANCELLED): not paid; this row is not paid: send it again as B-CANC-R1 from the retry file of batch ${b1.id} (${b1.id}_b1.csv.retry.csv, written to the outbox once that batch is finished, or payoutd retry-file --batch ${b1.id} then)`,
    );
    expect(cancelled).toContain('not under any other reference as well, or it is paid twice');
    expect(reasons.get('B-NEW')).toBe('');

    await e2e.waitForBatches((bs) => bs.find((b) => b.id === b2.id && b.counts.PAID === 1), 'B-NEW paid', 30_000);
    expect([...ledgerByReference(e2e.ledger())].map(([ref, entries]) => [ref, entries.length])).toEqual([
      ['B-PAID', 1],
      ['B-CANC', 1],
      ['B-PEND', 1],
      ['B-NEW', 1],
    ]);
  });

  it('a cancelled payout of a finished batch: its retry reference and file are named, and following them pays it once', async () => {
    const { d1, retryName, reason } = await cancelledThenAgain(row('D-2', '11.00', '1234560000'));
    expect(reason).toBe(
      `DUPLICATE_REFERENCE [column A "merchantReferenceId"]: the reference D-2 was already submitted by line 3 of "d1.csv" (batch ${d1.id}, received ${receivedText(d1)}) with the same content, and that row is cancelled (CANCELLED): not paid; this row is not paid: send it again as D-2-R1 from the retry file of batch ${d1.id} (${retryName} in the outbox, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${d1.id}), with what got it cancelled put right there, and not under any other reference as well, or it is paid twice`,
    );
  });
});

describe('e2e: a reference an earlier batch holds, for a different payout', () => {
  it('a corrected row of a cancelled payout is sent from its retry file, its changes named, never under a new reference too', async () => {
    // The clerk corrects the account and drops the row again under its reference.
    const { d1, retryName, reason } = await cancelledThenAgain(row('D-2', '11.00', '1234561111'));
    expect(reason).toBe(
      `REFERENCE_CONFLICT [column A "merchantReferenceId"]: the reference D-2 is already used by line 3 of "d1.csv" (batch ${d1.id}, received ${receivedText(d1)}) for a different payout (its beneficiary.accountNumber differs), and that row is cancelled (CANCELLED): not paid; this row is not paid: if this row corrects that payout, send it again as D-2-R1 from the retry file of batch ${d1.id} (${retryName} in the outbox, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${d1.id}), with this row's beneficiary.accountNumber put in column K "beneficiary.accountNumber" there, and not under any other reference as well, or it is paid twice; if it is another payout, give it its own reference`,
    );
  });
});

/**
 * d1.csv pays D-1 and has D-2 cancelled; once it is finished, d2.csv holds `again` under D-2. Then, as the reason
 * tells, the retry file of d1.csv is dropped with D-2's account put right: D-2 is paid once, as D-2-R1.
 */
async function cancelledThenAgain(again: BatchRow): Promise<{ d1: BatchStatus; retryName: string; reason: string }> {
  const e2e = await startE2e();
  await e2e.startDaemon();
  await e2e.drop('d1.csv', toCsv([row('D-1', '10.00', '1234567890'), row('D-2', '11.00', '1234560000')]));
  const d1 = await e2e.waitForBatch('d1.csv', ['COMPLETE'], 30_000);
  const retryName = `${d1.id}_d1.csv.retry.csv`;
  await e2e.drop('d2.csv', toCsv([again]));
  const d2 = await e2e.waitForBatch('d2.csv', ['REJECTED', 'ACTIVE', 'COMPLETE'], 30_000);
  const reason = (await ackReasons(e2e, d2)).get('D-2') ?? '';

  const retry = await readFile(join(e2e.outbox, retryName), 'utf8');
  expect(retry).toContain('D-2-R1,');
  await e2e.drop(retryName, retry.replace('1234560000', '1234561111'));
  await e2e.waitForBatch(retryName, ['COMPLETE'], 30_000);
  const paid = e2e.ledger().filter((l) => l.status === 'PAID');
  expect(paid.map((l) => [l.merchantReferenceId, l.accountNumber]).sort()).toEqual([
    ['D-1', '1234567890'],
    ['D-2-R1', '1234561111'],
  ]);
  return { d1, retryName, reason };
}

/** A batch's receipt as a message gives it: `2026-01-05 09:00 UTC`. */
function receivedText(b: BatchStatus): string {
  return `${new Date(b.receivedAt).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

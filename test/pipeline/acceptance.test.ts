/**
 * Accepting batches: references twice in a file, references an earlier
 * batch holds (same or different content), references of a rejected batch
 * that may be reused, the reject-file / skip-rows policies, references
 * held from the read (before the acceptance), the database's partial unique
 * index as the last line of defence, and duplicate files.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptBatchRows } from '../../src/store/acceptance.js';
import { listBatchErrors } from '../../src/store/batch-errors.js';
import { insertBatch, receivedBatch } from '../../src/store/batches.js';
import { FIELD_PATHS } from '../../src/ingest/rules/index.js';
import { reasonText } from '../../src/report/format.js';
import { closePipelines, csvFile, csvRow, payoutRequest, startPipeline, type Pipeline } from './harness.js';

afterEach(closePipelines);

describe('pipeline: what a row whose reference is used twice is told', () => {
  // The reference column last, its header in a case of its own: messages name it as the file has it.
  const header = [...FIELD_PATHS.slice(1), 'MerchantReferenceID'].join(',');
  const refLast = (row: string): string => {
    const [ref, ...rest] = row.split(',');
    return [...rest, ref].join(',');
  };
  const file = (rows: string[]): string => `${[header, ...rows.map(refLast)].join('\n')}\n`;
  const reasons = async (p: Pipeline, batchId: string): Promise<(string | null)[]> =>
    (await p.rows(batchId)).map((r) => reasonText(r.reasonCode, r.reason));

  it('twice in one file: the column letter and header, the other line, and what to do', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batch = await p.receive('d.csv', file([csvRow('X-1'), csvRow('X-1', { payoutAmount: '7' }), csvRow('X-2')]));
    expect(await reasons(p, batch.id)).toEqual([
      'DUPLICATE_IN_FILE [column L "MerchantReferenceID"]: the reference X-1 is also on line 3 of this file; give each payout its own reference, or delete the row that repeats another',
      'DUPLICATE_IN_FILE [column L "MerchantReferenceID"]: the reference X-1 is also on line 2 of this file; give each payout its own reference, or delete the row that repeats another',
      null,
    ]);
    expect((await listBatchErrors(p.db, batch.id)).map((e) => [e.line, e.code, e.column, e.columnIndex, e.field])).toEqual([
      [2, 'DUPLICATE_IN_FILE', 'MerchantReferenceID', 11, 'merchantReferenceId'],
      [3, 'DUPLICATE_IN_FILE', 'MerchantReferenceID', 11, 'merchantReferenceId'],
    ]);
  });

  it('used by an earlier file: that file by name, its line and when it came, and what to do', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const first = await p.receive('payouts-0105.csv', csvFile([csvRow('Y-1'), csvRow('Y-2')]));
    p.clock.advance(86_400_000);
    const second = await p.receive('payouts-0106.csv', file([csvRow('Y-1'), csvRow('Y-2', { payoutAmount: '9' }), csvRow('Y-3')]));
    const earlier = (line: number): string => `line ${line} of "payouts-0105.csv" (batch ${first.id}, received 2026-01-05 09:00 UTC)`;
    expect(await reasons(p, second.id)).toEqual([
      `DUPLICATE_REFERENCE [column L "MerchantReferenceID"]: the reference Y-1 was already submitted by ${earlier(2)} with the same content, and that row is not sent yet (READY): waiting to be sent; this row is not paid: wait for that row's outcome (payoutd status --batch ${first.id}), and send this row again only if that row ends unpaid: under this reference if it ends NOT_SUBMITTED, from the retry file of that batch if it ends CANCELLED`,
      `REFERENCE_CONFLICT [column L "MerchantReferenceID"]: the reference Y-2 is already used by ${earlier(3)} for a different payout (its payoutAmount differs), and that row is not sent yet (READY): waiting to be sent; this row is not paid: if this row corrects that payout, wait for that row's outcome (payoutd status --batch ${first.id}), and send this row again only if that row ends unpaid: under this reference if it ends NOT_SUBMITTED, from the retry file of that batch with this row's payoutAmount put in if it ends CANCELLED; if it is another payout, give it its own reference`,
      null,
    ]);
    expect((await listBatchErrors(p.db, second.id)).map((e) => [e.line, e.code, e.column, e.columnIndex])).toEqual([
      [2, 'DUPLICATE_REFERENCE', 'MerchantReferenceID', 11],
      [3, 'REFERENCE_CONFLICT', 'MerchantReferenceID', 11],
    ]);
  });

  it('the same payout again: says whether that row waits for approval, is held, has an unknown outcome or was refused', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const idr = { payoutAmount: '0.10', payoutCurrency: 'IDR', 'beneficiary.bankCode': '014' };
    const refused = await p.receive('refused.csv', csvFile([csvRow('ST-REF', idr)]));
    await p.submit();
    expect(await p.states(refused.id)).toEqual(['REJECTED']); // below the service's minimum
    const approval = await p.receive('approval.csv', csvFile([csvRow('ST-APP')]));
    await p.db('batches').where({ id: approval.id }).update({ approval_state: 'REQUIRED', hold_code: 'AWAITING_APPROVAL' });
    const balance = await p.receive('balance.csv', csvFile([csvRow('ST-BAL')]));
    await p.db('batches').where({ id: balance.id }).update({ hold_code: 'INSUFFICIENT_BALANCE' });
    const unknown = await p.receive('unknown.csv', csvFile([csvRow('ST-UNK')]));
    await p.db('payouts').where({ batch_id: unknown.id }).update({ state: 'UNKNOWN' });

    const again = await p.receive('again.csv', csvFile([csvRow('ST-REF', idr), csvRow('ST-APP'), csvRow('ST-BAL'), csvRow('ST-UNK')]));
    const [ref, app, bal, unk] = await reasons(p, again.id);
    const wait = (id: string): string =>
      `this row is not paid: wait for that row's outcome (payoutd status --batch ${id}), and send this row again only if that row ends unpaid: ` +
      'under this reference if it ends NOT_SUBMITTED, from the retry file of that batch if it ends CANCELLED';
    expect(ref).toContain(
      `and that row is refused by the payout service (REJECTED): not paid; this row is not paid: give it a new reference, with what the payout service refused put right (its reason is in the result file of batch ${refused.id})`,
    );
    expect(app).toContain(`and that row is not sent yet (READY): its batch awaits approval; ${wait(approval.id)}`);
    expect(bal).toContain(`and that row is not sent yet (READY): its batch is held until the balance covers it; ${wait(balance.id)}`);
    expect(unk).toContain(`and that row is sent, its outcome not known yet (UNKNOWN): it may be paid; ${wait(unknown.id)}`);
  });

  it('a different payout under the reference of a paid or refused row: a correction is not sent again, or needs a new reference', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows', retryFileOf: (b) => `${b.id}.retry.csv` });
    const first = await p.receive('first.csv', csvFile([csvRow('CP-1'), csvRow('CP-2')]));
    await p.db('payouts').where({ merchant_reference_id: 'CP-1' }).update({ state: 'PAID' });
    await p.db('payouts').where({ merchant_reference_id: 'CP-2' }).update({ state: 'REJECTED' });
    await p.db('batches').where({ id: first.id }).update({ state: 'COMPLETE' });

    const fixed = { 'beneficiary.accountNumber': '1234561111', 'beneficiary.accountName': 'Ana Reyes' };
    const again = await p.receive('again.csv', csvFile([csvRow('CP-1', fixed), csvRow('CP-2', fixed)]));
    const [paid, refused] = await reasons(p, again.id);
    const head = (ref: string, line: number): string =>
      `REFERENCE_CONFLICT [column A "merchantReferenceId"]: the reference ${ref} is already used by line ${line} of "first.csv" (batch ${first.id}, received 2026-01-05 09:00 UTC) for a different payout (its beneficiary.accountName and beneficiary.accountNumber differ), and that row is `;
    expect(paid).toBe(
      `${head('CP-1', 2)}PAID; this row is not paid: if this row corrects that payout, it was paid already as that row has it, so do not send it again; if it is another payout, give it its own reference`,
    );
    expect(refused).toBe(
      `${head('CP-2', 3)}refused by the payout service (REJECTED): not paid; this row is not paid: give it a new reference (the payout service's reason for refusing that row is in the result file of batch ${first.id})`,
    );
  });

  it('a cancelled payout: the round its retry file offers, the batch whose retry file has it, or the round already retrying it', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows', retryFileOf: (b) => `${b.id}.retry.csv` });
    const first = await p.receive('first.csv', csvFile([csvRow('RP-1'), csvRow('RP-2'), csvRow('RP-3'), csvRow('RP-5'), csvRow('RP-6')]));
    await p.db('payouts').where({ batch_id: first.id }).update({ state: 'CANCELLED' });
    await p.db('batches').where({ id: first.id }).update({ state: 'COMPLETE' });
    // RP-1's first retry was cancelled too; RP-2's is paid; RP-3's retry is not dropped yet; RP-5 was sent again
    // directly as RP-5-R6 and paid; RP-6 as RP-6-R8, recorded cancelled, but the payout service reports otherwise.
    const retry = await p.receive('first.retry.csv', csvFile([csvRow('RP-1-R1'), csvRow('RP-2-R1'), csvRow('RP-5-R6'), csvRow('RP-6-R8')]));
    expect(await p.states(retry.id)).toEqual(['READY', 'READY', 'READY', 'READY']);
    await p
      .db('payouts')
      .where({ merchant_reference_id: 'RP-6-R8' })
      .update({ state: 'CANCELLED', payout_id: 'P-68', service_note: 'PAID' });
    await p.db('payouts').where({ merchant_reference_id: 'RP-1-R1' }).update({ state: 'CANCELLED' });
    await p.db('payouts').whereIn('merchant_reference_id', ['RP-2-R1', 'RP-5-R6']).update({ state: 'PAID' });
    await p.db('batches').where({ id: retry.id }).update({ state: 'COMPLETE' });

    p.clock.advance(60_000);
    const again = await p.receive(
      'again.csv',
      csvFile([csvRow('RP-1'), csvRow('RP-2'), csvRow('RP-3'), csvRow('RP-4'), csvRow('RP-5'), csvRow('RP-6')]),
    );
    const [one, two, three, , five, six] = await reasons(p, again.id);
    const twice = 'and not under any other reference as well, or it is paid twice';
    expect(one).toContain(
      `that row is cancelled (CANCELLED): not paid; this row is not paid: send it again as RP-1-R2 from the retry file of batch ${retry.id} (${retry.id}.retry.csv in the outbox, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${retry.id}), with what got it cancelled put right there, ${twice}`,
    );
    expect(two).toContain(
      `that row is cancelled (CANCELLED): not paid; this row is not paid: nothing to do: it was retried as RP-2-R1 by line 3 of "first.retry.csv" (batch ${retry.id}), which is PAID`,
    );
    expect(three).toContain(`send it again as RP-3-R1 from the retry file of batch ${first.id} (${first.id}.retry.csv in the outbox`);
    expect(five).toContain(
      `this row is not paid: RP-5-R6, a later round of it sent directly by line 4 of "first.retry.csv" (batch ${retry.id}), is PAID: if that is this payout, nothing to do; if it is no retry of it, pay it again in a file of your own with a new reference`,
    );
    expect(six).toContain(
      `this row is not paid: RP-6-R8, a later round of it sent directly by line 5 of "first.retry.csv" (batch ${retry.id}), is recorded CANCELLED, but the payout service reports otherwise for payout P-68: it may have been paid; check payout P-68 with the payout service before sending this row again under any reference`,
    );
    // The round below it, which the advice does not offer, is refused.
    const below = await p.receive('below.csv', csvFile([csvRow('RP-5-R1')]));
    expect(await p.states(below.id)).toEqual(['DUPLICATE']);
  });
});

describe('pipeline: acceptance of references', () => {
  it('the ack is written while the batch is still VALIDATING, and recorded in the move that lets it go', async () => {
    // Finance has the answer before the first create can leave, and the outbox repair never meets an ACTIVE
    // batch whose ack is still being written.
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batch = await p.receive('first-ack.csv', csvFile([csvRow('FA-1'), csvRow('FA-2', { payoutAmount: '-1' })]));
    expect(batch.state).toBe('ACTIVE');
    expect(p.effects.filter((e) => e.batchId === batch.id).map((e) => [e.kind, e.storedState])).toEqual([['ack', 'VALIDATING']]);
    expect(batch.ackWrittenAt).not.toBeNull();
    expect(batch.ackWrittenAt).toBe(batch.acceptedAt);
  });

  it('a reference twice in one file: both rows INVALID with DUPLICATE_IN_FILE naming the other line (skip-rows)', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batch = await p.receive(
      'twice.csv',
      csvFile([csvRow('AF-1'), csvRow('AF-2'), csvRow('AF-1', { payoutAmount: '7' }), csvRow('AF-3')]),
    );
    expect(batch.state).toBe('ACTIVE');
    const rows = await p.rows(batch.id);
    expect(rows.map((r) => [r.line, r.merchantReferenceId, r.state, r.reasonCode])).toEqual([
      [2, 'AF-1', 'INVALID', 'DUPLICATE_IN_FILE'],
      [3, 'AF-2', 'READY', null],
      [4, 'AF-1', 'INVALID', 'DUPLICATE_IN_FILE'],
      [5, 'AF-3', 'READY', null],
    ]);
    expect(rows[0]?.reason).toContain('line 4');
    expect(rows[2]?.reason).toContain('line 2');
    const errors = (await listBatchErrors(p.db, batch.id)).filter((e) => e.code === 'DUPLICATE_IN_FILE');
    expect(errors.map((e) => [e.line, e.field])).toEqual([
      [2, 'merchantReferenceId'],
      [4, 'merchantReferenceId'],
    ]);
    expect(batch.validCount).toBe(2);
    expect(batch.invalidCount).toBe(2);

    await p.submit();
    expect(p.ledgerCount('AF-1')).toBe(0);
    expect(p.sandbox.stats().creates).toBe(2);
  });

  it('a reference twice in one file where a row is invalid: the valid one is not paid, both lines are named (skip-rows)', async () => {
    // The reference's only READY row would hold it: the group is found through its INVALID rows.
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const batch = await p.receive(
      'twice-invalid.csv',
      csvFile([
        csvRow('AI-1', { payoutAmount: '-5' }),
        csvRow('AI-2'),
        csvRow('AI-1'),
        csvRow('AI-3', { payoutAmount: 'x' }),
        csvRow('AI-3', { payoutAmount: 'y' }),
      ]),
    );
    expect(batch.state).toBe('ACTIVE');
    const rows = await p.rows(batch.id);
    expect(rows.map((r) => [r.line, r.state, r.reasonCode])).toEqual([
      [2, 'INVALID', 'AMOUNT_NEGATIVE'],
      [3, 'READY', null],
      [4, 'INVALID', 'DUPLICATE_IN_FILE'],
      [5, 'INVALID', 'AMOUNT_INVALID'],
      [6, 'INVALID', 'AMOUNT_INVALID'],
    ]);
    const errors = (await listBatchErrors(p.db, batch.id)).filter((e) => e.code === 'DUPLICATE_IN_FILE');
    expect(errors.map((e) => e.line)).toEqual([2, 4, 5, 6]);
    await p.submit();
    expect(p.ledgerCount('AI-1')).toBe(0);
    expect(p.sandbox.stats().creates).toBe(1);
  });

  it('reject-file: one duplicate in the file and nothing of it is paid', async () => {
    const p = await startPipeline({ onInvalidRows: 'reject-file' });
    const batch = await p.receive('twice.csv', csvFile([csvRow('RF-1'), csvRow('RF-2'), csvRow('RF-1')]));
    expect(batch.state).toBe('REJECTED');
    expect(batch.rejectCode).toBe('INVALID_ROWS');
    expect(batch.rejectReason).toContain('reject-file');
    expect(await p.states(batch.id)).toEqual(['INVALID', 'NOT_SUBMITTED', 'INVALID']);
    expect((await p.row('RF-2')).reasonCode).toBe('FILE_REJECTED');
    expect(p.effects.filter((e) => e.batchId === batch.id).map((e) => e.kind)).toEqual(['ack', 'result']);
    await p.submit();
    expect(p.createRequests()).toBe(0);
  });

  it('a reference held by an earlier accepted batch: DUPLICATE_REFERENCE (same content) or REFERENCE_CONFLICT (different), never READY', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const first = await p.receive('first.csv', csvFile([csvRow('EB-1'), csvRow('EB-2'), csvRow('EB-3')]));
    expect(first.state).toBe('ACTIVE');
    await p.submit(); // EB-1..3 PENDING: the references are in use at the service

    const second = await p.receive(
      'second.csv',
      csvFile([
        csvRow('EB-1'), // the same payout again
        csvRow('EB-2', { payoutAmount: '999' }), // a different payout under a used reference
        csvRow('EB-4'),
      ]),
    );
    expect(second.state).toBe('ACTIVE');
    const rows = await p.rows(second.id);
    expect(rows.map((r) => [r.merchantReferenceId, r.state, r.reasonCode])).toEqual([
      ['EB-1', 'DUPLICATE', 'DUPLICATE_REFERENCE'],
      ['EB-2', 'DUPLICATE', 'REFERENCE_CONFLICT'],
      ['EB-4', 'READY', null],
    ]);
    expect(rows[0]?.reason).toContain(`line 2 of "first.csv" (batch ${first.id},`);
    expect(rows[1]?.reason).toContain(`line 3 of "first.csv" (batch ${first.id},`);

    await p.submit();
    expect(p.ledgerCount('EB-1')).toBe(1);
    expect(p.ledgerCount('EB-2')).toBe(1);
    expect(p.sandbox.ledger().find((e) => e.merchantReferenceId === 'EB-2')?.payoutAmount).toBe('100.5');
    expect(p.ledgerCount('EB-4')).toBe(1);
    // The first batch's rows are untouched.
    expect(await p.states(first.id)).toEqual(['PENDING', 'PENDING', 'PENDING']);
  });

  it('reject-file: a file reusing a held reference is rejected whole', async () => {
    const p = await startPipeline({ onInvalidRows: 'reject-file' });
    await p.receive('first.csv', csvFile([csvRow('EH-1')]));
    const second = await p.receive('second.csv', csvFile([csvRow('EH-1'), csvRow('EH-2')]));
    expect(second.state).toBe('REJECTED');
    expect(await p.states(second.id)).toEqual(['DUPLICATE', 'NOT_SUBMITTED']);
    await p.submit();
    expect(p.ledgerCount('EH-1')).toBe(1);
    expect(p.ledgerCount('EH-2')).toBe(0);
  });

  it('a reference of an earlier REJECTED batch (never sent) may be used again, and is paid once', async () => {
    const p = await startPipeline({ onInvalidRows: 'reject-file' });
    const rejected = await p.receive('bad.csv', csvFile([csvRow('RU-1'), csvRow('RU-2', { payoutAmount: '1,000.00' })]));
    expect(rejected.state).toBe('REJECTED');
    expect(await p.states(rejected.id)).toEqual(['NOT_SUBMITTED', 'INVALID']);

    const fixed = await p.receive('fixed.csv', csvFile([csvRow('RU-1'), csvRow('RU-2', { payoutAmount: '1000.00' })]));
    expect(fixed.state).toBe('ACTIVE');
    expect(await p.states(fixed.id)).toEqual(['READY', 'READY']);
    await p.submit();
    expect(await p.states(fixed.id)).toEqual(['PENDING', 'PENDING']);
    expect(p.ledgerCount('RU-1')).toBe(1);
    expect(p.ledgerCount('RU-2')).toBe(1);
  });

  it('a reference the service refused for good (REJECTED row) stays taken', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const first = await p.receive(
      'first.csv',
      csvFile([csvRow('SR-1', { payoutAmount: '0.10', payoutCurrency: 'IDR', 'beneficiary.bankCode': '014' })]),
    );
    await p.submit();
    expect(await p.states(first.id)).toEqual(['REJECTED']); // 2005: below the service's minimum
    const again = await p.receive('again.csv', csvFile([csvRow('SR-1')]));
    expect(again.state).toBe('REJECTED');
    expect(await p.states(again.id)).toEqual(['DUPLICATE']);
  });
});

describe('pipeline: references held from the read', () => {
  it('rows of a batch still being read hold their references, are never sent before it is accepted, and a file read meanwhile says so', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const reading = await p.insertReadingBatch([payoutRequest('HR-1'), payoutRequest('HR-2')]);
    expect(await p.states(reading)).toEqual(['READY', 'READY']);
    await p.submit();
    expect(p.createRequests()).toBe(0);

    const later = await p.receive('later.csv', csvFile([csvRow('HR-1'), csvRow('HR-3')]));
    expect(later.state).toBe('ACTIVE');
    expect(await p.states(later.id)).toEqual(['DUPLICATE', 'READY']);
    const [clash] = await p.rows(later.id);
    expect(clash?.reasonCode).toBe('DUPLICATE_REFERENCE');
    expect(clash?.reason).toContain(
      `held by line 2 of "${reading}.csv" (batch ${reading}, received 2026-01-05 09:00 UTC), a file being read at the same time`,
    );
    // That row may be refused while its file is accepted: the reason does not say only a rejected file leaves it unpaid.
    expect(clash?.reason).toContain(
      `this row is not paid by this file: if that row is not paid by "${reading}.csv" (its file rejected or cancelled, or the row refused, cancelled or rejected: see its ack or result file), send this row again`,
    );
    expect(clash?.reason).not.toContain('neither file pays it');

    const verdict = await acceptBatchRows(p.db, reading, 'skip-rows', p.clock.now());
    expect(verdict).toMatchObject({ accepted: true, readyCount: 2 });
    await p.db('batches').where({ id: reading }).update({ state: 'ACTIVE' });
    await p.submit();
    expect(p.createRequests()).toBe(3);
    for (const ref of ['HR-1', 'HR-2', 'HR-3']) expect(p.ledgerCount(ref)).toBe(1);
  });

  it('a row set aside because another file being read held its reference is READY once that file is rejected', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    const first = await p.insertReadingBatch([payoutRequest('SA-1'), payoutRequest('SA-9'), payoutRequest('SA-9')]);
    const second = await p.insertReadingBatch([payoutRequest('SA-1'), payoutRequest('SA-2')]);
    expect(await p.states(first)).toEqual(['READY', 'READY', 'VALIDATED']);
    expect(await p.states(second)).toEqual(['VALIDATED', 'READY']);

    // reject-file: the reference twice in the first file (a READY row and a set-aside one) rejects it whole.
    const rejected = await acceptBatchRows(p.db, first, 'reject-file', p.clock.now());
    expect(rejected.accepted).toBe(false);
    expect(await p.states(first)).toEqual(['NOT_SUBMITTED', 'INVALID', 'INVALID']);

    const accepted = await acceptBatchRows(p.db, second, 'skip-rows', p.clock.now());
    expect(accepted).toMatchObject({ accepted: true, readyCount: 2, duplicateCount: 0 });
    expect(await p.states(second)).toEqual(['READY', 'READY']);
    const due = (await p.db('payouts').where({ batch_id: second }).pluck('next_attempt_at')) as unknown[];
    expect(due.every((d) => d !== null)).toBe(true);
  });
  it('a file that cannot be read to its end lets go of the references its rows took', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows' });
    // More rows than one transaction of the reader (10,000), so some are stored before the failure.
    const rows = Array.from({ length: 10_001 }, (_, i) => csvRow(`RE-${i}`));
    const claimed = await p.claim('ctl.csv', csvFile(rows));
    // The control file is read after every row; a directory in its place cannot be read.
    const controlPath = join(p.dir, 'unreadable.ctl');
    await mkdir(controlPath);
    const failed = await p.intake.receive({ ...claimed, controlPath });
    expect(failed.state).toBe('REJECTED');
    expect(failed.rejectCode).toBe('UNREADABLE');
    expect(await p.rows(failed.id)).toEqual([]);

    const again = await p.receive('again.csv', csvFile(rows.slice(0, 3)));
    expect(again.state).toBe('ACTIVE');
    expect(await p.states(again.id)).toEqual(['READY', 'READY', 'READY']);
  });
});

describe('pipeline: the partial unique index on references', () => {
  it('refuses, at the database, a second row holding a reference already held', async () => {
    const p = await startPipeline();
    const first = await p.receive('held.csv', csvFile([csvRow('UX-1')]));
    expect(await p.states(first.id)).toEqual(['READY']);

    const insert = (state: string, line: number) =>
      p.db.raw(`INSERT INTO payouts (batch_id, line, merchant_reference_id, state, updated_at) VALUES (?, ?, ?, ?, ?)`, [
        first.id,
        line,
        'UX-1',
        state,
        p.clock.now(),
      ]);
    for (const [i, state] of ['READY', 'CREATING', 'UNKNOWN', 'PENDING', 'PAID', 'CANCELLED', 'REJECTED'].entries()) {
      await expect(insert(state, 100 + i)).rejects.toThrow(/UNIQUE constraint failed: payouts\.merchant_reference_id/);
    }
    // Rows that never hold a reference may share it.
    for (const [i, state] of ['VALIDATED', 'INVALID', 'DUPLICATE', 'NOT_SUBMITTED'].entries()) {
      await insert(state, 200 + i);
    }
    // Nor can a non-holding row be promoted to a holder behind the store's back.
    await expect(p.db.raw(`UPDATE payouts SET state = 'READY' WHERE line = 200 AND merchant_reference_id = 'UX-1'`)).rejects.toThrow(
      /UNIQUE constraint failed/,
    );
    const holders = (await p
      .db('payouts')
      .where({ merchant_reference_id: 'UX-1' })
      .whereNotIn('state', ['VALIDATED', 'INVALID', 'DUPLICATE', 'NOT_SUBMITTED'])) as unknown[];
    expect(holders).toHaveLength(1);
  });
});

describe('pipeline: duplicate files', () => {
  it('the same bytes again make a DUPLICATE batch naming the first; nothing of it is read or paid', async () => {
    const p = await startPipeline();
    const content = csvFile([csvRow('DF-1'), csvRow('DF-2')]);
    const first = await p.receive('payouts.csv', content);
    expect(first.state).toBe('ACTIVE');
    p.clock.advance(60_000);
    const again = await p.receive('payouts-copy.csv', content);
    expect(again.state).toBe('DUPLICATE');
    expect(again.duplicateOf).toBe(first.id);
    expect(again.rejectCode).toBe('DUPLICATE_FILE');
    expect(again.rejectReason).toContain(first.id);
    expect(again.rejectReason).toContain('payouts.csv');
    expect(again.ackWrittenAt).not.toBeNull();
    expect(p.effects.filter((e) => e.batchId === again.id)).toEqual([
      { kind: 'file-rejection', batchId: again.id, reason: again.rejectReason },
    ]);
    expect(await p.rows(again.id)).toEqual([]);

    // A third copy still names the first, not the duplicate.
    const third = await p.receive('payouts.csv', content);
    expect(third.duplicateOf).toBe(first.id);

    await p.submit();
    expect(p.ledgerCount('DF-1')).toBe(1);
    expect(p.ledgerCount('DF-2')).toBe(1);
    expect(p.sandbox.stats().creates).toBe(2);
  });

  it('the same bytes again: what the first batch did with each of its rows, and what to do about each', async () => {
    const p = await startPipeline({ onInvalidRows: 'skip-rows', retryFileOf: (b) => `${b.id}.retry.csv` });
    const refs = ['MX-PAID', 'MX-PEND', 'MX-WAIT', 'MX-CANC', 'MX-REJ', 'MX-DUP', 'MX-BAD'];
    await p.receive('taken.csv', csvFile([csvRow('MX-DUP')]));
    const content = csvFile(refs.map((r) => (r === 'MX-BAD' ? csvRow(r, { payoutAmount: '-1' }) : csvRow(r))));
    const first = await p.receive('mixed.csv', content);
    const state = (ref: string, s: string) =>
      p.db('payouts').where({ batch_id: first.id, merchant_reference_id: ref }).update({ state: s });
    await state('MX-PAID', 'PAID');
    await state('MX-PEND', 'PENDING');
    await state('MX-CANC', 'CANCELLED');
    await state('MX-REJ', 'REJECTED');
    await p.db('batches').where({ id: first.id }).update({ hold_code: 'INSUFFICIENT_BALANCE' });
    expect(await p.states(first.id)).toEqual(['PAID', 'PENDING', 'READY', 'CANCELLED', 'REJECTED', 'DUPLICATE', 'INVALID']);

    p.clock.advance(60_000);
    const again = await p.receive('mixed.csv', content);
    expect(again.state).toBe('DUPLICATE');
    expect(again.rejectReason).toBe(
      `duplicate file: the same content (sha256 ${first.sha256.slice(0, 12)}…) was received as batch ${first.id} ("mixed.csv", 2026-01-05T09:00:00.000Z), not finished yet: ` +
        'of its 7 rows, 1 paid, 2 being paid or to be paid (1 not sent yet, its batch is held until the balance covers it), 1 invalid (INVALID, see its ack), ' +
        '1 refused for a reference another row holds (DUPLICATE), 1 cancelled by the payout service (CANCELLED), 1 refused by the payout service (REJECTED); ' +
        'this copy is not read and pays nothing. What to do: the 1 row paid must never be sent again, under its reference or a new one: it would be paid twice; ' +
        `wait for the outcome of the 2 rows being paid (payoutd status --batch ${first.id}): one that ends CANCELLED is sent again from that batch's retry file, one that ends NOT_SUBMITTED in a new file under its reference; ` +
        'the 1 row never sent (INVALID) can be sent again under the same reference, in a new file holding it, put right as its reason says (a file with exactly these bytes is refused again), ' +
        `unless sent again since (see payoutd status --batch ${first.id} and the later batches' result files); ` +
        `for the 1 row DUPLICATE, do as the ack of batch ${first.id} says of each; ` +
        `the 1 row CANCELLED is sent again from that batch's retry file (${first.id}.retry.csv, written once that batch is finished, or its latest .retry.corrected-<n>.csv, or write it again with payoutd retry-file --batch ${first.id}), under the reference it gives it, and under no new reference of your own as well (both would be paid), ` +
        `unless sent again since (see payoutd status --batch ${first.id} and the later batches' result files); ` +
        `the 1 row REJECTED needs a new reference, with what the service refused put right (the result file of batch ${first.id} says why), ` +
        `unless sent again since (see payoutd status --batch ${first.id} and the later batches' result files)`,
    );
  });

  it('the same bytes as a file still being read: says it is being read, and that the file may come again if that one is refused', async () => {
    const p = await startPipeline();
    const content = csvFile([csvRow('BR-1'), csvRow('BR-2')]);
    // The first copy, taken by another instance, is still being read (it may yet be refused whole).
    const { storedPath, sha256, size, mtimeMs } = await p.claim('reading.csv', content);
    const file = { id: 'B-READING', fileName: 'reading.csv', storedPath, controlPath: null, sha256, size, mtimeMs, doneMarker: false };
    await insertBatch(p.db, { ...receivedBatch(file, p.clock.now()), state: 'VALIDATING' });

    p.clock.advance(60_000);
    const copy = await p.receive('reading-copy.csv', content);
    expect(copy.state).toBe('DUPLICATE');
    expect(copy.duplicateOf).toBe('B-READING');
    expect(copy.rejectReason).toBe(
      `duplicate file: a file with the same content (sha256 ${sha256.slice(0, 12)}…) is being read now, as batch B-READING ("reading.csv", received 2026-01-05T09:00:00.000Z); ` +
        'this copy is not read and pays nothing: that file pays its rows if it is accepted, as its ack will say. ' +
        'If that file is refused (its ack says REJECTED), neither pays anything: put right what its ack names and drop the file again',
    );

    // As told: that file refused, the same bytes dropped again are read anew and paid once.
    await p.db('batches').where({ id: 'B-READING' }).update({ state: 'REJECTED' });
    const again = await p.receive('reading.csv', content);
    expect(again.state).toBe('ACTIVE');
    await p.submit();
    expect([p.ledgerCount('BR-1'), p.ledgerCount('BR-2')]).toEqual([1, 1]);
  });

  it('two copies taken at once (as by two instances): the later one alone is the duplicate, and the file is paid once', async () => {
    const p = await startPipeline();
    const content = csvFile([csvRow('DT-1'), csvRow('DT-2')]);
    const copies = [await p.claim('twice.csv', content), await p.claim('twice-copy.csv', content)];
    // Both are recorded before either looks for an earlier copy.
    const [a, b] = await Promise.all(copies.map((c) => p.intake.receive(c)));
    const batches = [a, b].sort((x, y) => (x?.id ?? '').localeCompare(y?.id ?? ''));
    expect(batches.map((x) => x?.state)).toEqual(['ACTIVE', 'DUPLICATE']);
    expect(batches[1]?.duplicateOf).toBe(batches[0]?.id);
    await p.submit();
    expect([p.ledgerCount('DT-1'), p.ledgerCount('DT-2')]).toEqual([1, 1]);
  });

  // A file refused unread (NOT_CSV by extension, EMPTY, UNREADABLE) paid nothing: the same bytes
  // dropped again under a .csv name are read anew, not refused as a duplicate.
  it('a file refused unread (wrong extension) can be dropped again under a .csv name', async () => {
    const p = await startPipeline();
    const content = csvFile([csvRow('NX-1')]);
    const refused = await p.receive('payouts.tsv', content);
    expect(refused.state).toBe('REJECTED');
    expect(refused.rejectCode).toBe('NOT_CSV');
    const renamed = await p.receive('payouts.csv', content);
    expect(renamed.state).toBe('ACTIVE');
  });
});

/**
 * E2E 3: a batch file dropped again — the same bytes under another name, the
 * same bytes under the same name after the first was processed, the same
 * rows with other bytes — pays nothing more: each later batch is refused,
 * its ack names the first batch, and the ledger keeps one payout per row.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { ledgerByReference, startE2e, type BatchStatus, type E2e } from './harness.js';

async function expectDuplicateOf(e2e: E2e, batch: BatchStatus, first: BatchStatus): Promise<void> {
  expect(batch.state).toBe('DUPLICATE');
  expect(batch.duplicateOf).toBe(first.id);
  expect(batch.rowCount).toBe(0);
  const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
  expect(ack.rows).toHaveLength(1);
  expect(ack.rows[0]).toMatchObject({ batch_id: batch.id, file: batch.fileName, line: '', merchant_reference_id: '', verdict: 'REJECTED' });
  expect(ack.rows[0]?.['reason']).toContain(first.id);
}

describe('e2e: a file dropped again', () => {
  it('pays nothing more, and each repeat names the first batch', async () => {
    const e2e = await startE2e();
    const rows = makeRows('E2E-DUP', 6, { cancelEvery: 6 });
    const csv = toCsv(rows);
    await e2e.startDaemon();

    await e2e.drop('payouts.csv', csv);
    const first = await e2e.waitForBatch('payouts.csv', ['COMPLETE', 'REJECTED', 'DUPLICATE'], 30_000);
    expect(first.state).toBe('COMPLETE');
    const firstResultPath = e2e.outboxPath(first, 'result');
    const firstResult = await readFile(firstResultPath);
    expect(e2e.ledger()).toHaveLength(6);

    // All at once, after the first was processed (its file has left the inbox):
    // the same bytes under another name, the same bytes under the same name,
    // and the same rows with other bytes (CRLF line ends: not a duplicate file, but every reference is taken).
    await e2e.drop('payouts-copy.csv', csv);
    await e2e.drop('payouts.csv', csv);
    await e2e.drop('payouts-crlf.csv', csv.replaceAll('\n', '\r\n'));

    const copy = await e2e.waitForBatch('payouts-copy.csv', ['DUPLICATE', 'REJECTED', 'ACTIVE', 'COMPLETE']);
    await expectDuplicateOf(e2e, copy, first);
    const again = await e2e.waitForBatch('payouts.csv', ['DUPLICATE', 'REJECTED', 'ACTIVE', 'COMPLETE'], 15_000, [first.id]);
    await expectDuplicateOf(e2e, again, first);

    const crlf = await e2e.waitForBatch('payouts-crlf.csv', ['DUPLICATE', 'REJECTED', 'ACTIVE', 'COMPLETE']);
    expect(crlf.state).toBe('REJECTED');
    const crlfAck = await e2e.waitForOutbox(crlf, 'ack', 10_000);
    const verdicts = crlfAck.rows.filter((r) => r['line'] !== '');
    expect(verdicts.map((r) => r['merchant_reference_id'])).toEqual(rows.map((r) => r.merchantReferenceId));
    for (const v of verdicts) {
      expect(v['verdict']).toBe('REJECTED');
      expect(v['reason']).toContain('DUPLICATE_REFERENCE');
      expect(v['reason']).toContain(`line ${v['line']} of "payouts.csv" (batch ${first.id}`);
    }

    // Still exactly one payout per reference; the repeats never even reached the service.
    const ledger = e2e.ledger();
    expect(ledger).toHaveLength(6);
    const perRef = ledgerByReference(ledger);
    for (const r of rows) expect(perRef.get(r.merchantReferenceId)?.length, r.merchantReferenceId).toBe(1);
    expect(e2e.sandbox.stats().creates).toBe(6);
    expect(e2e.sandbox.stats().duplicateCreates).toBe(0);
    // The first batch's files are untouched by the repeats.
    expect(await readFile(firstResultPath)).toEqual(firstResult);
    const all = await e2e.batches();
    expect(all.map((b) => b.state).sort()).toEqual(['COMPLETE', 'DUPLICATE', 'DUPLICATE', 'REJECTED']);
  });
});

describe('e2e: a reference twice in one file', () => {
  it('payoutd validate says of each row what the ack says, naming the reference column as written', async () => {
    // validate said "lines 2, 4: DUPLICATE_IN_FILE: ... appears on each of these lines", naming no column.
    const e2e = await startE2e({ config: { batch: { format: { columnAliases: { Reference: 'merchantReferenceId' } } } } });
    const rows = makeRows('E2E-TWICE', 3);
    const again = { ...(rows[2] as (typeof rows)[number]), merchantReferenceId: rows[0]?.merchantReferenceId as string };
    const csv = toCsv([...rows.slice(0, 2), again]).replace(/^merchantReferenceId,/, 'Reference,');
    const path = join(e2e.dir, 'twice.csv');
    await writeFile(path, csv);
    const validate = await e2e.cli(['validate', path]);
    expect(validate.code).toBe(1);
    const said = validate.stdout.split('\n').filter((l) => l.includes('DUPLICATE_IN_FILE'));
    expect(said).toEqual([
      'twice.csv, line 2, column A "Reference": DUPLICATE_IN_FILE: the reference E2E-TWICE-0001 is also on line 4 of this file; give each payout its own reference, or delete the row that repeats another',
      'twice.csv, line 4, column A "Reference": DUPLICATE_IN_FILE: the reference E2E-TWICE-0001 is also on line 2 of this file; give each payout its own reference, or delete the row that repeats another',
    ]);

    await e2e.startDaemon();
    await e2e.drop('twice.csv', csv);
    const batch = await e2e.waitForBatch('twice.csv', ['REJECTED', 'ACTIVE', 'COMPLETE']);
    const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
    // The ack's reason `CODE [place]: message`, as validate prints a problem.
    const acked = ack.rows
      .filter((r) => (r['reason'] ?? '').startsWith('DUPLICATE_IN_FILE'))
      .map((r) => `twice.csv, line ${r['line']}, ${(r['reason'] as string).replace(/^(\w+) \[(.*?)\]: /, '$2: $1: ')}`);
    expect(acked).toEqual(said);
  });
});

describe('e2e: the same bytes again after a batch that paid nothing', () => {
  it('says what that batch did (cancelled before anything was sent) and that its rows may be sent again under their references', async () => {
    // A balance too small: the batch is held, and an operator cancels it before any row is sent.
    const e2e = await startE2e({ balances: { USDT: '1', USDC: '1' } });
    await e2e.startDaemon();
    const rows = makeRows('E2E-NONE', 2);
    const csv = toCsv(rows);
    await e2e.drop('c.csv', csv);
    const held = await e2e.waitForBatches((bs) => bs.find((b) => b.fileName === 'c.csv' && b.holdCode === 'INSUFFICIENT_BALANCE'), 'held');
    expect((await e2e.cli(['cancel', '--batch', held.id, '--reason', 'wrong bank file, resend'])).code).toBe(0);
    const first = await e2e.waitForBatch('c.csv', ['COMPLETE'], 30_000);

    await e2e.drop('c.csv', csv);
    const again = await e2e.waitForBatch('c.csv', ['DUPLICATE', 'REJECTED', 'ACTIVE', 'COMPLETE'], 15_000, [first.id]);
    expect(again.state).toBe('DUPLICATE');
    const ack = await e2e.waitForOutbox(again, 'ack', 10_000);
    expect(ack.rows[0]?.['reason']).toBe(
      `duplicate file: the same content (sha256 ${first.sha256.slice(0, 12)}…) was received as batch ${first.id} ("c.csv", ${first.receivedAt}), finished: ` +
        'of its 2 rows, 2 not sent (NOT_SUBMITTED: CANCELLED_BY_OPERATOR: cancelled by an operator: wrong bank file, resend); ' +
        'this copy is not read and pays nothing. What to do: the 2 rows never sent (NOT_SUBMITTED) can be sent again under the same ' +
        'references, in a new file holding them, put right as their reasons say (a file with exactly these bytes is refused again), ' +
        `unless sent again since (see payoutd status --batch ${first.id} and the later batches' result files)`,
    );

    // As told: the rows put right, under the same references, in a new file; each is paid once.
    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDT', '1000000');
    e2e.sandbox.setBalance('E2E-MERCHANT', 'USDC', '1000000');
    await e2e.drop('c-fixed.csv', toCsv(rows.map((r) => ({ ...r, accountName: `${r.accountName} Jr` }))));
    const fixed = await e2e.waitForBatch('c-fixed.csv', ['COMPLETE', 'REJECTED'], 30_000);
    expect(fixed.counts).toEqual({ PAID: 2 });
    const perRef = ledgerByReference(e2e.ledger());
    for (const r of rows) expect(perRef.get(r.merchantReferenceId)?.length, r.merchantReferenceId).toBe(1);
  });
});

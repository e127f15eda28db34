/**
 * E2E 2: a file with invalid rows (samples/payouts-with-errors.csv) is
 * rejected as a whole by the real `payoutd run`: the ack says why, row by
 * row, and nothing reaches the payout service. The expected errors are what
 * `payoutd validate` reports for the same file. And a file that ends inside
 * its last row (an upload cut short) is refused whole, the ack saying so.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { ROOT, startE2e, type E2e, type OutboxCsv } from './harness.js';

const SAMPLE = join(ROOT, 'samples', 'payouts-with-errors.csv');

interface ValidateError {
  line: string;
  column: string | null;
  code: string;
}

/** Parses `payoutd validate` lines: `<file>, line <n>[, column <letter>[ "<header>"]]: <CODE>: <message>` (a column past the header has no header). */
async function validateErrors(e2e: E2e): Promise<ValidateError[]> {
  const r = await e2e.cli(['validate', SAMPLE]);
  expect(r.code).toBe(1);
  const errors: ValidateError[] = [];
  for (const text of r.stdout.split('\n')) {
    const m = /^payouts-with-errors\.csv, line (\d+)(?:, (column [A-Z]+(?: "[^"]*")?))?: ([A-Z][A-Z0-9_]+): /.exec(text);
    if (m) errors.push({ line: m[1] as string, column: m[2] ?? null, code: m[3] as string });
  }
  return errors;
}

async function dropAndWaitRejected(e2e: E2e): Promise<{ ack: OutboxCsv; result: OutboxCsv; batchId: string }> {
  await e2e.startDaemon();
  await e2e.drop('payouts-with-errors.csv', await readFile(SAMPLE));
  const batch = await e2e.waitForBatch('payouts-with-errors.csv', ['REJECTED', 'ACTIVE', 'COMPLETE']);
  expect(batch.state).toBe('REJECTED');
  expect(batch.rejectCode).toBe('INVALID_ROWS');
  const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
  const result = await e2e.waitForOutbox(batch, 'result', 10_000);
  return { ack, result, batchId: batch.id };
}

describe('e2e: a file with errors', () => {
  it('is rejected as a whole: every faulty row is named in the ack, and nothing is paid', async () => {
    const e2e = await startE2e();
    const expected = await validateErrors(e2e);
    // The fixture's documented error list (docs/csv-format.md): 28 rows, 36 errors.
    expect(expected).toHaveLength(36);
    const faultyLines = [...new Set(expected.map((e) => e.line))];
    expect(faultyLines).toHaveLength(28);

    const { ack, result, batchId } = await dropAndWaitRejected(e2e);
    expect(ack.bom).toBe(true);
    const [fileRow, ...rowVerdicts] = ack.rows;
    // The file-level verdict comes first: no line, no reference, REJECTED, and why.
    expect(fileRow).toMatchObject({
      batch_id: batchId,
      file: 'payouts-with-errors.csv',
      line: '',
      merchant_reference_id: '',
      verdict: 'REJECTED',
    });
    expect(fileRow?.['reason']).toMatch(/28 invalid row/);
    // Then one REJECTED verdict per faulty line, each naming (at least) the first error's code and field.
    expect(rowVerdicts.map((r) => r['line'])).toEqual(faultyLines);
    for (const r of rowVerdicts) {
      const first = expected.find((e) => e.line === r['line']) as ValidateError;
      expect(r['verdict'], `line ${r['line']}`).toBe('REJECTED');
      expect(r['reason'], `line ${r['line']}`).toContain(first.column ? `${first.code} [${first.column}]: ` : `${first.code}: `);
    }
    // What validate totals is what the ack's totals lines give, refused amounts as rejected money.
    const validated = (await e2e.cli(['validate', SAMPLE])).stdout.split('\n');
    const totalsAt = validated.findIndex((l) => l.startsWith('totals as the ack would give them'));
    expect(
      validated
        .slice(totalsAt + 1)
        .filter((l) => l.startsWith('  '))
        .map((l) => l.trim()),
    ).toEqual(ack.totals.map((t) => (t['reason'] ?? '').slice(0, (t['reason'] ?? '').indexOf('. Batch REJECTED'))));
    // The result file: every row REJECTED, no payout id.
    expect(result.rows).toHaveLength(28);
    expect(result.rows.every((r) => r['status'] === 'REJECTED' && r['payout_id'] === '')).toBe(true);
    // Nothing reached the service.
    expect(e2e.ledger()).toEqual([]);
    expect(e2e.sandbox.stats().creates).toBe(0);
    expect(e2e.balances()).toEqual(e2e.openingBalances);
  });

  // The ack names the code (and column) of every error of a row, and rejected rows keep the CSV's
  // currency and amount as written in the result file.
  it('the ack names the code of every error, and rejected result rows keep the CSV currency and amount', async () => {
    const e2e = await startE2e();
    const expected = await validateErrors(e2e);
    const { ack, result } = await dropAndWaitRejected(e2e);
    const reasonOf = new Map(ack.rows.filter((r) => r['line'] !== '').map((r) => [r['line'] as string, r['reason'] as string]));
    const missing = expected.filter((e) => !(reasonOf.get(e.line) ?? '').includes(e.code)).map((e) => `line ${e.line}: ${e.code}`);
    expect.soft(missing, 'error codes absent from the ack').toEqual([]);

    const sampleLines = (await readFile(SAMPLE, 'utf8')).split('\n');
    const line2 = result.rows.find((r) => r['line'] === '2');
    expect.soft(sampleLines[1]?.split(',').slice(2, 4)).toEqual(['PHP', '100.00']);
    expect
      .soft([line2?.['payout_currency'], line2?.['payout_amount']], 'rejected row keeps currency and amount')
      .toEqual(['PHP', '100.00']);
  });
});

describe('e2e: an upload cut inside its last row', () => {
  it('is refused whole, and the ack says the upload looks incomplete', async () => {
    const e2e = await startE2e();
    await e2e.startDaemon();
    const lines = toCsv(makeRows('E2E-CUT', 5)).trimEnd().split(/\r?\n/);
    // The last row cut after its fourth field (its line break kept: the upload went on after a pause).
    lines[5] = (lines[5] as string).split(',').slice(0, 4).join(',');
    await e2e.drop('cut.csv', `${lines.join('\n')}\n`);
    const batch = await e2e.waitForBatch('cut.csv', ['REJECTED', 'ACTIVE', 'COMPLETE']);
    expect([batch.state, batch.rejectCode]).toEqual(['REJECTED', 'INVALID_FILE']);
    const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
    expect(ack.rows).toHaveLength(1);
    expect(ack.rows[0]?.['verdict']).toBe('REJECTED');
    expect(ack.rows[0]?.['reason']).toMatch(/^FILE_INCOMPLETE \[line 6\]: the upload looks incomplete \(the file ends inside row 5\): /);
    expect(e2e.ledger()).toEqual([]);
  });
});

/**
 * A header damaged in reading ("\ufffd" in it) is refused as any refused header is, however long it is:
 * `payoutd validate` lists the header errors, and the daemon rejects the batch and answers it.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

/** A good file whose payoutAmount header is letters and "\ufffd" in turn, `pairs` times. */
function damagedHeaderCsv(pairs: number): string {
  const [head, ...rest] = toCsv(makeRows('E2E-DMG', 1)).split('\n');
  return [(head as string).replace('payoutAmount', 'a\ufffd'.repeat(pairs)), ...rest].join('\n');
}

describe('e2e: a long header holding "\ufffd" many times', () => {
  it('is listed by payoutd validate as a damaged header, with the column it leaves missing', async () => {
    const e2e = await startE2e();
    const path = join(e2e.dir, 'damaged-header.csv');
    await writeFile(path, damagedHeaderCsv(8_000));
    const r = await e2e.cli(['validate', path]);
    expect(r.code).toBe(1);
    const lines = r.stdout.split('\n').map((l) => /^damaged-header\.csv, line 1(?:, column [A-Z]+ "[^"]*")?: ([A-Z_]+): /.exec(l)?.[1]);
    expect(lines.filter((code) => code !== undefined)).toEqual(['HEADER_UNKNOWN', 'HEADER_MISSING']);
    expect(r.stdout).toContain('the header is damaged, not misspelt');
    expect(r.stderr).not.toMatch(/regular expression|stack/i);
  });

  it('is rejected by the daemon, and the ack says why', async () => {
    const e2e = await startE2e({ config: { batch: { format: { maxRecordBytes: 1024 * 1024 } } } });
    await e2e.startDaemon();
    await e2e.drop('damaged-header.csv', damagedHeaderCsv(40_000));
    const batch = await e2e.waitForBatch('damaged-header.csv', ['REJECTED', 'ACTIVE', 'COMPLETE']);
    expect([batch.state, batch.rejectCode]).toEqual(['REJECTED', 'INVALID_FILE']);
    const ack = await e2e.waitForOutbox(batch, 'ack', 10_000);
    expect(ack.rows[0]?.['reason']).toMatch(/^HEADER_UNKNOWN \[line 1, column [A-Z]+ "a\ufffda\ufffd/);
    expect(e2e.ledger()).toEqual([]);
  });
});

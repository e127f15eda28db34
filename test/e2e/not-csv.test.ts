/**
 * E2E 7: files that are not payout batches — a .pdf, binary junk with NUL
 * bytes, an empty file, a header with no rows — are refused one by one: each
 * is moved to <stateDir>/rejected/ with a reason file next to it, its ack
 * says why, and the daemon keeps running and still pays a valid file.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, makeRows, toCsv } from './batch-files.js';
import { startE2e } from './harness.js';

const BAD_FILES: { name: string; content: Buffer; code: string; reason: RegExp }[] = [
  {
    name: 'invoice.pdf',
    content: Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1'),
    code: 'NOT_CSV',
    reason: /not a batch file \(extension \.pdf\); payout batches are \.csv, \.csv\.gz or \.xlsx files/,
  },
  {
    name: 'junk.csv',
    content: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0x00, 0x00, 0x00, 0x08, 0x00, 0xff, 0xfe, 0x00, 0x41, 0x0a, 0x00]),
    code: 'NOT_CSV',
    reason: /binary data \(NUL bytes\)/,
  },
  { name: 'empty.csv', content: Buffer.alloc(0), code: 'EMPTY', reason: /the file is empty/ },
  { name: 'header-only.csv', content: Buffer.from(`${CSV_HEADER.join(',')}\n`), code: 'NO_ROWS', reason: /header but no payout rows/ },
];

describe('e2e: files that are not payout batches', () => {
  it('are moved aside with a reason, acknowledged as refused, and the daemon goes on paying', async () => {
    // The junk and the empty file do not end with a line break: they wait unterminatedStableForMs first.
    const e2e = await startE2e({ config: { inbox: { unterminatedStableForMs: 1500 } } });
    const daemon = await e2e.startDaemon();
    for (const f of BAD_FILES) await e2e.drop(f.name, f.content);

    const refused = await e2e.waitForBatches(
      (bs) => (BAD_FILES.every((f) => bs.some((b) => b.fileName === f.name && b.state === 'REJECTED')) ? bs : undefined),
      'every bad file to be refused',
    );
    const rejectedDir = join(e2e.stateDir, 'rejected');
    const parked = await readdir(rejectedDir);
    for (const f of BAD_FILES) {
      const batch = refused.find((b) => b.fileName === f.name);
      expect(batch?.rejectCode, f.name).toBe(f.code);
      expect(batch?.rejectReason, f.name).toMatch(f.reason);
      if (!batch) continue;

      // The ack: one file-level REJECTED row saying why.
      const ack = await e2e.waitForOutbox(batch, 'ack', 5_000);
      expect(ack.rows, f.name).toHaveLength(1);
      expect(ack.rows[0], f.name).toMatchObject({
        batch_id: batch.id,
        file: f.name,
        line: '',
        merchant_reference_id: '',
        verdict: 'REJECTED',
      });
      expect(ack.rows[0]?.['reason'], f.name).toMatch(f.reason);

      // Parked under rejected/ with its bytes unchanged, and a reason file beside it that names it.
      const stored = parked.filter((n) => n.endsWith(`__${f.name}`));
      expect(stored, f.name).toHaveLength(1);
      const storedPath = join(rejectedDir, stored[0] as string);
      expect(await readFile(storedPath), f.name).toEqual(f.content);
      const reasonText = await readFile(`${storedPath}.reason.txt`, 'utf8');
      expect(reasonText.split('\n')[0], f.name).toBe(ack.rows[0]?.['reason']);
      expect(reasonText, f.name).toContain(`file: ${JSON.stringify(f.name)}`);
    }
    expect(await readdir(e2e.inbox)).toEqual([]);
    expect(e2e.ledger()).toEqual([]);

    // Still running, and still paying.
    expect(daemon.exited).toBeNull();
    await e2e.drop('good.csv', toCsv(makeRows('E2E-AFTER-JUNK', 4)));
    const good = await e2e.waitForBatch('good.csv', ['COMPLETE'], 30_000);
    expect(good.counts).toEqual({ PAID: 4 });
    expect(e2e.ledger()).toHaveLength(4);
    expect(daemon.exited).toBeNull();
  });
});

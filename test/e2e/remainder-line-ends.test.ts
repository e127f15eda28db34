/**
 * The remainder of a taken file whose upload went on keeps the sender's bytes, line ends and all, and the
 * intake takes LF, CRLF and a lone CR mixed freely. Its .xlsx twin must hold the same rows, read the way the
 * intake reads them, and a row wider than the header whole: the real `payoutd run` process, the twin dropped
 * back into the inbox, and what the ledger then holds.
 */
import { appendFile, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import ExcelJS from 'exceljs';
import { describe, expect, it } from 'vitest';
import { CSV_HEADER, makeRows, rowCells, type BatchRow } from './batch-files.js';
import { startE2e, waitFor, type E2e } from './harness.js';

const line = (cells: readonly string[]): string => cells.map((c) => (/[",\r\n]/.test(c) ? `"${c.replaceAll('"', '""')}"` : c)).join(',');

/** `prefix`-0001 (held pending by the sandbox: its account ends in 9999, so its batch stays ACTIVE) and four more. */
function rowsOf(prefix: string): BatchRow[] {
  const rows = makeRows(prefix, 5);
  rows[0] = { ...(rows[0] as BatchRow), accountNumber: '0012345679999' };
  return rows;
}

/** Drops `name` (the header, then the first two rows), waits for its batch, then appends `later` to the taken file. */
async function dropThenAppend(e2e: E2e, name: string, head: string, later: string): Promise<string> {
  await e2e.drop(name, head);
  const batch = await e2e.waitForBatch(name, ['ACTIVE'], 60_000);
  const claimed = join(e2e.stateDir, 'claimed');
  const stored = (await readdir(claimed)).find((n) => n.endsWith(`__${name}`));
  await appendFile(join(claimed, stored as string), later);
  const twin = `${batch.id}_${name}.remainder.xlsx`;
  await waitFor(async () => (await e2e.outboxNames()).includes(twin), twin, 30_000);
  return join(e2e.outbox, twin);
}

/** The twin's data rows, each cell's value as text (an empty cell ''), trailing empty cells left out. */
async function twinRows(path: string): Promise<string[][]> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const ws = wb.worksheets[0] as ExcelJS.Worksheet;
  const rows: string[][] = [];
  ws.eachRow((row, n) => {
    if (n === 1) return;
    rows.push((row.values as unknown[]).slice(1).map((v) => (v === undefined || v === null ? '' : String(v))));
  });
  return rows;
}

describe('the .xlsx twin of a remainder with mixed line ends', () => {
  it('a CRLF header and LF rows: every later row is in the twin, and dropped back each is paid once', async () => {
    const e2e = await startE2e({ config: { outbox: { xlsx: true } } });
    await e2e.startDaemon();
    const rows = rowsOf('W');
    const head = `${CSV_HEADER.join(',')}\r\n${rows
      .slice(0, 2)
      .map((r) => `${line(rowCells(r))}\n`)
      .join('')}`;
    const later = rows.slice(2);
    const twin = await dropThenAppend(e2e, 'mix.csv', head, later.map((r) => `${line(rowCells(r))}\n`).join(''));

    expect(await twinRows(twin)).toEqual(later.map(rowCells));

    await e2e.drop('mix-remainder.xlsx', await readFile(twin));
    const back = await e2e.waitForBatch('mix-remainder.xlsx', ['COMPLETE', 'REJECTED'], 60_000);
    expect(back.state).toBe('COMPLETE');
    const ack = await e2e.waitForOutbox(back, 'ack');
    expect(ack.rows.map((r) => [r['merchant_reference_id'], r['verdict']])).toEqual(later.map((r) => [r.merchantReferenceId, 'ACCEPTED']));
    const paid = e2e.ledger().filter((p) => p.merchantReferenceId.startsWith('W-'));
    expect(paid.map((p) => p.merchantReferenceId).sort()).toEqual(rows.map((r) => r.merchantReferenceId));
  }, 240_000);

  it('an LF header and CRLF rows, one wider than the header: clean last cells, and the wide row whole and refused', async () => {
    const e2e = await startE2e({ config: { outbox: { xlsx: true } } });
    await e2e.startDaemon();
    const rows = rowsOf('V');
    const head = `${CSV_HEADER.join(',')}\n${rows
      .slice(0, 2)
      .map((r) => `${line(rowCells(r))}\r\n`)
      .join('')}`;
    const later = rows.slice(2).map(rowCells);
    // An unquoted delimiter inside a value: one cell more than the header.
    later[2] = [...(later[2] as string[]), 'EXTRA'];
    const twin = await dropThenAppend(e2e, 'crlf.csv', head, later.map((cells) => `${line(cells)}\r\n`).join(''));

    expect(await twinRows(twin)).toEqual(later);

    await e2e.drop('crlf-remainder.xlsx', await readFile(twin));
    const back = await e2e.waitForBatch('crlf-remainder.xlsx', ['COMPLETE', 'REJECTED'], 60_000);
    const ack = await e2e.waitForOutbox(back, 'ack');
    const wide = ack.rows.find((r) => r['merchant_reference_id'] === later[2]?.[0]);
    expect(wide?.['verdict']).toBe('REJECTED');
    expect(wide?.['reason']).toContain('COLUMN_COUNT_MISMATCH');
    expect(wide?.['reason']).toContain('column M holds a value but has no header');
    // Nothing of the wide row was paid; the file is refused whole, as the remainder CSV would be.
    expect(back.state).toBe('REJECTED');
    expect(e2e.ledger().map((p) => p.merchantReferenceId)).not.toContain(later[2]?.[0]);
  }, 240_000);
});

/**
 * `payoutd demo` pays the samples, the .xlsx ones too: the real command,
 * its own temporary folders and embedded sandbox, its printed table read
 * back. The valid workbook is paid like the valid CSV (its one cancel
 * trigger cancelled), the workbook with errors refused whole; the status
 * files it leaves say the batches ended.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BIN, childEnv, ROOT } from './harness.js';

const run = promisify(execFile);

/** The demo's table: FILE, BATCH, STATE, ROWS, PAID, CANCELLED, NOT PAID, by file. */
function tableOf(stdout: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of stdout.split('\n')) {
    const cells = line.trim().split(/\s+/);
    if (cells.length === 7 && /^payouts-/.test(cells[0] as string)) out.set(cells[0] as string, cells.slice(2));
  }
  return out;
}

describe('e2e: payoutd demo', () => {
  it('pays the .xlsx samples as it pays the CSV ones', async () => {
    const { stdout } = await run(process.execPath, [BIN, 'demo', '--timeout', '150'], {
      cwd: ROOT,
      env: childEnv(),
      timeout: 180_000,
    });
    const table = tableOf(stdout);
    // STATE, ROWS, PAID, CANCELLED, NOT PAID
    expect(table.get('payouts-valid.csv')).toEqual(['COMPLETE', '12', '11', '1', '0']);
    expect(table.get('payouts-valid.xlsx')).toEqual(['COMPLETE', '12', '11', '1', '0']);
    expect(table.get('payouts-with-errors.xlsx')).toEqual(['REJECTED', '6', '0', '0', '6']);
    expect(table.get('payouts-with-errors.csv')?.[0]).toBe('REJECTED');
    expect(stdout).toMatch(/payouts-valid\.xlsx\.result\.csv/);
    const root = /payoutd demo in (\S+)/.exec(stdout)?.[1];
    if (!root) throw new Error('the demo names no folder');
    // The status files finance reads say what the table says: the batch's end, not a moment before it.
    const outbox = join(root, 'outbox');
    // The files it lists are every file of every batch, the last batch's too: none is written after the list.
    const listed = stdout
      .split('\n')
      .filter((l) => l.startsWith(`  ${outbox}/`))
      .map((l) => l.trim().slice(outbox.length + 1));
    expect(listed).toEqual((await readdir(outbox)).sort());
    for (const sample of table.keys()) {
      for (const kind of ['ack', 'result', 'summary', 'status'])
        for (const ext of ['csv', 'xlsx'])
          expect(
            listed.some((f) => f.endsWith(`_${sample}.${kind}.${ext}`)),
            `${sample} ${kind}.${ext}`,
          ).toBe(true);
    }
    const status = (await readdir(outbox)).find((f) => f.endsWith('_payouts-valid.csv.status.csv'));
    const text = await readFile(join(outbox, status ?? 'missing'), 'utf8');
    expect(text).toMatch(/^state,,,COMPLETE$/m);
    expect(text).toMatch(/^percent done,,,100(\.0)?$/m);
    await rm(root, { recursive: true, force: true });
  }, 200_000);
});

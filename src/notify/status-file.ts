/**
 * The status file of a batch in the outbox, `<batch>.status.csv` (and
 * `.status.xlsx`): for finance watching the SFTP folder between the ack and
 * the result, what the batch is doing — its state and any hold with its
 * reason, rows and amounts by status, percent done, rate, estimated end and
 * when this was written; once finished, the latest correction of its result
 * file. Rewritten whole, atomically, on each event.
 */
import { join } from 'node:path';
import { ROW_OUTCOME_STATUSES, csvChunks, writeFileAtomic, writeXlsxFile, xlsxColumns } from '../report/index.js';
import { shownStateOf } from '../domain/batch-events.js';
import type { BatchSnapshot } from './payload.js';
import { outboxFileName, resultFileName } from '../report/index.js';

export const STATUS_COLUMNS = ['item', 'status', 'currency', 'value'] as const;

const iso = (ms: number | null): string => (ms === null ? '' : new Date(ms).toISOString());

/**
 * The file's records: the batch first, then progress, then the corrections of its result file (when any was
 * written: how many, and the latest file, `outboxName`'s), then rows and amounts per status in the result file's order.
 */
export function statusRecords(s: BatchSnapshot, outboxName: string): string[][] {
  const b = s.batch;
  const out: string[][] = [
    ['batch', '', '', b.id],
    ['file', '', '', b.fileName],
    ['state', '', '', shownStateOf(b)],
    ['hold', '', '', b.holdCode ?? ''],
    ['hold reason', '', '', b.holdReason ?? ''],
    ['rows', '', '', String(s.rows)],
    ['rows final', '', '', String(s.final)],
    ['percent done', '', '', s.percent === null ? '' : s.percent.toFixed(1)],
    ['rows per minute', '', '', s.perMinute === null ? '' : String(s.perMinute)],
    ['estimated end', '', '', iso(s.etaAt)],
    ['last update', '', '', iso(s.at)],
  ];
  const corrections = b.resultCorrectionsWritten ?? 0;
  if (corrections > 0) {
    out.push(['result corrections', '', '', String(corrections)], ['latest result', '', '', resultFileName(outboxName, corrections)]);
  }
  for (const status of ROW_OUTCOME_STATUSES) {
    const n = s.counts[status];
    if (n === undefined) continue;
    out.push(['rows by status', status, '', String(n)]);
    for (const [currency, amount] of Object.entries(s.amounts[status] ?? {})) out.push(['amount by status', status, currency, amount]);
  }
  return out;
}

/** Writes the status file(s) of the snapshot's batch; returns the paths written. */
export async function writeStatusFiles(
  dir: string,
  outboxName: string,
  s: BatchSnapshot,
  o: { bom: boolean; xlsx: boolean },
): Promise<string[]> {
  const csvPath = join(dir, outboxFileName(outboxName, 'status'));
  const records = statusRecords(s, outboxName);
  await writeFileAtomic(csvPath, csvChunks(STATUS_COLUMNS, records, { bom: o.bom }));
  if (!o.xlsx) return [csvPath];
  const xlsxPath = join(dir, `${outboxName}.status.xlsx`);
  await writeXlsxFile(xlsxPath, [{ name: 'status', columns: xlsxColumns(STATUS_COLUMNS), records }]);
  return [csvPath, xlsxPath];
}

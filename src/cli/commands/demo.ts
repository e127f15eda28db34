/**
 * `payoutd demo`: the whole product in one command. The daemon against the embedded sandbox in temporary
 * folders, the sample files dropped in, and what happened printed once every batch has its files.
 */
import { copyFileSync, mkdtempSync, readdirSync, createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../config/index.js';
import { systemClock } from '../../domain/clock.js';
import { PayoutdError } from '../../domain/errors.js';
import { FINAL_BATCH_STATES } from '../../domain/lifecycle.js';
import { startDaemon } from '../../daemon/runtime.js';
import { outboxName } from '../../daemon/outbox.js';
import { batchStateCounts, countEventsByDelivery, listBatchesMissingFiles, listRecentBatches, type Database } from '../../store/index.js';
import { createLogger } from '../../log/index.js';
import { print, table } from '../output.js';

const SAMPLES = [
  'payouts-valid.csv',
  'payouts-with-errors.csv',
  'payouts-semicolon-bom-crlf.csv',
  // The same kinds of batch as workbooks a clerk saves from Excel (samples/xlsx-samples.mjs).
  'payouts-valid.xlsx',
  'payouts-with-errors.xlsx',
];

export function samplesDir(): string {
  // dist/cli/commands/demo.js -> <package>/samples
  return fileURLToPath(new URL('../../../samples/', import.meta.url));
}

/** Whether `files` dropped files are batches in a final state with every outbox file written, theirs and the status files. */
export async function demoDone(db: Database, files: number): Promise<boolean> {
  const batches = await listRecentBatches(db, 100);
  const done = batches.filter((b) => FINAL_BATCH_STATES.includes(b.state));
  // The status files too: they are written by the notification loop, from the batches' events.
  const owed = (await countEventsByDelivery(db)).PENDING ?? 0;
  if (batches.length < files || done.length !== batches.length || owed > 0) return false;
  // A batch refused for its rows is REJECTED before its result files are written.
  return (await listBatchesMissingFiles(db)).length === 0;
}

export async function demo(timeoutMs: number): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'payoutd-demo-'));
  const config = loadConfig(
    { env: {}, cwd: root },
    {
      paths: { inbox: 'inbox', outbox: 'outbox', stateDir: 'state' },
      sandbox: { settlementMinDelayMs: 300, settlementMaxDelayMs: 1500 },
      inbox: { stableForMs: 300, rescanIntervalMs: 1000 },
      poll: { tickMs: 200, firstPollDelayMs: 500, minIntervalMs: 500, maxIntervalMs: 2000 },
      outbox: { xlsx: true },
    },
  );
  const logFile = join(root, 'payoutd.log');
  const logger = createLogger('info', createWriteStream(logFile));
  print(`payoutd demo in ${root} (embedded sandbox: no real money moves)`);
  const running = await startDaemon(config, systemClock, logger);
  try {
    for (const name of SAMPLES) {
      copyFileSync(join(samplesDir(), name), join(config.paths.inbox, name));
      print(`  dropped ${name}`);
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await demoDone(running.db, SAMPLES.length)) break;
      if (Date.now() > deadline)
        throw new PayoutdError('DEMO_TIMEOUT', `the demo did not finish within ${timeoutMs / 1000}s; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const batches = (await listRecentBatches(running.db, 100)).reverse();
    const rows: string[][] = [];
    for (const b of batches) {
      const c = await batchStateCounts(running.db, b);
      rows.push([
        b.fileName,
        b.id,
        b.state,
        String(b.rowCount),
        String(c.PAID ?? 0),
        String(c.CANCELLED ?? 0),
        String((c.INVALID ?? 0) + (c.REJECTED ?? 0) + (c.DUPLICATE ?? 0) + (c.NOT_SUBMITTED ?? 0)),
      ]);
    }
    print('');
    print(table(['FILE', 'BATCH', 'STATE', 'ROWS', 'PAID', 'CANCELLED', 'NOT PAID'], rows));
    print('\nfiles for finance (outbox):');
    for (const f of readdirSync(config.paths.outbox).sort()) print(`  ${join(config.paths.outbox, f)}`);
    const rejected = batches.find((b) => b.state === 'REJECTED');
    if (rejected) print(`\nwhy ${rejected.fileName} was not paid: ${join(config.paths.outbox, `${outboxName(rejected)}.ack.csv`)}`);
    print(`\nlog: ${logFile}`);
    print('next: `npx payoutd run` watches ./var/inbox with the same embedded sandbox; see README.md');
  } finally {
    await running.stop();
  }
}

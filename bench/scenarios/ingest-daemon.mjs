// Ingest: the real `payoutd run` (default settings: SQLite, synchronous FULL)
// against a payout sandbox answering in 50 ms; the batch file is dropped into
// its inbox whole. Measured from outside, as finance sees it: from the file
// taken (gone from the inbox) to its acknowledgement in the outbox, and the
// daemon's peak RSS by then.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PayoutdProcess, cpuMsOf, now, peakRssMb, sleep, waitFor } from '../lib/processes.mjs';
import { Sandbox, dropInInbox, outboxFile, writeDaemonConfig, writeMerchantFiles } from '../lib/setup.mjs';

const { workDir, file, rows, resultFile } = JSON.parse(process.argv[2]);
const dir = join(workDir, 'ingest');
const merchant = await writeMerchantFiles(dir);
const sandbox = await Sandbox.start(dir, merchant, { latencyMs: 50 });
const config = writeDaemonConfig(dir, merchant, sandbox.url);
const daemon = new PayoutdProcess(['run', '--config', config.file], dir);
try {
  await daemon.waitForLine(/"payoutd running"/, 60_000);
  const inboxPath = dropInInbox(file, config.inbox, 'payouts.csv');
  const takenAt = await waitFor(() => !existsSync(inboxPath) && now(), 'the file to be taken', 60_000, 5);
  const cpuAtTake = cpuMsOf(daemon.pid);
  for (;;) {
    if (outboxFile(config.outbox, '.ack.csv')) break;
    if (daemon.exitInfo || now() - takenAt > 300_000) throw new Error('no acknowledgement within 300 s of the take');
    await sleep(5);
  }
  const ackMs = now() - takenAt;
  const peak = peakRssMb(daemon.pid);
  const cpuMs = cpuMsOf(daemon.pid) - cpuAtTake;
  // The batch is let go after its ack's .xlsx copy too: the check that it was accepted whole waits for that.
  const accepted = JSON.parse((await daemon.waitForLine(/"batch accepted"/, 300_000)).line);
  if (accepted.validCount !== rows) throw new Error(`the batch was not accepted whole: ${accepted.validCount} valid rows of ${rows}`);
  writeFileSync(resultFile, JSON.stringify({ rows, ackMs, rowsPerSecond: (rows / ackMs) * 1000, cpuMs, peakRssMb: peak }));
} finally {
  await daemon.stop();
  await sandbox.stop();
}

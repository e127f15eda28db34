// Submit, the daemon: the real `payoutd run` with submit.concurrency C against
// a payout sandbox that adds L ms to every call. One batch file of
// warmupRows + rows rows is dropped into its inbox; the sandbox's count of
// creates is read every 100 ms with the daemon's CPU time. The first
// warmupRows creates are not measured (a fresh process runs its first
// thousands of creates in V8's slower tiers); then creates/s and the
// daemon's CPU per create over the next `rows` creates.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PayoutdProcess, cpuMsOf, now, sleep } from '../lib/processes.mjs';
import { Sandbox, dropInInbox, generateBatch, writeDaemonConfig, writeMerchantFiles } from '../lib/setup.mjs';

const { workDir, round = 1, latencyMs, concurrency, warmupRows, rows, maxSeconds, resultFile } = JSON.parse(process.argv[2]);
const dir = join(workDir, `submit-daemon-L${latencyMs}-C${concurrency}-${round}`);
const merchant = await writeMerchantFiles(dir);
const sandbox = await Sandbox.start(dir, merchant, { latencyMs });
const config = writeDaemonConfig(dir, merchant, sandbox.url, { submit: { concurrency } });
const file = join(dir, 'payouts.csv');
generateBatch(file, warmupRows + rows, `SUB${latencyMs}`);
const daemon = new PayoutdProcess(['run', '--config', config.file], dir);
try {
  await daemon.waitForLine(/"payoutd running"/, 60_000);
  dropInInbox(file, config.inbox, 'payouts.csv');
  const sample = async () => ({ at: now(), creates: (await sandbox.stats()).creates, cpuMs: cpuMsOf(daemon.pid) });
  let from = null;
  let to = await sample();
  const deadline = now() + (maxSeconds + 60) * 1000; // a minute more for reading the file and the warm-up
  while (to.creates < warmupRows + rows && now() < deadline && !daemon.exitInfo) {
    await sleep(100);
    to = await sample();
    if (from === null && to.creates >= warmupRows) from = to;
    if (from !== null && to.at - from.at > maxSeconds * 1000) break; // a slow build is measured on part of the batch
  }
  if (from === null || to.creates === from.creates) throw new Error(`only ${to.creates} creates: ${daemon.stderr.slice(-3).join(' | ')}`);
  const creates = to.creates - from.creates;
  const stats = await sandbox.stats();
  writeFileSync(
    resultFile,
    JSON.stringify({
      latencyMs,
      concurrency,
      warmupRows,
      creates,
      complete: to.creates >= warmupRows + rows,
      ms: to.at - from.at,
      perSecond: (creates / (to.at - from.at)) * 1000,
      cpuMsPerCreate: (to.cpuMs - from.cpuMs) / creates,
      businessErrors: stats.businessErrors,
      internalErrors: stats.internalErrors,
    }),
  );
} finally {
  await daemon.stop();
  await sandbox.stop();
}

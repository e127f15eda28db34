// Ingest: one batch file claimed from an inbox folder and received by the
// build's BatchIntake on a real SQLite file (the daemon's default settings,
// synchronous FULL), with the real outbox writing the acknowledgement.
// Measures receive() (read, validate, insert, accept, ack), the time from
// the claim to the acknowledgement written, and the process's peak RSS.
import { link, lstat } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dist, now, peakRssMb } from '../lib/common.mjs';
import { openIngestStore } from '../lib/fixtures.mjs';

const params = JSON.parse(process.argv[2]);
const { root, file, workDir } = params;
const { BatchOutbox } = await dist(root, 'daemon/outbox.js');
const { BatchIntake, claimFile } = await dist(root, 'ingest/index.js');
const { systemClock } = await dist(root, 'domain/clock.js');
const { createLogger } = await dist(root, 'log/index.js');

const { config, db } = await openIngestStore(root, join(workDir, 'ingest'), { balanceCheck: { enabled: false } });
const outbox = new BatchOutbox(db, config.paths.outbox, config.outbox.bom);
let ackWrittenAt = null;
const intake = new BatchIntake(
  {
    db,
    clock: systemClock,
    logger: createLogger('silent'),
    effects: {
      writeAck: async (b, r) => {
        const path = await outbox.writeAck(b, r);
        ackWrittenAt = now();
        return path;
      },
      writeFileRejection: (b, r) => outbox.writeFileRejection(b, r),
      writeResult: (b) => outbox.writeResult(b),
    },
    // The bench measures reading; no batch of it is held (the balance check is off).
    holds: { atAcceptance: async () => null },
  },
  {
    format: config.batch.format,
    rules: config.batch.rules,
    onInvalidRows: config.batch.onInvalidRows,
    rejectedDir: join(config.paths.stateDir, 'rejected'),
    instanceId: 'bench-ingest',
    leaseMs: config.instance?.leaseMs ?? 60_000,
  },
);

const inboxPath = join(config.paths.inbox, basename(file));
await link(file, inboxPath);
const st = await lstat(inboxPath);
const candidate = { name: basename(file), path: inboxPath, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };

const claimStarted = now();
const claimed = await claimFile(candidate, {
  claimedDir: join(config.paths.stateDir, 'claimed'),
  clock: systemClock,
  requireDoneMarker: false,
});
const claimMs = now() - claimStarted;
if (!claimed) throw new Error('the claim of the batch file failed');

const cpuBefore = process.cpuUsage();
const started = now();
const batch = await intake.receive(claimed);
const receiveMs = now() - started;
const cpu = process.cpuUsage(cpuBefore);
const peak = peakRssMb();
await db.destroy();

if (batch.state !== 'ACTIVE' || batch.validCount !== params.rows) {
  throw new Error(
    `the batch was not accepted whole: state ${batch.state}, ${batch.validCount} valid of ${params.rows}: ${batch.rejectReason ?? ''}`,
  );
}
writeFileSync(
  params.resultFile,
  JSON.stringify({
    rows: params.rows,
    claimMs,
    receiveMs,
    // From the start of the claim (the file taken) to the acknowledgement in the outbox.
    ackMs: ackWrittenAt === null ? null : ackWrittenAt - claimStarted,
    rowsPerSecond: (params.rows / receiveMs) * 1000,
    cpuMs: (cpu.user + cpu.system) / 1000,
    peakRssMb: peak,
  }),
);

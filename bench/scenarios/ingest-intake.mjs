// Ingest: one batch file claimed from an inbox folder and received by the
// build's BatchIntake on a real SQLite file (the daemon's default settings,
// synchronous FULL), with the real outbox writing the acknowledgement, and
// the reader threads started before the file comes, as the running daemon
// starts them (builds before item 58 start them when the read begins).
// Measures the claim (rename + SHA-256) and receive() (read, validate,
// insert, accept, ack) with its phases, and the process's peak RSS.
import { link, lstat, stat } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { dist, now, peakRssMb } from '../lib/common.mjs';
import { openIngestStore } from '../lib/fixtures.mjs';

const params = JSON.parse(process.argv[2]);
const { root, file, workDir } = params;
const { BatchOutbox } = await dist(root, 'daemon/outbox.js');
const { BatchIntake, claimFile, ReaderThreads, readerThreads } = await dist(root, 'ingest/index.js');
const { systemClock } = await dist(root, 'domain/clock.js');
const { createLogger } = await dist(root, 'log/index.js');

const { config, db } = await openIngestStore(root, join(workDir, 'ingest'), { balanceCheck: { enabled: false } });

// Phase marks from the statements the intake sends.
const marks = {};
db.on('query', (q) => {
  const sql = String(q.sql);
  const t = now();
  if (sql.startsWith('INSERT INTO payouts')) {
    marks.firstInsert ??= t;
    marks.lastInsert = t;
  } else if (/having count\(\*\) > 1/i.test(sql)) marks.acceptStart ??= t;
});
// As src/daemon/daemon.ts: started while it waits for files; the read ends them.
const readers = ReaderThreads ? new ReaderThreads(readerThreads(config.batch.read.workers)) : undefined;
readers?.prestart();
const logLines = [];
const logger = createLogger('info', { write: (line) => void logLines.push(line) });
const outbox = new BatchOutbox(db, config.paths.outbox, config.outbox.bom);
let ackMs = 0;
const intake = new BatchIntake(
  {
    db,
    clock: systemClock,
    logger,
    effects: {
      writeAck: async (b, r, drafts) => {
        const t = now();
        marks.ackStart = t;
        marks.ackFromDrafts = drafts !== undefined;
        const path = await outbox.writeAck(b, r, drafts);
        ackMs += now() - t;
        return path;
      },
      writeFileRejection: (b, r) => outbox.writeFileRejection(b, r),
      writeResult: (b) => outbox.writeResult(b),
      balanceRecheckMs: config.batch.balanceCheck.recheckMs,
    },
  },
  {
    format: config.batch.format,
    rules: config.batch.rules,
    onInvalidRows: config.batch.onInvalidRows,
    rejectedDir: join(config.paths.stateDir, 'rejected'),
    // As the daemon passes them (builds that do not know an option ignore it).
    readingDir: join(config.paths.stateDir, 'reading'),
    read: config.batch.read,
    readers,
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
await readers?.close();
await db.destroy();

if (batch.state !== 'ACTIVE' || batch.validCount !== params.rows) {
  throw new Error(
    `the batch was not accepted whole: state ${batch.state}, ${batch.validCount} valid of ${params.rows}: ${batch.rejectReason ?? ''}`,
  );
}
const since = (t) => (t === undefined ? null : t - started);
writeFileSync(
  params.resultFile,
  JSON.stringify({
    rows: params.rows,
    claimMs,
    receiveMs,
    rowsPerSecond: (params.rows / receiveMs) * 1000,
    cpuMs: (cpu.user + cpu.system) / 1000,
    phases: {
      readValidateInsertMs: since(marks.acceptStart),
      firstInsertAtMs: since(marks.firstInsert),
      lastInsertAtMs: since(marks.lastInsert),
      acceptMs: marks.acceptStart && marks.ackStart ? marks.ackStart - marks.acceptStart : null,
      ackMs,
      ackFromDrafts: marks.ackFromDrafts ?? null,
    },
    // Parts the file was read in (1: in the intake's thread; absent: a build that does not say).
    readInParts: logLines.map((l) => JSON.parse(l)).find((l) => l.msg === 'batch accepted')?.readInParts ?? null,
    peakRssMb: peak,
    databaseMb: Math.round((await stat(config.databaseFile)).size / 1048576),
  }),
);

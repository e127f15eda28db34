/**
 * The daemon as `payoutd run` wires it, built in this process over a pipeline's database, client and logger
 * (./harness.ts), with its inbox and outbox in the pipeline's folder. Each test file stops the daemons it made
 * (stopPipelineDaemons, after each test).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/index.js';
import { PayoutDaemon, type DaemonDeps } from '../../src/daemon/daemon.js';
import { systemClock, type Clock } from '../../src/domain/clock.js';
import { listBatchesInStates, type BatchRecord } from '../../src/store/batches.js';
import { waitFor, type Pipeline } from './harness.js';

export interface PipelineDaemon {
  daemon: PayoutDaemon;
  inbox: string;
  outbox: string;
}

const made: PayoutDaemon[] = [];

export async function stopPipelineDaemons(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => d.stop()));
}

/** What a daemon counts in payoutd_files_total, by outcome, through the hook the metrics use (src/daemon/runtime.ts). */
export function fileCounter(): { onBatchEvent: NonNullable<DaemonDeps['onBatchEvent']>; counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  return { counts, onBatchEvent: (event) => void (counts[event] = (counts[event] ?? 0) + 1) };
}

/**
 * A daemon for `p` with the config `sections` (beside the paths it sets), on `clock` (the system clock unless
 * given; the pipeline's ManualClock moves only when the test moves it), with the test's `hooks`. Not started.
 */
export async function pipelineDaemon(
  p: Pipeline,
  sections: Record<string, unknown>,
  clock: Clock = systemClock,
  hooks: Pick<DaemonDeps, 'faultPoint' | 'onBatchEvent'> = {},
): Promise<PipelineDaemon> {
  const inbox = join(p.dir, 'inbox');
  const outbox = join(p.dir, 'outbox');
  // What startDaemon (src/daemon/runtime.ts) does before it builds the daemon.
  for (const d of [inbox, outbox]) await mkdir(d, { recursive: true });
  const config = loadConfig({ env: {}, cwd: p.dir }, { paths: { inbox, outbox, stateDir: join(p.dir, 'state') }, ...sections });
  const daemon = new PayoutDaemon(
    { config, db: p.db, service: p.client, clock, logger: p.logger, ...hooks },
    { shutdownGraceMs: 2000, watch: false, instanceId: 'test' },
  );
  made.push(daemon);
  return { daemon, inbox, outbox };
}

/** Drives the daemon's inbox until the one file dropped into it is an accepted batch (ACTIVE, or COMPLETE already); returns it. */
export async function firstAcceptedBatch(p: Pipeline, daemon: PayoutDaemon): Promise<BatchRecord> {
  let batch: BatchRecord | undefined;
  await waitFor(async () => {
    await daemon.tickInbox();
    [batch] = await listBatchesInStates(p.db, ['ACTIVE', 'COMPLETE']);
    return batch !== undefined;
  }, 'the dropped file to be accepted');
  return batch as BatchRecord;
}

/**
 * The text of the batch's outbox file whose name ends in `suffix`, null when there is none. A file the daemon
 * removes between the listing and the read counts as none: tests wait for files to go as well as to come.
 */
export async function outboxFile(outbox: string, batchId: string, suffix: string): Promise<string | null> {
  const name = (await readdir(outbox)).find((f) => f.startsWith(batchId) && f.endsWith(suffix));
  if (name === undefined) return null;
  try {
    return await readFile(join(outbox, name), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Drops `text` into the inbox as `name` and drives the inbox until its batch is decided (not being read); returns its id. */
export async function dropDecided(p: Pipeline, daemon: PayoutDaemon, inbox: string, name: string, text: string): Promise<string> {
  const before = new Set(((await p.db('batches').select('id')) as { id: string }[]).map((b) => b.id));
  await writeFile(join(inbox, name), text);
  let id: string | undefined;
  await waitFor(
    async () => {
      await daemon.tickInbox();
      const rows = (await p.db('batches').where({ file_name: name }).whereNotIn('state', ['RECEIVED', 'VALIDATING']).select('id')) as {
        id: string;
      }[];
      id = rows.find((b) => !before.has(b.id))?.id;
      return id !== undefined;
    },
    `${name} to be decided`,
    10_000,
  );
  return id as string;
}

/**
 * A daemon for `p` on the system clock that polls often, writes retry files, and finds files dropped while it runs
 * by a listing (the tests run no file watcher). Not started.
 */
export function retryFileDaemon(p: Pipeline): Promise<PipelineDaemon> {
  return pipelineDaemon(p, {
    inbox: { stableForMs: 20, rescanIntervalMs: 100 },
    batch: { balanceCheck: { enabled: false } },
    poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
    outbox: { retryFiles: true },
  });
}

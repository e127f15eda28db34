/**
 * A daemon alone on its SQLite file whose intake fails on a store error while it runs (the write lock held
 * past database.busyTimeoutMs by a command, a full disk; here a trigger that raises SQLite's own "disk is
 * full" error). The batch, or the taken file that got no batch, used to wait for a restart: its stored rows
 * held their references (a file sent again had every row DUPLICATE) and finance had no ack. Now a later
 * finish pass reads it again from the start, once a wait on the daemon's clock is over, and never while this
 * process is still reading it. A claim that failed (the file left in the inbox) used to keep the file's
 * database claim, so the file was never offered to a claim again until a restart; now it is released.
 */
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PayoutDaemon, type DaemonDeps } from '../../src/daemon/daemon.js';
import { READ_RETRY } from '../../src/daemon/read-retries.js';
import { FileReadFailure } from '../../src/ingest/index.js';
import { DatabaseBusyError } from '../../src/store/index.js';
import { fileCounter, pipelineDaemon, stopPipelineDaemons, type PipelineDaemon } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

/** The daemon on the pipeline's ManualClock: the inbox and the retry waits move only when the test moves it. */
async function daemonFor(p: Pipeline, hooks: Pick<DaemonDeps, 'faultPoint' | 'onBatchEvent'> = {}): Promise<PipelineDaemon> {
  const made = await pipelineDaemon(
    p,
    {
      inbox: { stableForMs: 100, rescanIntervalMs: 50 },
      // A reading that stored its rows twice would have them DUPLICATE_IN_FILE, and the file refused whole.
      batch: { onInvalidRows: 'reject-file', balanceCheck: { enabled: false } },
      submit: { notFoundGraceMs: 0, unsafeShortGrace: true, concurrency: 1 },
    },
    p.clock,
    hooks,
  );
  await made.daemon.start();
  return made;
}

/** Moves the clock and the inbox on, a step at a time, until `done`. */
async function tickUntil(p: Pipeline, daemon: PayoutDaemon, done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if (await done()) return;
    p.clock.advance(100);
    await daemon.tickInbox();
  }
  throw new Error(`the inbox never got to: ${what}`);
}

const logsWith = (p: Pipeline, text: string): Record<string, unknown>[] =>
  p.logLines.filter((l) => l.includes(text)).map((l) => JSON.parse(l) as Record<string, unknown>);

/** The failed readings logged so far, oldest first. */
/**
 * The batch's state and count of failed readings after each of its first `n` readings that failed, each to be read
 * again (the clock moved past its wait); fewer once it is no longer being read.
 */
async function afterFailedReadings(p: Pipeline, batchId: string, n: number): Promise<Record<string, unknown>[]> {
  const retried = (): Record<string, unknown>[] => logsWith(p, 'the reading of a batch failed').filter((l) => l.retryInMs !== undefined);
  const now = async (): Promise<Record<string, unknown>> =>
    (await p.db('batches').where({ id: batchId }).first('state', 'read_failures')) as Record<string, unknown>;
  const seen: Record<string, unknown>[] = [];
  for (let failed = 1; failed <= n; failed++) {
    await waitFor(async () => retried().length >= failed || (await now()).state !== 'VALIDATING', `failed reading ${failed}`, 15_000);
    seen.push(await now());
    if (retried().length < failed) break;
    p.clock.advance(Number(retried()[failed - 1]?.retryInMs));
  }
  return seen;
}

/** What an error the reader met on its thread becomes on the daemon's (src/ingest/csv/read-thread.ts). */
function fromReader(work: () => unknown): FileReadFailure {
  try {
    work();
  } catch (err) {
    return new FileReadFailure((err as Error).message, (err as Error).name);
  }
  throw new Error('did not throw');
}

/** A fault point that throws these errors, one a reading (a chunk stored), then nothing. */
function throwing(errors: unknown[]): DaemonDeps['faultPoint'] {
  const left = [...errors];
  return () => {
    if (left.length > 0) throw left.shift();
  };
}

describe('pipeline: an intake that failed is tried again while the daemon runs', () => {
  it('reads a batch whose reading failed part way again from the start, after a wait, into exactly its rows', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const files = fileCounter();
    const { daemon, inbox, outbox } = await daemonFor(p, { onBatchEvent: files.onBatchEvent });
    // The second chunk fails (the intake stores 5,000 rows a transaction), after the first is committed.
    await p.db.raw(
      `CREATE TRIGGER full_disk BEFORE INSERT ON payouts WHEN NEW.merchant_reference_id = 'RR-5500' BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`,
    );
    const refs = Array.from({ length: 6000 }, (_, i) => `RR-${i + 1}`);
    await writeFile(join(inbox, 'big.csv'), csvFile(refs.map((r) => csvRow(r))));
    // A tick waits for the intake of what it took: once the file is gone from the inbox, its reading has failed.
    await tickUntil(p, daemon, async () => (await readdir(inbox)).length === 0, 'the file taken');
    const { id: batchId, state } = (await p.db('batches').first('id', 'state')) as { id: string; state: string };
    expect(state).toBe('VALIDATING');
    expect((await p.rows(batchId)).length).toBe(5000);

    // The error passes; the batch is read again once the wait is over on the daemon's clock.
    await p.db.raw('DROP TRIGGER full_disk');
    p.clock.advance(READ_RETRY.baseMs);
    await waitFor(async () => (await p.batch(batchId)).state !== 'VALIDATING', 'the batch to be read again', 15_000);

    const batch = await p.batch(batchId);
    expect([batch.state, batch.rowCount, batch.validCount, batch.invalidCount]).toEqual(['ACTIVE', 6000, 6000, 0]);
    const counts = (await p.db('payouts').where({ batch_id: batchId }).count({ n: '*' }).countDistinct({ lines: 'line' }).first()) as {
      n: number;
      lines: number;
    };
    expect(counts).toEqual({ n: 6000, lines: 6000 });
    expect(
      await p.db('payouts').where({ batch_id: batchId }).whereIn('state', ['INVALID', 'DUPLICATE', 'VALIDATED']).count({ n: '*' }).first(),
    ).toEqual({ n: 0 });
    expect(await readdir(outbox)).toContain(`${batchId}_big.csv.ack.csv`);
    expect(logsWith(p, 'the reading of a batch failed').map((l) => [l.batchId, l.retryInMs])).toEqual([[batchId, READ_RETRY.baseMs]]);
    expect(logsWith(p, 'resuming the reading of a batch whose reading failed here').map((l) => l.batchId)).toEqual([batchId]);
    expect(logsWith(p, 'batch accepted')).toHaveLength(1);
    // payoutd_files_total: the file once, and its outcome once, the reading that succeeded being a resumed one.
    await daemon.stop(); // its pass over, what it counts is all there
    expect(files.counts).toEqual({ seen: 1, accepted: 1 });
  });

  it('refuses a batch whose reading fails the same unexpected way each time as READ_FAILED, with an ack, across a restart', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    // The hook the chaos test kills the daemon at (a chunk of rows stored, the batch VALIDATING) runs on the daemon's
    // thread, as the store does: it throws what a reader's bug becomes on its way from the reading thread, on every
    // reading, the same error each time, with the row in its message.
    const bug = {
      faultPoint: () => {
        throw fromReader(() => JSON.parse('{"accountNumber": 123456789012,'));
      },
    };
    const firstFiles = fileCounter();
    const first = await daemonFor(p, { ...bug, onBatchEvent: firstFiles.onBatchEvent });
    const { inbox, outbox } = first;
    await writeFile(join(inbox, 'odd.csv'), csvFile(['RB-1', 'RB-2', 'RB-3'].map((r) => csvRow(r))));
    await tickUntil(p, first.daemon, async () => (await readdir(inbox)).length === 0, 'the file taken');
    const { id: batchId } = (await p.db('batches').first('id')) as { id: string };
    const failures = (): Record<string, unknown>[] => logsWith(p, 'the reading of a batch failed on an unexpected error');
    expect(failures().map((l) => [l.error, l.attempts])).toEqual([['SyntaxError', 1]]);
    expect((await p.batch(batchId)).state).toBe('VALIDATING');
    expect((await p.rows(batchId)).length).toBe(3);

    // Read again after its wait, failing the same way: still VALIDATING, the count kept with the batch.
    p.clock.advance(READ_RETRY.baseMs);
    await waitFor(() => failures().length === 2, 'a second failed reading', 15_000);
    expect(await p.db('batches').where({ id: batchId }).first('state', 'read_failures')).toEqual({ state: 'VALIDATING', read_failures: 2 });

    // Seen once, though read twice.
    expect(firstFiles.counts).toEqual({ seen: 1 });

    // A restart does not start the count over: the third reading is the last.
    await first.daemon.stop();
    const files = fileCounter();
    await daemonFor(p, { ...bug, onBatchEvent: files.onBatchEvent });
    await waitFor(async () => (await p.batch(batchId)).state !== 'VALIDATING', 'the batch refused', 15_000);

    const batch = await p.batch(batchId);
    expect([batch.state, batch.rejectCode]).toEqual(['REJECTED', 'READ_FAILED']);
    expect(logsWith(p, 'failed the same unexpected way each time').map((l) => [l.error, l.attempts])).toEqual([['SyntaxError', 3]]);
    // The next process took the file on and counts its outcome.
    await stopPipelineDaemons();
    expect(files.counts).toEqual({ seen: 1, rejected: 1 });
    // The rows its readings stored are gone, nothing was sent, and finance has the answer in the outbox.
    expect(await p.rows(batchId)).toEqual([]);
    expect(p.createRequests()).toBe(0);
    const ack = (await readdir(outbox)).find((f) => f.startsWith(batchId) && f.endsWith('.ack.csv'));
    expect(ack).toBeDefined();
    const text = await readFile(join(outbox, ack as string), 'utf8');
    expect(text).toContain('payoutd could not read this file');
    expect(text).toContain('nothing in it was paid');
    // Neither the ack nor a log line quotes the error's message (a cell of the file may be in it).
    for (const said of [text, ...p.logLines]) expect(said).not.toContain('123456789012');
  });

  it('reads again without end a batch whose rows fail to be stored with a plain error, and accepts it once that passes', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    // The store failing under the reading as pg does when the connection drops mid-query (no code, no severity),
    // more times than batch.readRetry.maxAttempts, while the database answers between.
    const dropped = Array.from({ length: 4 }, () => new Error('insert into "payouts" ... - Connection terminated unexpectedly'));
    const files = fileCounter();
    const { daemon, inbox } = await daemonFor(p, { faultPoint: throwing(dropped), onBatchEvent: files.onBatchEvent });
    await writeFile(join(inbox, 'good.csv'), csvFile(['PD-1', 'PD-2'].map((r) => csvRow(r))));
    await tickUntil(p, daemon, async () => (await readdir(inbox)).length === 0, 'the file taken');
    const { id: batchId } = (await p.db('batches').first('id')) as { id: string };
    expect(await afterFailedReadings(p, batchId, 4)).toEqual(dropped.map(() => ({ state: 'VALIDATING', read_failures: 0 })));
    await waitFor(async () => (await p.batch(batchId)).state !== 'VALIDATING', 'the batch read', 15_000);
    expect((await p.batch(batchId)).state).toBe('ACTIVE');
    expect([...logsWith(p, 'on an unexpected error'), ...logsWith(p, 'the same unexpected way')]).toEqual([]);
    await daemon.stop();
    expect(files.counts).toEqual({ seen: 1, accepted: 1 });
  });

  it('counts the failed readings of a file in a row: one that failed another way between starts the count over', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const bug = (): FileReadFailure => fromReader(() => JSON.parse('{"a": 1,'));
    const busy = new DatabaseBusyError('DATABASE_BUSY', 'the state database stayed locked');
    const { daemon, inbox } = await daemonFor(p, { faultPoint: throwing([bug(), bug(), busy, bug(), bug()]) });
    await writeFile(join(inbox, 'odd.csv'), csvFile(['RW-1', 'RW-2'].map((r) => csvRow(r))));
    await tickUntil(p, daemon, async () => (await readdir(inbox)).length === 0, 'the file taken');
    const { id: batchId } = (await p.db('batches').first('id')) as { id: string };
    // Two in a row, none, two in a row: never the three that refuse it.
    expect(await afterFailedReadings(p, batchId, 5)).toEqual([1, 2, 0, 1, 2].map((n) => ({ state: 'VALIDATING', read_failures: n })));
    await waitFor(async () => (await p.batch(batchId)).state !== 'VALIDATING', 'the batch read', 15_000);
    expect((await p.batch(batchId)).state).toBe('ACTIVE');
  });

  it('receives again a taken file whose batch could not be recorded, after a wait, under its own name', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const files = fileCounter();
    const { daemon, inbox } = await daemonFor(p, { onBatchEvent: files.onBatchEvent });
    await p.db.raw(`CREATE TRIGGER full_disk BEFORE INSERT ON batches BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`);
    await writeFile(join(inbox, 'small.csv'), csvFile(['RC-1', 'RC-2', 'RC-3'].map((r) => csvRow(r))));
    const claimedDir = daemon.claimedDir;
    await tickUntil(p, daemon, async () => (await readdir(inbox)).length === 0, 'the file taken into claimed/');
    // Taken, with no batch: only this process knows it is there.
    const [stored] = await readdir(claimedDir);
    expect(stored).toMatch(/small\.csv$/);
    expect(await p.db('batches').count({ n: '*' }).first()).toEqual({ n: 0 });

    await p.db.raw('DROP TRIGGER full_disk');
    p.clock.advance(READ_RETRY.baseMs);
    await waitFor(
      async () => ((await p.db('batches').count({ n: '*' }).first()) as { n: number }).n > 0,
      'the file to be received again',
      15_000,
    );
    await waitFor(
      async () => !['RECEIVED', 'VALIDATING'].includes((await p.db('batches').first('state')).state as string),
      'its reading to end',
      15_000,
    );

    const batches = (await p.db('batches').select('id', 'file_name', 'state', 'valid_count', 'stored_path')) as Record<string, unknown>[];
    expect(batches.map((b) => [b.file_name, b.state, b.valid_count, b.stored_path])).toEqual([
      ['small.csv', 'ACTIVE', 3, join(claimedDir, stored as string)],
    ]);
    expect(logsWith(p, 'could not be recorded as a batch').map((l) => l.retryInMs)).toEqual([READ_RETRY.baseMs]);
    expect(logsWith(p, 'receiving again a taken file whose batch could not be recorded')).toHaveLength(1);
    await daemon.stop();
    expect(files.counts).toEqual({ seen: 1, accepted: 1 });
  });

  it('takes a file whose claim failed once on a later sighting, without a restart', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    const { daemon, inbox } = await daemonFor(p);
    // claimed/ replaced by a regular file: the claim fails (as a refused rename or a full disk does), for root too.
    const claimedDir = daemon.claimedDir;
    await rename(claimedDir, `${claimedDir}.saved`);
    await writeFile(claimedDir, 'not a folder for a while\n');
    await writeFile(join(inbox, 'once.csv'), csvFile(['CF-1', 'CF-2'].map((r) => csvRow(r))));
    await tickUntil(p, daemon, () => logsWith(p, 'onCandidateReady failed for once.csv').length > 0, 'a failed claim');
    expect(await readdir(inbox)).toEqual(['once.csv']);

    await rm(claimedDir);
    await rename(`${claimedDir}.saved`, claimedDir);
    await tickUntil(p, daemon, async () => (await readdir(inbox)).length === 0, 'the file taken on a later sighting');
    await waitFor(async () => (await p.db('batches').first('state'))?.state === 'ACTIVE', 'its batch accepted', 15_000);
    expect(await p.db('file_claims').count({ n: '*' }).first()).toEqual({ n: 1 });
  });

  it('refuses a second reading of a batch this process is reading', async () => {
    const p = await startPipeline();
    const id = await p.insertReadingBatch([]);
    const first = p.intake.process(id);
    await expect(p.intake.process(id)).rejects.toThrow(`batch ${id} is already being read by this process`);
    await first.catch(() => undefined);
    expect(p.intake.isReading(id)).toBe(false);
  });
});

/**
 * Rows made final through the real sandbox and the real client (test/pipeline/harness.ts), a receiver on the same
 * database with the default follow-up, signed deliveries about them, and the outbox files of their batch: what
 * the tests of events contradicting final rows (final-rows.test.ts, and on PostgreSQL postgres.test.ts) share.
 */
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect } from 'vitest';
import type { PayoutDaemon } from '../../src/daemon/daemon.js';
import type { FaultPointName } from '../../src/daemon/fault-points.js';
import { BatchFinisher } from '../../src/daemon/finisher.js';
import { BatchOutbox, type OutboxExtras } from '../../src/daemon/outbox.js';
import { ManualClock } from '../../src/domain/clock.js';
import { payoutRequest, startPipeline, waitFor, type Pipeline, type PipelineOptions } from '../pipeline/harness.js';
import { PATH, eventBody, parsedLines, send, signedHeaders, startReceiver, type Harness } from './helpers.js';

export interface FinalRows {
  p: Pipeline;
  h: Harness;
  batchId: string;
  /** The payoutId of each reference's row. */
  payoutIds: Map<string, string>;
}

/**
 * A batch of these references, created through the sandbox and settled there as given (PAID or CANCELLED), each
 * row recorded final by the poller; then a receiver on the same database with the default follow-up.
 */
export async function finalRows(settle: Record<string, 'PAID' | 'CANCELLED'>, o: PipelineOptions = {}): Promise<FinalRows> {
  const p = await startPipeline(o);
  const refs = Object.keys(settle);
  const batchId = await p.insertReadyBatch(refs.map((ref, i) => payoutRequest(ref, { payoutAmount: `${100 + i}.5` })));
  await p.submit();
  for (const [ref, status] of Object.entries(settle)) expect(p.sandbox.settle({ merchantReferenceId: ref }, status)).toBe(1);
  p.clock.advance(5000);
  await p.poll();
  expect(await p.states(batchId)).toEqual(Object.values(settle));
  const payoutIds = new Map<string, string>();
  for (const ref of refs) payoutIds.set(ref, (await p.row(ref)).payoutId as string);
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH });
  return { p, h, batchId, payoutIds };
}

/** A receiver with the default follow-up on a running daemon's database, waking its poller as `payoutd run` wires them. */
export function daemonReceiver(p: Pipeline, daemon: PayoutDaemon): Promise<Harness> {
  return startReceiver({
    db: p.db,
    clock: new ManualClock(Date.now()),
    defaultFollowUp: true,
    path: PATH,
    wake: () => daemon.wakePoller(),
  });
}

/** A signed delivery of a payout.updated event, answered 200. */
export async function deliver(h: Harness, event: Parameters<typeof eventBody>[0]): Promise<void> {
  const body = eventBody(event);
  expect((await send(h.url, { body, headers: signedHeaders(body, h.clock) })).status).toBe(200);
}

/** Waits until the receiver's follow-up has made a check of the row owed. */
export async function checkOwed(p: Pipeline, ref: string): Promise<void> {
  await waitFor(async () => (await p.row(ref)).serviceCheck !== null, `a check of ${ref} to be owed`);
}

/** The receiver's log lines about a reference, once its follow-up wrote one. */
export async function receiverLines(h: Harness, ref: string): Promise<Record<string, unknown>[]> {
  const about = (): Record<string, unknown>[] => parsedLines(h.logs).filter((l) => l['merchantReferenceId'] === ref);
  await waitFor(() => about().some((l) => l['level'] !== 'debug'), 'the follow-up');
  return about();
}

/** The pipeline's (poller's) log lines about a reference, debug lines left out. */
export function pipelineLines(p: Pipeline, ref: string): Record<string, unknown>[] {
  return p.logLines
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['merchantReferenceId'] === ref && l['level'] !== 'debug');
}

export interface BatchFiles {
  /** The result file's records by reference: its status and reason cells. */
  result: Map<string, { status: string; reason: string }>;
  /** The retry file's text, null when none was written. */
  retry: string | null;
  /** Rows the retry file left out for what the service says, as its writer reports them. */
  withheld: { line: number; merchantReferenceId: string; note: string }[];
}

/** The batch's result and retry files, written by the daemon's outbox into a folder of their own. */
export async function batchFiles(p: Pipeline, batchId: string, name: string): Promise<BatchFiles> {
  const dir = join(p.dir, name);
  await mkdir(dir, { recursive: true });
  const outbox = new BatchOutbox(p.db, dir, false, undefined, { xlsx: false, retryFiles: true });
  const batch = await p.batch(batchId);
  const files = await outbox.writeResult(batch);
  const extras = await outbox.writeExtras(batch);
  const result = new Map<string, { status: string; reason: string }>();
  const records = parse(await readFile(files.resultPath, 'utf8'), { columns: true }) as Record<string, string>[];
  for (const r of records)
    result.set(r['merchant_reference_id'] as string, { status: r['status'] as string, reason: r['reason'] as string });
  const retryName = (await readdir(dir)).find((f) => f.endsWith('.retry.csv'));
  return {
    result,
    retry: retryName ? await readFile(join(dir, retryName), 'utf8') : null,
    withheld: extras.retry?.withheld ?? [],
  };
}

/**
 * A finisher (an instance of the daemon) on the pipeline's database writing into `outbox` (retry files on),
 * stopping once at `stopAt` when given: the fault point throws, ending its pass there as a stop would.
 */
export function stoppingFinisher(p: Pipeline, outbox: string, stopAt?: FaultPointName, extras: Partial<OutboxExtras> = {}): BatchFinisher {
  let stopped = false;
  return new BatchFinisher(
    {
      db: p.db,
      clock: p.clock,
      logger: p.logger,
      outbox: new BatchOutbox(p.db, outbox, false, undefined, { xlsx: false, retryFiles: true, ...extras }),
      continued: { dir: outbox, bom: false, maxRecordBytes: 65536, encoding: 'utf-8' },
      faultPoint: (name) => {
        if (name !== stopAt || stopped) return;
        stopped = true;
        throw new Error(`stopped at ${name}`);
      },
    },
    { instanceId: 'a', leaseMs: 30_000, shared: false },
  );
}

/**
 * A stop while the daemon writes a batch's outbox files (src/daemon/daemon.ts stop, src/daemon/outbox.ts): the file
 * being written is abandoned, nothing under its final name and no temp file left, the batch not recorded as
 * finished; the next start writes it whole. And the start's repair writes the .xlsx twins a recorded CSV stands
 * without. Real daemon, sandbox over HTTP, SQLite file and folders.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/domain/clock.js';
import type { DaemonDeps, PayoutDaemon } from '../../src/daemon/daemon.js';
import { firstAcceptedBatch, pipelineDaemon, stopPipelineDaemons, type PipelineDaemon } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, startPipeline, waitFor, type Pipeline } from './harness.js';

afterEach(async () => {
  await stopPipelineDaemons();
  await closePipelines();
});

const ROWS = 6;

function daemonFor(p: Pipeline, hooks: Pick<DaemonDeps, 'faultPoint'> = {}): Promise<PipelineDaemon> {
  return pipelineDaemon(
    p,
    {
      inbox: { stableForMs: 20 },
      outbox: { xlsx: true },
      batch: { onInvalidRows: 'reject-file', balanceCheck: { enabled: false } },
      submit: { notFoundGraceMs: 0, unsafeShortGrace: true },
      poll: { tickMs: 20, firstPollDelayMs: 0, minIntervalMs: 20, maxIntervalMs: 100 },
    },
    systemClock,
    hooks,
  );
}

/** A batch's files in the outbox, temp files included; its status file (written on each event) aside. */
const ofBatch = async (outbox: string, id: string): Promise<string[]> =>
  (await readdir(outbox)).filter((f) => (f.startsWith(id) || f.startsWith(`.${id}`)) && !f.includes('.status.')).sort();

describe('pipeline: a stop while an outbox file is written', () => {
  it('abandons the result file being written, leaves no temp file, and the next start writes it whole', async () => {
    const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    let stopping: Promise<void> | null = null;
    let first: PayoutDaemon | null = null;
    const { daemon, inbox, outbox } = await daemonFor(p, {
      // Halfway through the result CSV's rows: the stop comes while the file is being written.
      faultPoint: (point) => {
        if (point === 'mid-result-file' && stopping === null && first) stopping = first.stop();
      },
    });
    first = daemon;
    await writeFile(join(inbox, 'stop.csv'), csvFile(Array.from({ length: ROWS }, (_, i) => csvRow(`SM-${i + 1}`))));
    await daemon.start();
    const batch = await firstAcceptedBatch(p, daemon);
    await waitFor(() => Promise.resolve(stopping !== null), 'the result file to be begun', 15_000);
    await stopping;

    const name = `${batch.id}_stop.csv`;
    // Nothing under the result's names, no temp file, and the batch not recorded as finished.
    expect(await ofBatch(outbox, batch.id)).toEqual([`${name}.ack.csv`, `${name}.ack.xlsx`]);
    expect((await p.batch(batch.id)).state).toBe('ACTIVE');
    expect((await p.batch(batch.id)).resultWrittenAt).toBeNull();

    const again = await daemonFor(p);
    await again.daemon.start();
    await waitFor(async () => (await p.batch(batch.id)).state === 'COMPLETE', 'the batch to complete', 15_000);
    await again.daemon.stop();
    expect(await ofBatch(outbox, batch.id)).toEqual(
      ['ack.csv', 'ack.xlsx', 'result.csv', 'result.xlsx', 'summary.csv', 'summary.xlsx'].map((k) => `${name}.${k}`),
    );
    const result = (await readFile(join(outbox, `${name}.result.csv`), 'utf8')).trim().split('\n');
    expect(result).toHaveLength(ROWS + 1);
  });

  it('writes at start the .xlsx twins a recorded ack, result and summary CSV stand without, and names them', async () => {
    const p = await startPipeline({ startMs: Date.now(), sandbox: { settlement: { minDelayMs: 0, maxDelayMs: 5 } } });
    const { daemon, inbox, outbox } = await daemonFor(p);
    await writeFile(join(inbox, 'twins.csv'), csvFile([csvRow('TW-1'), csvRow('TW-2')]));
    await daemon.start();
    const batch = await firstAcceptedBatch(p, daemon);
    await waitFor(async () => (await p.batch(batch.id)).state === 'COMPLETE', 'the batch to complete', 15_000);
    await daemon.stop();
    const name = `${batch.id}_twins.csv`;
    // As a stop mid-write, or a failed twin, leaves them: the CSVs recorded and in the outbox, their twins not.
    for (const k of ['ack', 'result', 'summary']) await rm(join(outbox, `${name}.${k}.xlsx`));
    const csvBefore = await readFile(join(outbox, `${name}.result.csv`), 'utf8');

    const again = await daemonFor(p);
    await again.daemon.start();
    await again.daemon.stop();
    expect(await ofBatch(outbox, batch.id)).toEqual(
      ['ack.csv', 'ack.xlsx', 'result.csv', 'result.xlsx', 'summary.csv', 'summary.xlsx'].map((k) => `${name}.${k}`),
    );
    expect(await readFile(join(outbox, `${name}.result.csv`), 'utf8')).toBe(csvBefore);
    const told = p.logLines.filter((l) => l.includes('written late') && l.includes(batch.id));
    for (const k of ['ack', 'result', 'summary']) expect(told.join('\n')).toContain(`${name}.${k}.xlsx`);
  });
});

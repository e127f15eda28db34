/**
 * `payoutd cancel` of a batch still being read. A file dropped by mistake is read, accepted and sending within
 * seconds; the cancel used to be refused until the batch was ACTIVE (BATCH_NOT_ACTIVE), so its rows went out
 * before the operator could stop them. Now the cancel is recorded on the batch being read, and its acceptance
 * does the cancel's work in the same transaction: no row is ever READY in the ACTIVE batch, none is sent, the ack
 * says why, and the batch ends with a result file of NOT_SUBMITTED rows.
 *
 * The daemon as `payoutd run` wires it, in this process on the pipeline's ManualClock; the cancel is the real
 * `payoutd` process on the same SQLite file, made while the daemon's reading waits at its mid-read point.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import type { PayoutDaemon } from '../../src/daemon/daemon.js';
import { BatchIntake } from '../../src/ingest/index.js';
import { DEFAULT_BATCH_FORMAT } from '../../src/ingest/csv/index.js';
import { DEFAULT_VALIDATION_RULES } from '../../src/ingest/rules/index.js';
import { cancelReadyRows } from '../../src/store/cancels.js';
import { claimReadyRows } from '../../src/store/claims.js';
import { insertBatch, listBatchEvents, receivedBatch } from '../../src/store/index.js';
import { TEST_DATABASE_FILE } from '../support/database.js';
import { BIN, childEnv } from '../e2e/harness.js';
import { pipelineDaemon, stopPipelineDaemons } from './daemon-world.js';
import { closePipelines, csvFile, csvRow, gate, startPipeline, waitFor, type Pipeline } from './harness.js';

/** Readings held by a test: let go before the daemons stop (a stop waits for its reading). */
const held: (() => void)[] = [];

afterEach(async () => {
  for (const open of held.splice(0)) open();
  await stopPipelineDaemons();
  await closePipelines();
});

/** The real `payoutd` on the pipeline's database file. */
async function payoutd(p: Pipeline, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const config = join(p.dir, 'payoutd.yaml');
  await writeFile(
    config,
    `paths: { stateDir: ./state, inbox: ./inbox, outbox: ./outbox }\ndatabase: { filename: ./${TEST_DATABASE_FILE} }\n`,
  );
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args, '--config', config], { cwd: p.dir, env: childEnv() }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

/** The records of an outbox CSV (BOM stripped). */
async function records(path: string): Promise<Record<string, string>[]> {
  return parseCsv(await readFile(path), { bom: true, columns: true }) as Record<string, string>[];
}

/** Moves the clock and the inbox on until `done` (the tick itself is not awaited: it may be the one held mid-read). */
async function tickUntil(p: Pipeline, daemon: PayoutDaemon, done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await waitFor(
    async () => {
      if (await done()) return true;
      p.clock.advance(100);
      void daemon.tickInbox().catch(() => undefined);
      return false;
    },
    what,
    15_000,
  );
}

describe('payoutd cancel of a batch being read', () => {
  it('is taken: once read, no row is sent, every valid row is NOT_SUBMITTED, the ack says why, and the batch ends', async () => {
    const p = await startPipeline({ startMs: Date.now() });
    // The reading stops at its kill point (its rows stored, the batch VALIDATING) until the test lets it go on.
    const reading = gate();
    held.push(reading.open);
    const { daemon, inbox, outbox } = await pipelineDaemon(
      p,
      {
        inbox: { stableForMs: 100, rescanIntervalMs: 50 },
        batch: { onInvalidRows: 'skip-rows', balanceCheck: { enabled: false } },
        submit: { notFoundGraceMs: 0, unsafeShortGrace: true },
      },
      p.clock,
      { faultPoint: (name) => (name === 'mid-read' ? reading.at() : undefined) },
    );
    await daemon.start();
    const refs = ['CR-1', 'CR-2', 'CR-3'];
    // Line 5 is invalid: it stays REJECTED for its own reason, not for the cancel.
    await writeFile(join(inbox, 'mistake.csv'), csvFile([...refs.map((r) => csvRow(r)), csvRow('CR-4', { payoutAmount: '-5' })]));
    await tickUntil(p, daemon, () => reading.reached(), 'the reading to reach its mid-read point');
    const { id } = (await p.db('batches').first('id')) as { id: string };
    expect((await p.batch(id)).state).toBe('VALIDATING');

    const readSoFar = (await p.db('payouts').where({ batch_id: id }).count({ n: '*' }))[0] as { n: number | string };
    const cancel = await payoutd(p, ['cancel', '--batch', id, '--reason', 'dropped by mistake']);
    expect(cancel.stderr).toBe('');
    expect(cancel.code).toBe(0);
    expect(cancel.stdout).toContain(`batch ${id} is being read (VALIDATING): cancelled before any row was sent`);
    expect((await p.batch(id)).cancelReason).toBe('cancelled by an operator: dropped by mistake');

    reading.open();
    await waitFor(async () => (await p.batch(id)).state === 'COMPLETE', 'the cancelled batch to end', 15_000);
    expect(p.createRequests()).toBe(0);
    const rows = await p.db('payouts').where({ batch_id: id }).orderBy('line').select('line', 'state', 'reason_code', 'reason');
    expect(rows).toEqual([
      ...refs.map((_, i) => ({
        line: i + 2,
        state: 'NOT_SUBMITTED',
        reason_code: 'CANCELLED_BY_OPERATOR',
        reason: 'cancelled by an operator: dropped by mistake',
      })),
      expect.objectContaining({ line: 5, state: 'INVALID' }),
    ]);

    const name = `${id}_mistake.csv`;
    const ack = await records(join(outbox, `${name}.ack.csv`));
    expect(ack.filter((r) => r['verdict'] === 'TOTAL').map((r) => r['reason'])).toEqual([
      expect.stringMatching(/accepted 0 rows, 0\.00; rejected 4 rows, .*\. Batch CANCELLED: an operator cancelled the batch/),
    ]);
    expect(ack.find((r) => r['verdict'] === 'CANCELLED')?.['reason']).toBe(
      'cancelled by an operator: dropped by mistake (while the file was being read, before any row was sent): no row of this file is paid; to pay any of its rows, send them again in a new file',
    );
    expect(ack.filter((r) => r['line'] !== '').map((r) => [r['line'], r['verdict'], r['reason']?.split(/[: ]/)[0]])).toEqual([
      ['2', 'REJECTED', 'CANCELLED_BY_OPERATOR'],
      ['3', 'REJECTED', 'CANCELLED_BY_OPERATOR'],
      ['4', 'REJECTED', 'CANCELLED_BY_OPERATOR'],
      ['5', 'REJECTED', 'AMOUNT_NEGATIVE'],
    ]);
    await waitFor(async () => (await readdir(outbox)).includes(`${name}.result.csv`), 'the result file');
    const result = await records(join(outbox, `${name}.result.csv`));
    expect(result.map((r) => [r['line'], r['status']])).toEqual([
      ['2', 'NOT_SUBMITTED'],
      ['3', 'NOT_SUBMITTED'],
      ['4', 'NOT_SUBMITTED'],
      ['5', 'REJECTED'],
    ]);

    const events = await listBatchEvents(p.db, id);
    expect(events.map((e) => e.type)).toEqual(['received', 'cancelled', 'accepted', 'completed']);
    // Told at once: the rows read so far, and no count of rows stopped yet (the reading goes on); the acceptance counts them.
    expect(events[1]?.data).toMatchObject({
      reason: 'cancelled by an operator: dropped by mistake',
      beingRead: true,
      notSubmitted: null,
      rowsRead: Number(readSoFar.n),
    });
    expect(events[2]?.data).toMatchObject({ validCount: 3, cancelledRows: 3, totals: {} });
    expect(events[3]?.data).toMatchObject({ shownState: 'CANCELLED', reason: 'cancelled by an operator: dropped by mistake' });

    // Cancelled once: a second cancel is refused, and says when and why the first was made.
    const again = await payoutd(p, ['cancel', '--batch', id, '--reason', 'again']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(`BATCH_ALREADY_CANCELLED: batch ${id} was already cancelled at`);
  });

  it('of a batch received and not yet read: read later, it is accepted with every valid row NOT_SUBMITTED and nothing sent', async () => {
    const p = await startPipeline();
    const claimed = await p.claim('queued.csv', csvFile([csvRow('CQ-1'), csvRow('CQ-2')]));
    // As the intake records a claimed file before it reads it (a restart in between leaves it so).
    const { storedPath, sha256, size, mtimeMs, doneMarker } = claimed;
    const file = { id: 'B-QUEUED', fileName: claimed.originalName, storedPath, controlPath: null, sha256, size, mtimeMs, doneMarker };
    await insertBatch(p.db, receivedBatch(file, p.clock.now()));
    expect(await cancelReadyRows(p.db, 'B-QUEUED', 'cancelled by an operator: queued by mistake', p.clock.now(), 'ops')).toEqual({
      notSubmitted: 0,
      claimed: 0,
      unknown: 0,
      beingRead: 'RECEIVED',
    });
    const batch = await p.intake.process('B-QUEUED');
    expect([batch.state, batch.validCount, batch.holdCode]).toEqual(['ACTIVE', 2, null]);
    const [cancelled, accepted] = (await listBatchEvents(p.db, 'B-QUEUED')).filter((e) => e.type !== 'received');
    expect(cancelled?.data).toMatchObject({ beingRead: true, notSubmitted: null, rowsRead: 0 });
    expect(accepted?.data).toMatchObject({ cancelledRows: 2, totals: {} });
    expect(await p.states('B-QUEUED')).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    await p.submit();
    expect(p.createRequests()).toBe(0);
    expect(p.effects.filter((e) => e.kind === 'ack').map((e) => e.storedState)).toEqual(['VALIDATING']);
  });

  it('a cancel made after the acceptance checked for one is done by the move to ACTIVE: no row READY, none claimed', async () => {
    const p = await startPipeline();
    const acks: { ackWrittenAt: number | null | undefined }[] = [];
    // The approval gate runs after the acceptance looked for a cancel and before the batch is ACTIVE: the cancel lands there.
    const intake = new BatchIntake(
      {
        db: p.db,
        clock: p.clock,
        logger: p.logger,
        effects: {
          writeAck: async () => '',
          draftAck: async (b) => ({
            ready: null,
            write: async () => {
              acks.push({ ackWrittenAt: (await p.batch(b.id)).ackWrittenAt });
              return '';
            },
            discard: async () => undefined,
          }),
          writeFileRejection: async () => '',
          writeResult: async () => undefined,
        },
        holds: p.holds,
        approval: {
          atAcceptance: async (b) => {
            expect(await cancelReadyRows(p.db, b.id, 'cancelled by an operator: late', p.clock.now(), 'ops')).toEqual({
              notSubmitted: 0,
              claimed: 0,
              unknown: 0,
              beingRead: 'VALIDATING',
            });
            return { kind: 'release' };
          },
        },
      },
      {
        format: DEFAULT_BATCH_FORMAT,
        rules: DEFAULT_VALIDATION_RULES,
        onInvalidRows: 'reject-file',
        rejectedDir: join(p.dir, 'rejected'),
        instanceId: 'test',
        leaseMs: 120_000,
      },
    );
    const batch = await intake.receive(await p.claim('late.csv', csvFile([csvRow('CL-1'), csvRow('CL-2')])));
    expect(batch.state).toBe('ACTIVE');
    expect(await p.states(batch.id)).toEqual(['NOT_SUBMITTED', 'NOT_SUBMITTED']);
    expect(await claimReadyRows(p.db, 10, p.clock.now())).toEqual([]);
    // The batch's accepted money leaves out the rows its cancel stopped, and its acceptance counts them.
    expect(JSON.parse(batch.acceptedTotalsJson ?? 'null')).toEqual({});
    const events = await listBatchEvents(p.db, batch.id);
    expect(events.map((e) => e.type)).toEqual(['received', 'cancelled', 'accepted']);
    expect(events[1]?.data).toMatchObject({ beingRead: true, notSubmitted: null, rowsRead: 2 });
    expect(events[2]?.data).toMatchObject({ validCount: 2, cancelledRows: 2, totals: {} });
    // The ack written before the cancel called its rows accepted: it is owed again, now with the cancel.
    expect(acks).toHaveLength(1);
    expect(batch.ackWrittenAt).toBeNull();
    await p.submit();
    expect(p.createRequests()).toBe(0);
  });
});

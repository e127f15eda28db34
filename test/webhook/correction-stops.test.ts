/**
 * A corrected result file is recorded before it goes into the outbox: a stop after the record, or after the file,
 * writes the same file again (never other content under its name), and a new difference gets the next name. Its
 * retry file is a version of its own, and a retry file that cannot be written never holds the correction back.
 * Rows made final through the real sandbox, signed deliveries to the real receiver, the poller's checks and the
 * finisher on a real SQLite file; a stop is a fault point that ends the finisher's pass there.
 */
import { copyFile, mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import { recordCorrection } from '../../src/store/index.js';
import { closePipelines, type Pipeline } from '../pipeline/harness.js';
import { checkOwed, deliver, finalRows, stoppingFinisher } from './final-rows-world.js';
import { closeAll } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

async function outboxOf(p: Pipeline): Promise<string> {
  const outbox = join(p.dir, 'outbox');
  await mkdir(outbox, { recursive: true });
  return outbox;
}

const corrected = async (outbox: string): Promise<string[]> =>
  (await readdir(outbox)).filter((f) => f.includes('.result.corrected-')).sort();
const retries = async (outbox: string): Promise<string[]> => (await readdir(outbox)).filter((f) => f.includes('.retry.')).sort();

function messages(p: Pipeline, text: string): string[] {
  return p.logLines.map((l) => String((JSON.parse(l) as { msg: unknown }).msg)).filter((m) => m.includes(text));
}

/** A finished batch of LC-1 and LC-2, both CANCELLED, whose LC-1 the service then pays and says so: a check is owed. */
async function reversedToPaid(): Promise<Awaited<ReturnType<typeof finalRows>> & { outbox: string; name: string }> {
  const world = await finalRows({ 'LC-1': 'CANCELLED', 'LC-2': 'CANCELLED' });
  const { p, h, payoutIds } = world;
  const outbox = await outboxOf(p);
  expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
  const name = ((await readdir(outbox)).find((f) => f.endsWith('.result.csv')) as string).slice(0, -'.result.csv'.length);
  p.clock.advance(60_000);
  const payoutId = payoutIds.get('LC-1') as string;
  expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
  await deliver(h, { payoutId, merchantReferenceId: 'LC-1', status: 'PAID' });
  await checkOwed(p, 'LC-1');
  return { ...world, outbox, name };
}

describe('a stop while a finished batch is corrected', () => {
  it('after the correction is recorded, before its file: the file written later is what was recorded, the change after it the next', async () => {
    const { p, batchId, outbox, name } = await reversedToPaid();
    await stoppingFinisher(p, outbox, 'after-correction-intent').pass();
    // Recorded, nothing in the outbox yet.
    expect(await corrected(outbox)).toEqual([]);
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 1, resultCorrectionsWritten: 0 });

    p.clock.advance(1000);
    await p.poll(); // the service answers: PAID
    await stoppingFinisher(p, outbox).pass(); // restarted
    expect(await corrected(outbox)).toEqual([`${name}.result.corrected-1.csv`, `${name}.result.corrected-2.csv`]);
    const first = await readFile(join(outbox, `${name}.result.corrected-1.csv`), 'utf8');
    expect(first).toContain('payoutd is asking the payout service');
    expect(first).not.toContain('now reports PAID');
    const second = await readFile(join(outbox, `${name}.result.corrected-2.csv`), 'utf8');
    expect(second).toContain(`supersedes ${name}.result.corrected-1.csv: the note of this row's reason changed`);
    expect(second).toContain('now reports PAID');
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 2, resultCorrectionsWritten: 2 });
  });

  it('after the file, before it counts: finance booked it; the same name keeps the same content, the change gets the next name', async () => {
    const { p, batchId, outbox, name } = await reversedToPaid();
    await stoppingFinisher(p, outbox, 'after-correction-file').pass();
    const file = `${name}.result.corrected-1.csv`;
    expect(await corrected(outbox)).toEqual([file]);
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 1, resultCorrectionsWritten: 0 });
    const booked = join(p.dir, 'booked');
    await mkdir(booked);
    await copyFile(join(outbox, file), join(booked, file));

    p.clock.advance(1000);
    await p.poll();
    const restarted = stoppingFinisher(p, outbox);
    await restarted.pass();
    await restarted.pass();
    expect(await readFile(join(outbox, file), 'utf8')).toBe(await readFile(join(booked, file), 'utf8'));
    expect(await corrected(outbox)).toEqual([file, `${name}.result.corrected-2.csv`]);
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 2, resultCorrectionsWritten: 2 });
    expect(messages(p, `${name}.result.corrected-1.csv supersedes ${name}.result.csv`)).toHaveLength(1);
    expect(messages(p, `${name}.result.corrected-2.csv supersedes ${name}.result.corrected-1.csv`)).toHaveLength(1);
  });

  it('after the file, then the service agrees: the file is counted and a further correction withdraws its note', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'RC-1': 'PAID', 'RC-2': 'PAID' });
    const outbox = await outboxOf(p);
    expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
    p.clock.advance(60_000);
    await deliver(h, { payoutId: payoutIds.get('RC-1') as string, merchantReferenceId: 'RC-1', status: 'PENDING' });
    await checkOwed(p, 'RC-1');
    await stoppingFinisher(p, outbox, 'after-correction-file').pass();
    p.clock.advance(1000);
    await p.poll();
    await stoppingFinisher(p, outbox).pass();
    const files = await corrected(outbox);
    expect(files).toHaveLength(2);
    expect(await readFile(join(outbox, files[1] as string), 'utf8')).toContain("the note of this row's reason is withdrawn");
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 2, resultCorrectionsWritten: 2 });
  });
});

describe('the retry file of a corrected batch', () => {
  it('cannot be written (no retry reference fits): the correction is written once and counted, the retry failure logged', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'LC-100001': 'CANCELLED', 'LC-100002': 'CANCELLED' });
    const outbox = await outboxOf(p);
    const finisher = stoppingFinisher(p, outbox, undefined, { referenceMaxLength: 10 });
    expect(await finisher.pass()).toBe(1);
    p.clock.advance(60_000);
    await deliver(h, { payoutId: payoutIds.get('LC-100001') as string, merchantReferenceId: 'LC-100001', status: 'PENDING' });
    await checkOwed(p, 'LC-100001');
    for (let i = 0; i < 3; i++) {
      await finisher.pass();
      p.clock.advance(1000);
    }
    expect(messages(p, 'cannot write the corrected result file')).toEqual([]);
    expect(messages(p, 'the retry file of a corrected result file was not written')).toHaveLength(1);
    expect(messages(p, "a finished batch's result file corrected")).toHaveLength(1);
    expect(await p.batch(batchId)).toMatchObject({ resultCorrections: 1, resultCorrectionsWritten: 1 });
  });

  it('is a new version when a correction leaves a row out or puts it back, and the correction says which', async () => {
    const { p, h, payoutIds } = await finalRows({ 'LC-1': 'CANCELLED', 'LC-2': 'CANCELLED' });
    const outbox = await outboxOf(p);
    const finisher = stoppingFinisher(p, outbox);
    expect(await finisher.pass()).toBe(1);
    const name = ((await readdir(outbox)).find((f) => f.endsWith('.result.csv')) as string).slice(0, -'.result.csv'.length);
    expect(await retries(outbox)).toEqual([`${name}.retry.csv`]);
    p.clock.advance(60_000);

    // A stale event: LC-1 is asked about, and left out meanwhile.
    await deliver(h, { payoutId: payoutIds.get('LC-1') as string, merchantReferenceId: 'LC-1', status: 'PENDING' });
    await checkOwed(p, 'LC-1');
    await finisher.pass();
    expect(await retries(outbox)).toEqual([`${name}.retry.corrected-1.csv`]);
    const first = await readFile(join(outbox, `${name}.retry.corrected-1.csv`), 'utf8');
    expect(first).toContain('LC-2-R1');
    expect(first).not.toContain('LC-1');
    expect(await readFile(join(outbox, `${name}.result.corrected-1.csv`), 'utf8')).toContain(
      'it is left out of retry files written from now on: do not retry it from an earlier retry file',
    );
    expect(
      messages(p, `a new retry file ${name}.retry.corrected-1.csv was written: it leaves out line 2 LC-1; ${name}.retry.csv removed`),
    ).toHaveLength(1);

    // The service confirms CANCELLED: LC-1 is put back, under the same reference as before.
    p.clock.advance(1000);
    await p.poll();
    await finisher.pass();
    expect(await retries(outbox)).toEqual([`${name}.retry.corrected-2.csv`]);
    const second = await readFile(join(outbox, `${name}.retry.corrected-2.csv`), 'utf8');
    expect(second).toContain('LC-1-R1');
    expect(second).toContain('LC-2-R1');
    expect(await readFile(join(outbox, `${name}.result.corrected-2.csv`), 'utf8')).toContain(
      'retry files written from now on offer it again',
    );
    expect(messages(p, `a new retry file ${name}.retry.corrected-2.csv was written: it puts back line 2 LC-1`)).toHaveLength(1);
  });
});

describe('a retry version written again after a stop', () => {
  /** An instance that recorded correction 1 and wrote its files, then stopped before counting them. */
  async function stoppedAfterRetry(p: Pipeline, outbox: string, batchId: string, xlsx: boolean): Promise<void> {
    expect(await recordCorrection(p.db, batchId, 1, p.clock.now())).toBe(true);
    const dying = new BatchOutbox(p.db, outbox, false, undefined, { xlsx, retryFiles: true });
    const batch = await p.batch(batchId);
    const files = await dying.writeCorrection(batch, 1);
    if (xlsx) await dying.writeCorrectionTwin(batch, 1);
    await dying.writeCorrectionRetry(batch, 1, files.changes);
  }

  it('holds the rows its correction shows, the same again, though another row was noted meanwhile', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'LC-1': 'CANCELLED', 'LC-2': 'CANCELLED', 'LC-3': 'CANCELLED' });
    const outbox = await outboxOf(p);
    expect(await stoppingFinisher(p, outbox).pass()).toBe(1);
    p.clock.advance(60_000);
    const paid = payoutIds.get('LC-1') as string;
    expect(p.sandbox.reverse(paid, 'PAID')).toBe(true);
    await deliver(h, { payoutId: paid, merchantReferenceId: 'LC-1', status: 'PAID' });
    await checkOwed(p, 'LC-1');
    // LC-2 is noted after correction 1 was recorded: correction 1 does not show it, nor does its retry version.
    expect(await recordCorrection(p.db, batchId, 1, p.clock.now())).toBe(true);
    await deliver(h, { payoutId: payoutIds.get('LC-2') as string, merchantReferenceId: 'LC-2', status: 'PENDING' });
    await checkOwed(p, 'LC-2');
    const dying = new BatchOutbox(p.db, outbox, false, undefined, { xlsx: false, retryFiles: true });
    const batch = await p.batch(batchId);
    await dying.writeCorrectionRetry(batch, 1, (await dying.writeCorrection(batch, 1)).changes);
    const [version] = await retries(outbox);
    expect(version).toMatch(/\.retry\.corrected-1\.csv$/);
    const taken = await readFile(join(outbox, version as string), 'utf8');
    expect(taken).toContain('LC-2-R1');
    expect(taken).toContain('LC-3-R1');
    expect(taken).not.toContain('LC-1-R1');

    // The service answers (LC-1 PAID, LC-2 as recorded); the restarted finisher writes correction 1 again.
    p.clock.advance(1000);
    await p.poll();
    const again = stoppingFinisher(p, outbox);
    await again.pass();
    await again.pass();
    expect(await readFile(join(outbox, version as string), 'utf8')).toBe(taken);
  });

  it('keeps its .xlsx twin', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'LC-1': 'CANCELLED', 'LC-2': 'CANCELLED' });
    const outbox = await outboxOf(p);
    expect(await stoppingFinisher(p, outbox, undefined, { xlsx: true }).pass()).toBe(1);
    p.clock.advance(60_000);
    await deliver(h, { payoutId: payoutIds.get('LC-1') as string, merchantReferenceId: 'LC-1', status: 'PENDING' });
    await checkOwed(p, 'LC-1');
    await stoppedAfterRetry(p, outbox, batchId, true);
    const written = await retries(outbox);
    expect(written.map((f) => f.replace(/^.*\.retry\./, ''))).toEqual(['corrected-1.csv', 'corrected-1.xlsx']);
    await stoppingFinisher(p, outbox, undefined, { xlsx: true }).pass();
    expect(await retries(outbox)).toEqual(written);
  });
});

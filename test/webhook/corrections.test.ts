/**
 * What a finished batch's files say after a payout.updated event contradicted one of its rows, step by step:
 * rows made final through the real sandbox, signed deliveries to the real receiver, the poller's checks and the
 * finisher run by the test on a real SQLite file. An answer the service gives that confirms the row never puts a
 * file back into the outbox unless a note was already shown; any later result file is a correction under a name
 * of its own. A check made owed again while the service's answer to an earlier one was on its way stays owed.
 */
import { mkdir, readFile, readdir, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import ExcelJS from 'exceljs';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchFinisher } from '../../src/daemon/finisher.js';
import { BatchOutbox } from '../../src/daemon/outbox.js';
import type { PayoutQueryAnswer, PayoutService } from '../../src/domain/payout.js';
import { ServiceChecks } from '../../src/poll/checks.js';
import { closePipelines, type Pipeline } from '../pipeline/harness.js';
import { batchFiles, checkOwed, deliver, finalRows, pipelineLines } from './final-rows-world.js';
import { PATH, closeAll, startReceiver, type Harness } from './helpers.js';

afterEach(async () => {
  await closeAll();
  await closePipelines();
});

/** A finisher alone on the pipeline's database, writing into an outbox folder of its own (retry files on). */
async function finisherOf(p: Pipeline, xlsx = false): Promise<{ finisher: BatchFinisher; outbox: string }> {
  const outbox = join(p.dir, 'outbox');
  await mkdir(outbox, { recursive: true });
  const finisher = new BatchFinisher(
    {
      db: p.db,
      clock: p.clock,
      logger: p.logger,
      outbox: new BatchOutbox(p.db, outbox, false, undefined, { xlsx, retryFiles: true }),
      continued: { dir: outbox, bom: false, maxRecordBytes: 65536, encoding: 'utf-8' },
    },
    { instanceId: 'a', leaseMs: 30_000, shared: false },
  );
  return { finisher, outbox };
}

/** Finance takes the batch's result and summary files out of the outbox (to book them). */
async function takeResultFiles(p: Pipeline, outbox: string): Promise<string[]> {
  const booked = join(p.dir, 'booked');
  await mkdir(booked, { recursive: true });
  const taken = (await readdir(outbox)).filter((f) => /\.(result|summary)\.csv$/.test(f));
  for (const f of taken) await rename(join(outbox, f), join(booked, f));
  return taken;
}

/** The outbox's result-like CSV files (result, summary, and their corrections), by name. */
async function resultLike(outbox: string): Promise<string[]> {
  return (await readdir(outbox)).filter((f) => /\.(result|summary)\..*csv$/.test(f)).sort();
}

/** The first sheet of an .xlsx: its header, and its rows by reference. */
async function sheet(path: string): Promise<{ header: string[]; rows: Map<string, Record<string, string>> }> {
  const wb = new ExcelJS.Workbook();
  await wb.xlsx.readFile(path);
  const ws = wb.worksheets[0] as ExcelJS.Worksheet;
  const header = (ws.getRow(1).values as unknown[]).slice(1).map(String);
  const rows = new Map<string, Record<string, string>>();
  for (let r = 2; r <= ws.rowCount; r++) {
    const cells = ws.getRow(r);
    const row = Object.fromEntries(header.map((h, i) => [h, String(cells.getCell(i + 1).value ?? '')]));
    rows.set(row['merchant_reference_id'] as string, row);
  }
  return { header, rows };
}

/** A CSV file's records by reference. */
async function records(path: string): Promise<Map<string, Record<string, string>>> {
  const rows = parse(await readFile(path, 'utf8'), { columns: true }) as Record<string, string>[];
  return new Map(rows.map((r) => [r['merchant_reference_id'] as string, r]));
}

/** The pipeline's log messages that contain `text`. */
function messages(p: Pipeline, text: string): string[] {
  return p.logLines.map((l) => String((JSON.parse(l) as { msg: unknown }).msg)).filter((m) => m.includes(text));
}

describe('a finished batch all PAID, and an event for one row saying PENDING that the service does not confirm', () => {
  it('answered before the batch was looked at again: no file comes back into the outbox, and the log says nothing changes', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'RC-1': 'PAID', 'RC-2': 'PAID' });
    const { finisher, outbox } = await finisherOf(p);
    expect(await finisher.pass()).toBe(1);
    expect((await p.batch(batchId)).state).toBe('COMPLETE');
    expect(await takeResultFiles(p, outbox)).toHaveLength(2);
    p.clock.advance(60_000);

    await deliver(h, { payoutId: payoutIds.get('RC-1') as string, merchantReferenceId: 'RC-1', status: 'PENDING' });
    await checkOwed(p, 'RC-1');
    await p.poll();
    expect(await p.row('RC-1')).toMatchObject({ state: 'PAID', serviceCheck: null, serviceNote: null });
    expect(messages(p, 'the payout.updated event is not confirmed; nothing changes')).toHaveLength(1);

    await finisher.pass();
    await finisher.pass();
    // Nothing for an importer to book a second time.
    expect(await resultLike(outbox)).toEqual([]);
    expect(messages(p, 'written again')).toEqual([]);
    expect(messages(p, 'corrected')).toEqual([]);
    expect((await p.batch(batchId)).resultCorrections).toBe(0);
  });

  it('shown as being asked in a corrected result file first: a second correction withdraws the note and says so', async () => {
    const { p, h, batchId, payoutIds } = await finalRows({ 'RC-3': 'PAID', 'RC-4': 'PAID' });
    const { finisher, outbox } = await finisherOf(p, true);
    expect(await finisher.pass()).toBe(1);
    const [result] = (await takeResultFiles(p, outbox)).filter((f) => f.endsWith('.result.csv'));
    const name = (result as string).slice(0, -'.result.csv'.length);
    p.clock.advance(60_000);

    const payoutId = payoutIds.get('RC-3') as string;
    await deliver(h, { payoutId, merchantReferenceId: 'RC-3', status: 'PENDING' });
    await checkOwed(p, 'RC-3');
    // The finisher looks before the service is asked: finance is told payoutd is asking, in a correction.
    await finisher.pass();
    expect(await resultLike(outbox)).toEqual([`${name}.result.corrected-1.csv`]);
    const first = await records(join(outbox, `${name}.result.corrected-1.csv`));
    expect(first.get('RC-3')?.['status']).toBe('PAID');
    expect(first.get('RC-3')?.['reason']).toContain('payoutd is asking the payout service');
    expect(first.get('RC-3')?.['correction']).toMatch(
      new RegExp(`^supersedes ${name.replace(/[.]/g, '\\.')}\\.result\\.csv: a note is added to this row's reason`),
    );
    expect(first.get('RC-4')?.['correction']).toBe('');
    // Its .xlsx twin has the same name but for its extension, and the same correction column.
    const twin = await sheet(join(outbox, `${name}.result.corrected-1.xlsx`));
    expect(twin.header.at(-1)).toBe('correction');
    expect(twin.rows.get('RC-3')?.['correction']).toBe(first.get('RC-3')?.['correction']);
    expect(messages(p, `result file corrected: ${name}.result.corrected-1.csv supersedes ${name}.result.csv`)).toHaveLength(1);

    p.clock.advance(1000);
    await p.poll();
    expect(await p.row('RC-3')).toMatchObject({ state: 'PAID', serviceCheck: null, serviceNote: null });
    expect(messages(p, "the note the batch's result file shows of it is withdrawn by a corrected result file")).toHaveLength(1);
    await finisher.pass();
    expect(await resultLike(outbox)).toEqual([`${name}.result.corrected-1.csv`, `${name}.result.corrected-2.csv`]);
    const second = await records(join(outbox, `${name}.result.corrected-2.csv`));
    expect(second.get('RC-3')?.['reason']).toBe('');
    expect(second.get('RC-3')?.['correction']).toContain(
      `supersedes ${name}.result.corrected-1.csv: the note of this row's reason is withdrawn, the payout service shows the row as recorded (PAID); it was: a payout.updated event reported PENDING for payout ${payoutId}`,
    );
    expect(second.get('RC-4')?.['correction']).toBe('');
    const told = messages(p, `result file corrected: ${name}.result.corrected-2.csv supersedes ${name}.result.corrected-1.csv`);
    expect(told).toHaveLength(1);
    expect(told[0]).toContain('line 2 RC-3: note withdrawn, the payout service shows it as recorded');
    expect(told[0]).toContain('book it as a correction of that file, not as a new result');

    // Nothing is left to correct.
    await finisher.pass();
    expect(await resultLike(outbox)).toHaveLength(2);
    expect((await p.batch(batchId)).resultCorrections).toBe(2);
  });
});

/**
 * The real client, its answers to queries by payoutId held until the test lets them through: the service's
 * answer is taken when asked, and reaches the checks later, as over a slow link.
 */
class HeldAnswers implements PayoutService {
  private release: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.release = resolve));
  private answered: () => void = () => undefined;
  /** Resolves once the service has answered a query (its answer is being held). */
  readonly asked = new Promise<void>((resolve) => (this.answered = resolve));

  constructor(private readonly real: PayoutService) {}

  /** Lets held answers, and every later one, through. */
  letThrough(): void {
    this.release();
  }

  async queryByPayoutIds(payoutIds: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer> {
    const answer = await this.real.queryByPayoutIds(payoutIds, signal);
    this.answered();
    await this.gate;
    return answer;
  }

  queryByReferences(refs: string[], signal?: AbortSignal): Promise<PayoutQueryAnswer> {
    return this.real.queryByReferences(refs, signal);
  }
  createPayout(...a: Parameters<PayoutService['createPayout']>): ReturnType<PayoutService['createPayout']> {
    return this.real.createPayout(...a);
  }
  balances(signal?: AbortSignal): ReturnType<PayoutService['balances']> {
    return this.real.balances(signal);
  }
  exchangeRates(currencies: string[], signal?: AbortSignal): ReturnType<PayoutService['exchangeRates']> {
    return this.real.exchangeRates(currencies, signal);
  }
}

/** A receiver with the default follow-up on the pipeline's database, and the checks asked through the real client, answers held. */
interface HeldChecks {
  h: Harness;
  held: HeldAnswers;
  checks: ServiceChecks;
  stop: AbortController;
}

async function heldChecks(p: Pipeline, wake?: () => void): Promise<HeldChecks> {
  const h = await startReceiver({ db: p.db, clock: p.clock, defaultFollowUp: true, path: PATH, wake });
  const held = new HeldAnswers(p.client);
  const checks = new ServiceChecks(
    { db: p.db, service: held, clock: p.clock, logger: p.logger },
    { queryMaxIds: 100, minIntervalMs: 1000, maxIntervalMs: 5000 },
  );
  return { h, held, checks, stop: new AbortController() };
}

/**
 * Asks the owed checks; while the service's answer is held, the service reverses the payout to `status` and says so
 * in an event, followed up (then `delivered` runs), before the answer is let through.
 */
async function reversedWhileAsked(
  p: Pipeline,
  w: HeldChecks,
  event: { payoutId: string; merchantReferenceId: string; status: 'PAID' | 'CANCELLED' },
  delivered: () => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const asking = w.checks.runDue(w.stop.signal);
  await w.held.asked;
  expect(p.sandbox.reverse(event.payoutId, event.status)).toBe(true);
  await deliver(w.h, event);
  await delivered();
  w.held.letThrough();
  await asking;
}

describe('a second event while the service is being asked about the first', () => {
  it('a CANCELLED row reversed to PAID while the answer to an earlier check is on its way: the older answer does not close the check', async () => {
    const { p, batchId, payoutIds } = await finalRows({ 'LC-1': 'CANCELLED', 'LC-2': 'CANCELLED' });
    let wakes = 0;
    const w = await heldChecks(p, () => wakes++);
    const { checks, stop } = w;
    const payoutId = payoutIds.get('LC-1') as string;

    // A stale event: a check is owed, and the service answers it (CANCELLED, as recorded).
    await deliver(w.h, { payoutId, merchantReferenceId: 'LC-1', status: 'PENDING' });
    await checkOwed(p, 'LC-1');
    // Before that answer arrives the service pays the payout after all, and says so (same receiver clock).
    await reversedWhileAsked(p, w, { payoutId, merchantReferenceId: 'LC-1', status: 'PAID' }, async () => {
      await expect.poll(() => wakes, { timeout: 5000, interval: 5 }).toBe(2);
    });

    const row = await p.row('LC-1');
    expect(row).toMatchObject({ state: 'CANCELLED', serviceCheck: 'PAYOUT' });
    expect(row.serviceNote).toContain('payoutd is asking the payout service');
    expect(messages(p, 'the payout.updated event is not confirmed')).toEqual([]);
    expect(messages(p, 'its check stays owed and is asked again')).toHaveLength(1);
    let files = await batchFiles(p, batchId, 'outbox-while-asking');
    expect(files.retry).toContain('LC-2-R1');
    expect(files.retry).not.toContain('LC-1');

    // Asked again: the service says PAID, and the row is never offered to be paid again.
    await checks.runDue(stop.signal);
    const after = await p.row('LC-1');
    expect(after).toMatchObject({ state: 'CANCELLED', serviceCheck: null });
    expect(after.serviceNote).toContain(`the payout service now reports PAID for payout ${payoutId}, recorded CANCELLED here`);
    files = await batchFiles(p, batchId, 'outbox-answered');
    expect(files.retry).not.toContain('LC-1');
    expect(files.result.get('LC-1')?.reason).toContain('now reports PAID');
    expect(pipelineLines(p, 'LC-1').some((l) => String(l['msg']).startsWith('THE PAYOUT SERVICE CONTRADICTS'))).toBe(true);
  });

  it('a CANCELLED row reported PAID, reversed back while the answer to its check is on its way: that older answer notes nothing', async () => {
    const { p, batchId, payoutIds } = await finalRows({ 'LC-3': 'CANCELLED' });
    const w = await heldChecks(p);
    const payoutId = payoutIds.get('LC-3') as string;

    // The service pays the payout after all and says so: a check is owed, and the service answers it (PAID).
    expect(p.sandbox.reverse(payoutId, 'PAID')).toBe(true);
    await deliver(w.h, { payoutId, merchantReferenceId: 'LC-3', status: 'PAID' });
    await checkOwed(p, 'LC-3');
    // Before that answer arrives the service cancels it again; its event agrees with the row, and is followed up.
    await reversedWhileAsked(p, w, { payoutId, merchantReferenceId: 'LC-3', status: 'CANCELLED' });

    // The older answer (PAID) closes nothing and notes nothing: the check stays owed.
    const row = await p.row('LC-3');
    expect(row).toMatchObject({ state: 'CANCELLED', serviceCheck: 'PAYOUT' });
    expect(row.serviceNote).toContain('payoutd is asking the payout service');
    expect(messages(p, 'THE PAYOUT SERVICE CONTRADICTS')).toEqual([]);
    expect(messages(p, 'its check stays owed and is asked again')).toHaveLength(1);

    // Asked again: the service shows the row as recorded, and no file says otherwise.
    await w.checks.runDue(w.stop.signal);
    expect(await p.row('LC-3')).toMatchObject({ state: 'CANCELLED', serviceCheck: null, serviceNote: null });
    const files = await batchFiles(p, batchId, 'outbox-answered');
    expect(files.result.get('LC-3')?.reason).not.toContain('now reports PAID');
    expect(files.retry).toContain('LC-3-R1');
  });
});

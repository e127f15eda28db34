/**
 * Reconciliation reports whose periods meet (`--since` of the second is the end of the first) list each payout
 * once, however its creation's write and the first report's end meet: the checks both engines run
 * (test/finance/consecutive-reports.test.ts, test/postgres/consecutive-reports.test.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { expect } from 'vitest';
import { reconciliationReport, type ReconciliationOutput } from '../../src/cli/commands/finance.js';
import type { ResolvedConfig } from '../../src/config/index.js';
import { ManualClock, type Clock } from '../../src/domain/clock.js';
import type { Database } from '../../src/store/db.js';
import { recordAnswers } from '../../src/store/answers.js';
import { GroupCommit } from '../../src/store/group-commit.js';
import type { RowMove } from '../../src/store/moves.js';
import { decideCreated } from '../../src/submit/outcome.js';
import { T0, addBatch, addRows, request, validRow } from './helpers.js';

/** Batch B1 with INV-1 and INV-2 sent (CREATING), their answers awaited; the rows. */
export async function sentRows(db: Database): Promise<RowMove['row'][]> {
  await addBatch(db, 'B1', 'jan.csv');
  await addRows(db, [validRow('B1', 2, request('INV-1')), validRow('B1', 3, request('INV-2'))]);
  await db('payouts').update({ state: 'CREATING' });
  return (await db('payouts').orderBy('line').select('id', 'batch_id as batchId')) as RowMove['row'][];
}

/** The move the submitter makes of a create answered with `payoutId` (src/submit/submitter.ts, sendCreate). */
export function answered(row: RowMove['row'], payoutId: string, clock: Clock): RowMove {
  const created = { payoutId, merchantReferenceId: '', rate: '56.12', deductionAmount: '26.78', totalFee: '0.5', feeCurrency: 'USDT' };
  const d = decideCreated(created, clock, 60_000);
  return { row, from: 'CREATING', to: d.to, patch: d.patch, history: { event: d.event, outcome: d.outcome, detail: d.detail } };
}

/** The references a report lists, in its order. */
export async function referencesIn(path: string): Promise<string[]> {
  const [, ...records] = parse(await readFile(path, 'utf8'), { bom: true }) as string[][];
  return records.map((r) => r[3] as string);
}

/** `payoutd report --since` from `sinceMs` to the clock, into `dir`. */
export function reportFrom(
  config: ResolvedConfig,
  dir: string,
  name: string,
  sinceMs: number,
  clock: Clock,
): Promise<ReconciliationOutput> {
  return reconciliationReport(config, { since: new Date(sinceMs).toISOString(), out: join(dir, name) }, clock);
}

/**
 * The answer of INV-1's create arrives (at T0) and waits in its group commit while a report fixes its end (T0 + 1 s);
 * it is written after: stamped then, it is in the next report, which starts at that end. Stamped when it arrived,
 * before the end but committed after the first report read, it was in neither.
 */
export async function checkAnswerWrittenAfterTheEnd(db: Database, config: ResolvedConfig, dir: string): Promise<void> {
  const [inv1, inv2] = (await sentRows(db)) as [RowMove['row'], RowMove['row']];
  const clock = new ManualClock(T0);
  // Two answers make a group: the first waits for the second, which the test sends once the first report is written.
  const answers = new GroupCommit(db, () => clock.now(), 60_000, 2);
  const first = answers.add(answered(inv1, 'P-1', clock));

  const end = T0 + 1000;
  clock.set(end);
  const r1 = await reportFrom(config, dir, 'r1.csv', T0 - 1000, clock);
  expect(await Promise.all([first, answers.add(answered(inv2, 'P-2', clock))])).toEqual([true, true]);
  clock.set(T0 + 2000);
  const r2 = await reportFrom(config, dir, 'r2.csv', end, clock);

  expect({ r1: await referencesIn(r1.path), r2: await referencesIn(r2.path) }).toEqual({ r1: [], r2: ['INV-1', 'INV-2'] });
  const stamped = (await db('payouts').orderBy('line').pluck('created_at_ms')) as (number | string)[];
  expect(stamped.map(Number)).toEqual([T0 + 1000, T0 + 1000]);
}

/**
 * An instance whose clock is behind the report's (another host, a clock set back) records INV-1's answer just
 * after a report fixed its end: stamped at that end, not before it by its own clock, it is in the next report.
 */
export async function checkClockBehindTheReport(db: Database, config: ResolvedConfig, dir: string): Promise<void> {
  const [inv1] = (await sentRows(db)) as [RowMove['row']];
  const end = T0 + 1000;
  const r1 = await reportFrom(config, dir, 'r1.csv', T0 - 1000, new ManualClock(end));
  const behind = new ManualClock(T0 + 500);
  expect(await recordAnswers(db, [{ moves: [answered(inv1, 'P-1', behind)], at: behind.now() }])).toHaveLength(1);
  const r2 = await reportFrom(config, dir, 'r2.csv', end, new ManualClock(T0 + 2000));

  expect({ r1: await referencesIn(r1.path), r2: await referencesIn(r2.path) }).toEqual({ r1: [], r2: ['INV-1'] });
  expect((await db('payouts').where({ id: inv1.id }).pluck('created_at_ms')).map(Number)).toEqual([end]);
}

/**
 * Row counts per state: of a batch, of every batch (the metrics gauge), of one state's rows. A batch that
 * ended with every row final keeps its counts in its record (`final_counts_json`), so status and the gauge
 * count only the rows of unfinished batches.
 */
import type { Knex } from 'knex';
import { isFinalRowState, ROW_STATES, type RowState } from '../domain/lifecycle.js';
import { PayoutdError } from '../domain/errors.js';
import { ExactTotal } from '../domain/exact-total.js';
import { decimalText, isSummableAmount } from '../domain/money.js';
import type { Database } from './db.js';
import type { BatchRecord } from './batches.js';
import { rowsInState, type IndexedState } from './payouts.js';
import { writtenMoneyAs } from './request-fields.js';
import { whereServiceContradicts } from './service-checks.js';

export type StateCounts = Partial<Record<RowState, number>>;

/** Row counts per state of the rows `payouts` selects, grouped by (batch_id, state), the index's order, and summed here. */
async function countsByState(payouts: Knex.QueryBuilder): Promise<StateCounts> {
  const rows = (await payouts.select('state').count({ n: '*' }).groupBy('batch_id', 'state')) as { state: RowState; n: number | string }[];
  const out: StateCounts = {};
  for (const r of rows) out[r.state] = (out[r.state] ?? 0) + Number(r.n);
  return out;
}

export async function stateCounts(db: Database, batchId: string): Promise<StateCounts> {
  return countsByState(db('payouts').where({ batch_id: batchId }));
}

/** The counts as a batch record keeps them when every row is final (states in lifecycle order); null when one is not. */
export function finalCountsJson(counts: StateCounts): string | null {
  const kept: StateCounts = {};
  for (const state of ROW_STATES) {
    const n = counts[state];
    if (!n) continue;
    if (!isFinalRowState(state)) return null;
    kept[state] = n;
  }
  return JSON.stringify(kept);
}

/** Counts as kept in a batch record; anything else in it is a damaged record, said so rather than shown as counts. */
export function parseFinalCounts(batchId: string, json: string): StateCounts {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    parsed = null;
  }
  const ok =
    parsed !== null &&
    typeof parsed === 'object' &&
    !Array.isArray(parsed) &&
    Object.entries(parsed).every(([state, n]) => isFinalRowState(state as RowState) && Number.isSafeInteger(n) && (n as number) > 0);
  if (!ok) throw new PayoutdError('FINAL_COUNTS_DAMAGED', `the row counts kept for batch ${batchId} are not counts of final rows`);
  return parsed as StateCounts;
}

/** Row counts per state of a batch: as its record keeps them once every row is final, else counted now. */
export async function batchStateCounts(db: Database, batch: Pick<BatchRecord, 'id' | 'finalCountsJson'>): Promise<StateCounts> {
  return batch.finalCountsJson !== null ? parseFinalCounts(batch.id, batch.finalCountsJson) : stateCounts(db, batch.id);
}

/** Row counts per state over every batch (the metrics gauge): kept counts summed, the rest counted now. */
export async function stateCountsOfAllBatches(db: Database): Promise<StateCounts> {
  const kept = (await db('batches').whereNotNull('final_counts_json').select('id', 'final_counts_json')) as {
    id: string;
    final_counts_json: string;
  }[];
  const out = await countsByState(db('payouts').whereIn('batch_id', db('batches').whereNull('final_counts_json').select('id')));
  for (const b of kept) {
    for (const [state, n] of Object.entries(parseFinalCounts(b.id, b.final_counts_json)) as [RowState, number][]) {
      out[state] = (out[state] ?? 0) + n;
    }
  }
  return out;
}

/** Rows in one of the states read alone (creates in flight, outcomes unknown, payouts being followed). */
export async function countRowsInState(db: Database, state: IndexedState): Promise<number> {
  const r = (await rowsInState(db, state).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return Number(r?.n ?? 0);
}

/** Exact sums of a batch's payout amounts per row state and payout currency (status files and events). */
export async function amountsByState(db: Database, batchId: string): Promise<Partial<Record<RowState, Record<string, string>>>> {
  // The money as written: a row's own column only where the cell differs from its request's value (request-fields.ts).
  const rows = (await db('payouts')
    .where({ batch_id: batchId })
    .select('state', writtenMoneyAs(db, 'payoutCurrency', 'currency'), writtenMoneyAs(db, 'payoutAmount', 'amount'))) as {
    state: RowState;
    currency: string | null;
    amount: string | null;
  }[];
  const sums = new Map<RowState, Map<string, ExactTotal>>();
  for (const r of rows) {
    // A rejected row's amount cell may hold anything; what is added is what the summary adds.
    if (r.amount === null || !isSummableAmount(r.amount)) continue;
    const byCurrency = sums.get(r.state) ?? new Map<string, ExactTotal>();
    sums.set(r.state, byCurrency);
    // One currency in any letter case is one total (as in the result files' summary).
    const currency = (r.currency ?? '').toUpperCase();
    const total = byCurrency.get(currency) ?? new ExactTotal();
    byCurrency.set(currency, total);
    total.add(r.amount);
  }
  const out: Partial<Record<RowState, Record<string, string>>> = {};
  for (const state of ROW_STATES) {
    const byCurrency = sums.get(state);
    if (!byCurrency) continue;
    out[state] = Object.fromEntries([...byCurrency].sort(([a], [b]) => (a < b ? -1 : 1)).map(([c, t]) => [c, decimalText(t.toDecimal())]));
  }
  return out;
}

/** A batch's rows, per state, whose recorded outcome the payout service contradicts or may (serviceContradicts). */
export async function contradictedCounts(db: Database, batchId: string): Promise<StateCounts> {
  const rows = (await whereServiceContradicts(db('payouts').where({ batch_id: batchId }), 'payouts')
    .select('state')
    .count({ n: '*' })
    .groupBy('state')) as { state: RowState; n: number | string }[];
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)])) as StateCounts;
}

/** Why a batch's rows in one state are in it: each reason code with as many rows, and one row's reason as an example. */
export interface StateReason {
  code: string | null;
  reason: string | null;
  rows: number;
}

/** The reasons of a batch's rows in `state`, the most rows first (at most `most`); read by the batch's (batch_id, state) index. */
export async function reasonsInState(db: Database, batchId: string, state: RowState, most = 3): Promise<StateReason[]> {
  const rows = (await db('payouts')
    .where({ batch_id: batchId, state })
    .select('reason_code as code')
    .min({ reason: 'reason' })
    .count({ rows: '*' })
    .groupBy('reason_code')
    .orderBy([{ column: 'rows', order: 'desc' }, { column: 'code' }])
    .limit(most)) as { code: string | null; reason: string | null; rows: number | string }[];
  return rows.map((r) => ({ code: r.code, reason: r.reason, rows: Number(r.rows) }));
}

/**
 * Read-only queries behind the finance reports: payouts created in a period, the CANCELLED rows of a batch
 * and the rows holding a merchantReferenceId (retry files). Queries of many rows page with a keyset.
 */
import type { StoredOriginal } from '../domain/leading-zeros.js';
import type { Database } from './db.js';
import { COLUMNS, fromColumns, pagesByLine, type PayoutRow } from './payouts.js';
import { WRITTEN_MONEY_FIELDS, shownMoneyAs, type WrittenMoneyField } from './request-fields.js';
import { PRUNED_DETAILS } from './retention.js';
import { serviceContradicts, type ServiceSaid } from './service-checks.js';
import type { RoundLookup, RoundUse } from '../domain/retry-reference.js';

const numberOrNull = (v: unknown): number | null => (v == null ? null : Number(v));

/**
 * A payout row with the name of the file it came from, its money cells as written (never NULL where its request
 * has them); none of its details once retention began to remove its batch's.
 */
export interface ReportedPayoutRow extends PayoutRow {
  fileName: string;
  /** When retention removed its batch's row details (its money cells are empty then), or null. */
  batchPrunedAt: number | null;
  /** When retention began to remove them, or null: some may be gone while batchPrunedAt is still null. */
  batchPruneStartedAt: number | null;
}

/** The alias each money cell as written is selected under, beside the row's own columns. */
const shownAs = (field: WrittenMoneyField): string => `shown_${COLUMNS[field]}`;

export const DEFAULT_REPORT_PAGE_SIZE = 5000;

/**
 * Rows with a payoutId created in [sinceMs, untilMs) by payoutd's clock, ordered by (created_at_ms, id), in pages
 * that each start after the last key read, so no row is read twice. Only committed rows are read: the period is
 * complete only when untilMs is no later than an end fixed by fixPeriodEnd (./created-at.ts), after which no
 * creation stamped before that end can still be committed. A row's state is as the page that read it found it.
 */
export async function* payoutsCreatedBetween(
  db: Database,
  sinceMs: number,
  untilMs: number,
  pageSize = DEFAULT_REPORT_PAGE_SIZE,
): AsyncGenerator<ReportedPayoutRow> {
  let after: { at: number; id: number } | null = null;
  for (;;) {
    const q = db('payouts as p')
      .join('batches as b', 'b.id', 'p.batch_id')
      .select('p.*', 'b.file_name as report_file_name', 'b.pruned_at as report_pruned_at', 'b.prune_started_at as report_prune_started_at')
      .select(WRITTEN_MONEY_FIELDS.map((f) => shownMoneyAs(db, f, shownAs(f), 'p')))
      .whereNotNull('p.payout_id')
      .andWhere('p.created_at_ms', '>=', sinceMs)
      .andWhere('p.created_at_ms', '<', untilMs);
    // A row-value comparison (SQLite 3.15+, PostgreSQL) can use an index on (created_at_ms, id); an OR cannot.
    if (after) q.andWhereRaw('(p.created_at_ms, p.id) > (?, ?)', [after.at, after.id]);
    const page = (await q.orderBy([{ column: 'p.created_at_ms' }, { column: 'p.id' }]).limit(pageSize)) as Record<string, unknown>[];
    for (const r of page) {
      const row: ReportedPayoutRow = {
        ...fromColumns(r),
        fileName: r.report_file_name as string,
        batchPrunedAt: numberOrNull(r.report_pruned_at),
        batchPruneStartedAt: numberOrNull(r.report_prune_started_at),
      };
      for (const f of WRITTEN_MONEY_FIELDS) row[f] = r[shownAs(f)] as string | null;
      // A batch whose pruning began may keep some rows' details: none is shown, as one rule holds for all its rows.
      if (row.batchPruneStartedAt !== null || row.batchPrunedAt !== null) for (const f of PRUNED_DETAILS) row[f] = null;
      yield row;
    }
    const last = page[page.length - 1];
    if (page.length < pageSize || !last) return;
    after = { at: Number(last.created_at_ms), id: Number(last.id) };
  }
}

/** The CANCELLED rows of a batch in line order, read in pages. */
export async function* cancelledRowsOfBatch(db: Database, batchId: string, pageSize = DEFAULT_REPORT_PAGE_SIZE): AsyncGenerator<PayoutRow> {
  const cancelled = () => db('payouts').where({ batch_id: batchId, state: 'CANCELLED' });
  for await (const page of pagesByLine<Record<string, unknown> & { line: number }>(cancelled, pageSize)) yield* page.map(fromColumns);
}

export async function countCancelledRows(db: Database, batchId: string): Promise<number> {
  const r = (await db('payouts').where({ batch_id: batchId, state: 'CANCELLED' }).count({ n: '*' }).first()) as
    { n: number | string } | undefined;
  return Number(r?.n ?? 0);
}

/** Lookups per statement: far below SQLite's variable limit. */
const LOOKUP_CHUNK = 500;

function chunksOf(references: readonly string[]): string[][] {
  const unique = [...new Set(references)];
  return Array.from({ length: Math.ceil(unique.length / LOOKUP_CHUNK) }, (_, i) => unique.slice(i * LOOKUP_CHUNK, (i + 1) * LOOKUP_CHUNK));
}

function pushTo<T>(map: Map<string, T[]>, key: string, value: T): void {
  const values = map.get(key);
  if (values) values.push(value);
  else map.set(key, [value]);
}

/** A row using a retry round, with its batch: what the retry planner reads (src/domain/retry-reference.ts) and the advice names. */
export interface RoundRow extends RoundUse, ServiceSaid {
  merchant_reference_id: string;
  payout_id: string | null;
  line: number;
  batch_id: string;
  file_name: string;
  batch_state: string;
}

/** For each of `references` that any row uses, those rows (one sent, others DUPLICATE or INVALID). */
function roundsUsing(db: Database, references: readonly string[]): Promise<Map<string, RoundRow[]>> {
  return roundRowsBy(db, 'merchant_reference_id', references);
}

/** For each of `keys` (a base's retry_key), the rows of every round of the bases sharing it. */
function roundsOfKeys(db: Database, keys: readonly string[]): Promise<Map<string, RoundRow[]>> {
  return roundRowsBy(db, 'retry_key', keys);
}

async function roundRowsBy(
  db: Database,
  column: 'merchant_reference_id' | 'retry_key',
  values: readonly string[],
): Promise<Map<string, RoundRow[]>> {
  const out = new Map<string, RoundRow[]>();
  for (const chunk of chunksOf(values)) {
    const rows = (await db('payouts as r')
      .join('batches as rb', 'rb.id', 'r.batch_id')
      .whereIn(`r.${column}`, chunk)
      .select('r.merchant_reference_id', 'r.state', 'r.payout_id', 'r.service_check', 'r.service_note', 'r.reason_code', 'r.line')
      .select(`r.${column} as by_value`, 'r.batch_id', 'rb.file_name', 'rb.state as batch_state')) as (Omit<RoundRow, 'contradicted'> & {
      by_value: string;
    })[];
    for (const { by_value, ...r } of rows) pushTo(out, by_value, { ...r, contradicted: serviceContradicts(r) });
  }
  return out;
}

/**
 * The rows holding each of `references` (a retry row's originals) as the leading-zeros check reads them: the stored
 * request, or what retention kept of it. A row without a request is left out (an invalid row, or one retention
 * found without zeros to keep), but a CANCELLED row a retry file names, whose request an older payoutd's retention
 * removed keeping nothing, is listed as removed: it cannot be compared.
 */
export async function retryOriginalsOf(db: Database, references: readonly string[]): Promise<Map<string, StoredOriginal[]>> {
  const out = new Map<string, StoredOriginal[]>();
  for (const chunk of chunksOf(references)) {
    const rows = (await db('payouts as p')
      .join('batches as b', 'b.id', 'p.batch_id')
      .whereIn('p.merchant_reference_id', chunk)
      .select('p.merchant_reference_id', 'p.state', 'p.request_values', 'p.zero_padding', 'b.id as batch_id', 'b.file_name')
      .select('b.prune_started_at', 'b.pruned_at', 'b.prune_keeps_zeros')) as {
      merchant_reference_id: string;
      state: string;
      request_values: string | null;
      zero_padding: string | null;
      batch_id: string;
      file_name: string;
      prune_started_at: number | string | null;
      pruned_at: number | string | null;
      prune_keeps_zeros: boolean | number;
    }[];
    for (const r of rows) {
      const found: StoredOriginal | null =
        r.request_values !== null
          ? { values: r.request_values }
          : r.zero_padding !== null
            ? { kept: r.zero_padding }
            : // pruned_at alone: pruned before prune_started_at was recorded (0029), by a payoutd that kept nothing.
              (r.prune_started_at !== null || r.pruned_at !== null) && !r.prune_keeps_zeros && r.state === 'CANCELLED'
              ? { removed: { batchId: r.batch_id, file: r.file_name } }
              : null;
      if (found) pushTo(out, r.merchant_reference_id, found);
    }
  }
  return out;
}

/** What a retry file of one batch reads (the `RetrySource` of src/report/retry.ts). */
export function batchRetrySource(
  db: Database,
  batchId: string,
): {
  cancelledRows: () => AsyncGenerator<PayoutRow>;
} & RoundLookup<RoundRow> {
  return { cancelledRows: () => cancelledRowsOfBatch(db, batchId), ...roundLookup(db) };
}

/** What the retry planner reads (src/domain/retry-reference.ts), from `db` or a transaction. */
export function roundLookup(db: Database): RoundLookup<RoundRow> {
  return { roundsUsing: (references) => roundsUsing(db, references), roundsOfKeys: (keys) => roundsOfKeys(db, keys) };
}

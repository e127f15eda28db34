/** The rows of a batch as its result and interim files show them, read out of the stored request in SQL, a page at a time. */
import type { Knex } from 'knex';
import { isPostgres, type Database } from './db.js';
import { COLUMNS, pagesByLine, type PayoutRow } from './payouts.js';
import { requestFieldAt, shownMoneyAs } from './request-fields.js';

/** A row as the result and interim files show it (src/daemon/outbox.ts). */
export type BatchResultRow = Pick<
  PayoutRow,
  | 'id'
  | 'line'
  | 'merchantReferenceId'
  | 'state'
  | 'payoutCurrency'
  | 'payoutAmount'
  | 'deductionCurrency'
  | 'payoutId'
  | 'rate'
  | 'deductionAmount'
  | 'totalFee'
  | 'feeCurrency'
  | 'completeTime'
  | 'reasonCode'
  | 'reason'
  | 'serviceNote'
  | 'serviceNoteShown'
  | 'serviceNoteSuperseded'
  | 'serviceNoteCorrected'
> & {
  /** Null when the row has no request (an invalid row). */
  beneficiaryAccountName: string | null;
  beneficiaryAccountNumber: string | null;
};

function resultSelection(db: Database): (string | Knex.Raw)[] {
  const as = (value: Knex.Raw, field: keyof BatchResultRow): Knex.Raw => db.raw('? as ??', [value, field]);
  return [
    'id',
    'line',
    'state',
    'rate',
    'reason',
    ...(
      [
        'merchantReferenceId',
        'payoutId',
        'deductionAmount',
        'totalFee',
        'feeCurrency',
        'completeTime',
        'reasonCode',
        'serviceNote',
        'serviceNoteShown',
        'serviceNoteSuperseded',
        'serviceNoteCorrected',
      ] as const
    ).map((field) => `${COLUMNS[field]} as ${field}`),
    ...(['payoutCurrency', 'payoutAmount', 'deductionCurrency'] as const).map((field) => shownMoneyAs(db, field, field)),
    as(requestFieldAt(db, 'beneficiary.accountName'), 'beneficiaryAccountName'),
    as(requestFieldAt(db, 'beneficiary.accountNumber'), 'beneficiaryAccountNumber'),
  ];
}

/** All rows of a batch in line order, a page at a time, with only what the files show. */
export function resultRowPages(db: Database, batchId: string, pageSize = 5000): AsyncGenerator<BatchResultRow[]> {
  const columns = resultSelection(db);
  return pagesByLine<BatchResultRow>(() => db('payouts').where({ batch_id: batchId }).select(columns), pageSize);
}

/** LIKE's wildcards and its escape character taken literally. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

const ASCII_UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** `text` with its ASCII letters in lower case, every other character as it is. */
function asciiLower(text: string): string {
  return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/**
 * SQL of the reference with its ASCII letters in lower case, as asciiLower gives it: a search ignores their case
 * alike on both engines. SQLite's lower() folds only those; PostgreSQL's folds every letter of its locale.
 */
function referenceFolded(db: Database): string {
  return isPostgres(db)
    ? `translate(merchant_reference_id, '${ASCII_UPPER}', '${ASCII_UPPER.toLowerCase()}')`
    : 'lower(merchant_reference_id)';
}

/**
 * One page of a batch's rows in line order, as the result files show them, optionally only those whose
 * reference contains `reference` (ASCII letters in either case); and how many match in all.
 */
export async function resultRowsPage(
  db: Database,
  batchId: string,
  options: { reference?: string; offset: number; limit: number },
): Promise<{ rows: BatchResultRow[]; total: number }> {
  const where = (q: Knex.QueryBuilder): Knex.QueryBuilder => {
    q.where({ batch_id: batchId });
    if (options.reference) q.andWhereRaw(`${referenceFolded(db)} like ? escape '\\'`, [`%${likeLiteral(asciiLower(options.reference))}%`]);
    return q;
  };
  const rows = (await where(db('payouts'))
    .orderBy('line')
    .offset(options.offset)
    .limit(options.limit)
    .select(resultSelection(db))) as BatchResultRow[];
  const counted = (await where(db('payouts')).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return { rows, total: Number(counted?.n ?? 0) };
}

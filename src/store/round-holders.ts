/**
 * Which bases of retry rounds are known as payouts and held by a row that was or may be sent and not cancelled, or
 * that the payout service contradicts: the judgement the acceptance refuses a round by (src/store/acceptance.ts)
 * and the retry planner skips a cancelled row by (src/domain/retry-reference.ts), one query so they cannot differ.
 */
import type { Knex } from 'knex';
import { BEING_READ_BATCH_STATES, REFERENCE_HOLDING_STATES } from '../domain/lifecycle.js';
import { HASHED_SUFFIX_LENGTH, RETRY_BLOCKING_STATES, type RetryRound } from '../domain/retry-reference.js';
import type { Database } from './db.js';
import { whereServiceContradicts } from './service-checks.js';

const HOLDING = REFERENCE_HOLDING_STATES as string[];
/** Valid rows of a batch being accepted: holding their reference (READY) or waiting for the decision (VALIDATED). */
export const VALID = ['READY', 'VALIDATED'];

/** The states of a row holding the base of a retry round (src/domain/retry-reference.ts). */
export const BLOCKING = [...RETRY_BLOCKING_STATES];
/** Of those, a row sent or to be sent and not paid yet. */
const PAYING = BLOCKING.filter((s) => s !== 'PAID');
/**
 * States of a row that held a payout and holds a base only while the payout service contradicts it, is being asked
 * about it (src/poll/checks.ts) or holds a payout under its reference (REFERENCE_TAKEN, recorded REJECTED): its
 * payout may have been paid all the same.
 */
const CONTRADICTABLE = HOLDING.filter((s) => !RETRY_BLOCKING_STATES.has(s));
const BEING_READ = [...BEING_READ_BATCH_STATES];

/** Narrows a query of payouts `h` to rows of CONTRADICTABLE states that the service contradicts (serviceContradicts). */
export function contradicted(q: Knex.QueryBuilder, h: string): Knex.QueryBuilder {
  return whereServiceContradicts(q.whereIn(`${h}.state`, CONTRADICTABLE), h);
}

/**
 * A base of retry rounds as spelled, with the ids of a row making it known (null: not known), of the most telling
 * row of another batch holding it, and of a valid row of the batch judged whose reference is the base itself.
 */
export interface RoundBase {
  retry_key: string;
  retry_base: string;
  known_id: number | string | null;
  holder_id: number | string | null;
  own_base_id: number | string | null;
}

/** SQL: the start the base of round row `row` keeps in its hashed spelling (`<start>-H<its key>`), else the whole base. */
function startSql(row: string): string {
  const base = `${row}.retry_base`;
  const hashed = `substr(${base}, length(${base}) - ${HASHED_SUFFIX_LENGTH - 1}) = '-H' || ${row}.retry_key`;
  return `case when ${hashed} then substr(${base}, 1, length(${base}) - ${HASHED_SUFFIX_LENGTH}) else ${base} end`;
}

/**
 * SQL: sameRetryBase of a round row `h` and a base `k` of the same key whose start is `k.start`, so that a probe
 * stops at its first row of that base: the same text, or either start beginning the other.
 */
function sameBaseSql(h: string, k: string): string {
  const start = startSql(h);
  return `(${h}.retry_base = ${k}.retry_base or substr(${start}, 1, length(${k}.start)) = substr(${k}.start, 1, length(${start})))`;
}

/**
 * The judgement of `bases` (one row each, so that a file of rounds of one base costs each probe once) for rounds
 * of batch `batchId`, or of a batch not stored yet (null: a retry file's). A base is known as a payout of its own when a row has it as
 * its reference (any state, any batch) or, for a hashed spelling whose original text is not known, a round of it
 * is in another batch: rows merely sharing a prefix in one file (finance's `RUN-R1`, `RUN-R2`, …) are payouts
 * of their own. Each probe is an index search that stops at its first row: several probes, most telling first
 * (paid, being paid or contradicted by the payout service, in a file being read), name a holder without reading
 * every row of the base.
 */
export async function roundBases(trx: Database, bases: BaseSource, batchId: string | null): Promise<RoundBase[]> {
  const probe = (k: string, of: 'base' | 'round', where: (q: Knex.QueryBuilder) => unknown): Knex.QueryBuilder => {
    const q = trx('payouts as h').select('h.id');
    if (of === 'base') q.whereRaw(`h.merchant_reference_id = ${k}.retry_base`);
    else q.whereRaw(`h.retry_key = ${k}.retry_key and ${sameBaseSql('h', k)}`);
    where(q);
    return q.limit(1);
  };
  const notOwn = (q: Knex.QueryBuilder): Knex.QueryBuilder => (batchId === null ? q : q.whereNot('h.batch_id', batchId));
  const otherBatch = (q: Knex.QueryBuilder, states: readonly string[]): Knex.QueryBuilder =>
    notOwn(q.join('batches as hb', 'hb.id', 'h.batch_id')).whereIn('h.state', [...states]);
  const ranks: ((q: Knex.QueryBuilder) => unknown)[] = [
    (q) => q.where('h.state', 'PAID'),
    (q) => otherBatch(q, PAYING).whereNotIn('hb.state', BEING_READ),
    // Ranked with the rows being paid: either may have paid the base, and neither outcome is known yet.
    (q) => contradicted(q, 'h'),
    (q) => otherBatch(q, BLOCKING).whereIn('hb.state', BEING_READ),
  ];
  const holders = ranks.flatMap((rank) => [probe('k', 'base', rank), probe('k', 'round', rank)]);
  // The batch concatenated: as an index column beside the reference, a planner may walk a large file's rows instead.
  const ownBase =
    batchId === null ? null : probe('k', 'base', (q) => q.whereRaw(`h.batch_id || '' = ?`, [batchId]).whereIn('h.state', VALID));
  const spelled = trx.from('bases as b').select('b.retry_key', 'b.retry_base', trx.raw(`${startSql('b')} as start`));
  const known = trx
    .from('spelled as s')
    .select(
      's.retry_key',
      's.retry_base',
      's.start',
      trx.raw('coalesce(?, case when s.start <> s.retry_base then ? end) as known_id', [
        probe('s', 'base', () => undefined),
        probe('s', 'round', notOwn),
      ]),
    );
  return (await trx
    .withMaterialized('bases', bases)
    .withMaterialized('spelled', spelled)
    .withMaterialized('known', known)
    .from('known as k')
    .select(
      'k.retry_key',
      'k.retry_base',
      'k.known_id',
      trx.raw(`case when k.known_id is null then null else coalesce(${holders.map(() => '?').join(', ')}) end as holder_id`, holders),
      ownBase === null
        ? trx.raw('null as own_base_id')
        : trx.raw('case when k.known_id is null then null else ? end as own_base_id', [ownBase]),
    )) as RoundBase[];
}

/** The bases judged: a query selecting `retry_key` and `retry_base`, one row each. */
type BaseSource = Knex.QueryBuilder | Knex.Raw;

/** The bases of the batch's valid retry rounds, as the acceptance judges them. */
export function batchRoundBases(trx: Database, batchId: string): Knex.QueryBuilder {
  return trx('payouts').distinct('retry_key', 'retry_base').where({ batch_id: batchId }).whereNotNull('retry_key').whereIn('state', VALID);
}

/** `rounds` as a source of bases (each base once); none: null. */
export function roundsAsBases(trx: Database, rounds: readonly RetryRound[]): Knex.Raw | null {
  const unique = [...new Map(rounds.map((r) => [`${r.key} ${r.base}`, r])).values()];
  if (unique.length === 0) return null;
  // SQLite and PostgreSQL both name the columns of a VALUES list column1, column2.
  const values = unique.map(() => '(?, ?)').join(', ');
  return trx.raw(
    `select column1 as retry_key, column2 as retry_base from (values ${values}) as v`,
    unique.flatMap((r) => [r.key, r.base]),
  );
}

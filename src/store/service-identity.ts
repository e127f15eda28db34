/**
 * The payout service this database's payouts are made with (migration 0033): recorded at the first start,
 * compared at every start (src/daemon/service-identity.ts), and replaced only by `payoutd migrate
 * --accept-service-change`. A database without one whose payouts a service made (one made before 0033) records
 * the configured service only once that service has found some of them. Never a secret: the base URL without credentials or query.
 */
import { ON_SERVICE_STATES, type OnServiceRow, type OnServiceState } from '../domain/service-change.js';
import type { Database } from './db.js';

export interface ServiceIdentity {
  /** "embedded", or the base URL as shownUrl shows it. */
  service: string;
  merchantCode: string | null;
}

export interface RecordedServiceIdentity extends ServiceIdentity {
  recordedAt: number;
}

/** The table's one row: a database has one payout service at a time. */
const ROW_ID = 1;

export async function recordedServiceIdentity(db: Database): Promise<RecordedServiceIdentity | null> {
  const row = (await db('service_identity').where({ id: ROW_ID }).first()) as Record<string, unknown> | undefined;
  if (row === undefined) return null;
  return {
    service: row.service as string,
    merchantCode: (row.merchant_code as string | null) ?? null,
    recordedAt: Number(row.recorded_at),
  };
}

/** Records `identity` unless one is recorded already (another instance may have been first); returns the one recorded. */
export async function recordServiceIdentity(db: Database, identity: ServiceIdentity, now: number): Promise<RecordedServiceIdentity> {
  await db('service_identity')
    .insert({ id: ROW_ID, service: identity.service, merchant_code: identity.merchantCode, recorded_at: now })
    .onConflict('id')
    .ignore();
  return (await recordedServiceIdentity(db)) as RecordedServiceIdentity;
}

/** Puts `identity` in place of the recorded one. */
export async function replaceServiceIdentity(db: Database, identity: ServiceIdentity, now: number): Promise<void> {
  await db('service_identity')
    .insert({ id: ROW_ID, service: identity.service, merchant_code: identity.merchantCode, recorded_at: now })
    .onConflict('id')
    .merge(['service', 'merchant_code', 'recorded_at']);
}

/** What the database holds that a service made: batches at all, and payouts sent there and not yet final. */
export async function serviceHistory(db: Database): Promise<{ batches: number; openPayouts: number }> {
  const batches = (await db('batches').count({ n: '*' }).first()) as { n: number | string } | undefined;
  const open = (await db('payouts').whereIn('state', ON_SERVICE_STATES).count({ n: '*' }).first()) as { n: number | string } | undefined;
  return { batches: Number(batches?.n ?? 0), openPayouts: Number(open?.n ?? 0) };
}

/**
 * The rows only the recorded service can settle (src/domain/service-change.ts): how many in each state, the
 * first `limit` of them by batch and line, and how many rows are READY (sent to whichever service is recorded).
 */
export async function payoutsOnService(
  db: Database,
  limit: number,
): Promise<{ counts: Record<OnServiceState, number>; listed: OnServiceRow[]; notSent: number }> {
  const byState = (await db('payouts')
    .whereIn('state', [...ON_SERVICE_STATES, 'READY'])
    .groupBy('state')
    .select('state')
    .count({ n: '*' })) as { state: string; n: number | string }[];
  const count = (state: string): number => Number(byState.find((r) => r.state === state)?.n ?? 0);
  const counts = Object.fromEntries(ON_SERVICE_STATES.map((s) => [s, count(s)])) as Record<OnServiceState, number>;
  const listed = (await db('payouts as p')
    .join('batches as b', 'b.id', 'p.batch_id')
    .whereIn('p.state', ON_SERVICE_STATES)
    .orderBy([{ column: 'p.batch_id' }, { column: 'p.line' }])
    .limit(limit)
    .select('p.batch_id', 'b.file_name', 'p.line', 'p.state')) as {
    batch_id: string;
    file_name: string;
    line: number;
    state: OnServiceState;
  }[];
  return {
    counts,
    listed: listed.map((r) => ({ batchId: r.batch_id, fileName: r.file_name, line: Number(r.line), state: r.state })),
    notSent: count('READY'),
  };
}

/**
 * A database's payouts that a service made (those with a payout id), and a few of them to ask that service about:
 * the newest not final yet, else the newest final ones (those are what a service most surely still knows).
 */
export async function payoutsToVerify(db: Database, limit: number): Promise<{ made: number; sample: string[] }> {
  const made = (await db('payouts').whereNotNull('payout_id').count({ n: '*' }).first()) as { n: number | string } | undefined;
  if (Number(made?.n ?? 0) === 0) return { made: 0, sample: [] };
  const newest = (states: string[] | null): Promise<{ payout_id: string }[]> => {
    const q = db('payouts').whereNotNull('payout_id');
    if (states) q.whereIn('state', states);
    return q.orderBy('id', 'desc').limit(limit).select('payout_id') as Promise<{ payout_id: string }[]>;
  };
  let rows = await newest(['CREATING', 'UNKNOWN', 'PENDING']);
  if (rows.length === 0) rows = await newest(null);
  return { made: Number(made?.n ?? 0), sample: rows.map((r) => r.payout_id) };
}
